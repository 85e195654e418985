package mcpserver

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/reqstate"
)

// reportFault reports to Options.Observer a round that ended with the
// JSON-RPC error code outside Serve, so it is audited and counted like the
// rounds Serve reports: a bridge that sends the input requests to its
// client itself (package legacy) and whose client answered one with an
// error, or that gave up after too many rounds. in is the request the
// bridge would have served next, as transport.Parse returns it; when it carries the
// operation's requestState, the record gets that operation's id and round
// (the state is opened for that only; an unusable state gives none). The
// outcome is OutcomeFault (OutcomeCapabilityMissing for -32021). Nothing
// happens without an Observer.
func (s *Server) reportFault(ctx context.Context, in *transport.Incoming, principal string, code int) {
	if s.opts.Observer == nil || in == nil {
		return
	}
	ri := &roundInfo{start: time.Now(), round: -1}
	if in.RequestState != nil {
		if digest, err := reqstate.DigestArguments(in.Arguments); err == nil {
			b := reqstate.Binding{Principal: principal, Method: in.Method, Name: in.Name, ArgsDigest: digest}
			if claims, err := s.sealer.Open(*in.RequestState, b); err == nil {
				ri.opID, ri.round = hex.EncodeToString(claims.OperationID[:]), int(claims.Round)
			}
		}
	}
	s.observe(ctx, in, principal, ri, &jsonrpc.Response{ID: in.ID, Error: &jsonrpc.Error{Code: code}})
}
