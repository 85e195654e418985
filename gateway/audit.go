package gateway

import (
	"context"
	"encoding/hex"
	"time"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/jsonrpc"
)

// Record is one round of a user's call through the gateway: what an
// audit log keeps. It carries no arguments, answers, results, tokens or
// states. Call is the id the upstream saw in the request's _meta
// (MetaCall), so the upstream's own records of the call can be joined
// with the gateway's.
type Record struct {
	// Time is when the round began; Latency how long it took.
	Time    time.Time
	Latency time.Duration
	// Principal is the authenticated user ("" without authentication).
	Principal string
	// Call is the gateway's id of the call, 32 hex characters, the same on
	// every round; "" when the round was refused before one was known.
	Call string
	// Round is 0 on a first call, n on the retry after the n-th interim
	// result.
	Round int
	// Method is tools/call, prompts/get or resources/read; Name the tool
	// or prompt as the client named it, or the resource URI (cut at 128
	// bytes).
	Method, Name string
	// Upstream is the upstream's name in the gateway's configuration,
	// UpstreamName its own name for the target; both "" when no upstream
	// was found.
	Upstream, UpstreamName string
	// ClientRevision is the protocol revision of the client's side
	// (2026-07-28, or the 2025-era version of its session);
	// UpstreamRevision the one spoken with the upstream.
	ClientRevision, UpstreamRevision string
	// Outcome is complete, input_required, error, invalid_state (the
	// gateway refused the requestState) or forwarded (the retry went to
	// the instance that holds the call, which records it too).
	Outcome string
	// Asked names what an input_required round asks:
	// "elicitation/create:form", "elicitation/create:url",
	// "sampling/createMessage", "roots/list".
	Asked []string
	// Code is the JSON-RPC error code of an error round.
	Code int
}

// Outcomes of a Record.
const (
	OutcomeComplete      = "complete"
	OutcomeInputRequired = "input_required"
	OutcomeError         = "error"
	OutcomeInvalidState  = "invalid_state"
	OutcomeForwarded     = "forwarded"
)

func (g *Gateway) audit(ctx context.Context, r *request, rd *round, jerr *jsonrpc.Error) {
	if g.opts.Audit == nil {
		return
	}
	rec := &Record{Time: rd.start, Latency: g.now().Sub(rd.start), Principal: r.principal, Round: int(rd.n),
		Method: r.method, Name: clipRunes(r.name, 128), ClientRevision: r.revision, Asked: rd.asked}
	if rd.hasClaim {
		rec.Call = hex.EncodeToString(rd.call[:])
	}
	if rd.up != nil {
		rec.Upstream, rec.UpstreamName, rec.UpstreamRevision = rd.up.cfg.Name, clipRunes(rd.target, 128), rd.up.revision()
	}
	switch {
	case rd.refused != "":
		rec.Outcome, rec.Code = OutcomeInvalidState, jsonrpc.CodeInvalidParams
	case rd.peer:
		rec.Outcome = OutcomeForwarded
		if jerr != nil {
			rec.Code = jerr.Code
		}
	case jerr != nil:
		rec.Outcome, rec.Code, rec.Asked = OutcomeError, jerr.Code, nil
	case rd.asked != nil:
		rec.Outcome = OutcomeInputRequired
	default:
		rec.Outcome = OutcomeComplete
	}
	defer func() {
		if p := recover(); p != nil {
			g.log.Error("gateway: audit hook panicked", "panic", p)
		}
	}()
	g.opts.Audit(ctx, rec)
}

// clipRunes cuts s at n bytes on a rune boundary.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
