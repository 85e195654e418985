// Package urlconnect is the "connect an account" tool shared by the
// examples: it asks in URL mode for a connect flow (package connect) and
// decides on each retry, from the sealed requestState (which flow) and the
// store (is it complete), what to answer (client/elicitation.mdx §URL
// Mode; ELI-U-S-03):
//
//   - already connected on a first call: says so, asks nothing;
//   - accept with the flow unfinished: input_required again, same URL (in
//     URL mode accept is consent, not completion, ELI-RA-01);
//   - accept with the flow finished: connected;
//   - decline and cancel: distinct isError results (ELI-S-08), which say
//     so when the flow was finished anyway;
//   - a flow swept or expired: a new one.
//
// Whether the flow collects a key on the server's page (billing) or runs
// a third-party OAuth authorization (calendar) is connect's business: the
// tool only sees the flow URL and the flow's status.
package urlconnect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// Texts are the results and elicitation messages of one Step. Every field
// is required; Declined and Cancelled must differ.
type Texts struct {
	SignIn           string // no authenticated user
	Connected        string // accepted and the flow is complete
	AlreadyConnected string // first call, nothing to ask
	Declined         string // declined, flow unfinished: nothing stored
	Cancelled        string // cancelled, flow unfinished: may restart
	DeclinedKept     string // declined, but the flow was completed
	CancelledKept    string // cancelled, but the flow was completed
	Ask              string // message of a new URL elicitation
	Pending          string // message when accept came before completion
}

// Step serves one connect tool. The zero value is not usable; fill every
// field.
type Step struct {
	// Flows runs the flows and holds the vault.
	Flows *connect.Service
	// InputKey is the inputRequests key of the URL elicitation.
	InputKey string
	// Purpose is the connect flow purpose and vault secret name.
	Purpose string
	// Texts are what the user reads.
	Texts Texts
	// Connected, if set, tells whether principal is connected on a first
	// call (e.g. the stored authorization still works); nil means a
	// stored secret for Purpose exists.
	Connected func(ctx context.Context, principal string) (bool, error)
}

// urlMode is the capability the tool needs (CAP-S-03).
var urlMode = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}

// Handle is the tool handler: register it with mcpserver.Server.AddTool
// for a tool that takes no arguments.
func (s *Step) Handle(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := NoArguments(req); err != nil {
		return nil, err
	}
	if req.Principal == "" {
		return mcpserver.ToolError(s.Texts.SignIn), nil
	}
	if req.State == nil {
		connected, err := s.connected(ctx, req.Principal)
		if err != nil {
			return nil, err
		}
		if connected {
			return mcpserver.Text(s.Texts.AlreadyConnected), nil
		}
		return s.start(ctx, req)
	}

	flowID := string(req.State)
	flow, err := s.Flows.Flow(ctx, flowID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.start(ctx, req) // swept after expiry: start again
	case err != nil:
		return nil, err
	case flow.Principal != req.Principal:
		// The sealed state is bound to the principal, so this means a bug.
		return nil, fmt.Errorf("urlconnect: flow %s belongs to another principal", flowID)
	}
	complete := flow.Status == store.FlowComplete
	switch ans := req.Elicitation(s.InputKey); {
	case ans.Outcome == elicit.Declined && complete:
		return mcpserver.ToolError(s.Texts.DeclinedKept), nil // say what is true
	case ans.Outcome == elicit.Declined:
		return mcpserver.ToolError(s.Texts.Declined), nil
	case ans.Outcome == elicit.Cancelled && complete:
		return mcpserver.ToolError(s.Texts.CancelledKept), nil
	case ans.Outcome == elicit.Cancelled:
		return mcpserver.ToolError(s.Texts.Cancelled), nil
	}
	if complete {
		return mcpserver.Text(s.Texts.Connected), nil
	}
	if !s.Flows.Now().Before(flow.ExpiresAt) {
		return s.start(ctx, req)
	}
	return s.ask(flow, s.Texts.Pending), nil
}

func (s *Step) connected(ctx context.Context, principal string) (bool, error) {
	if s.Connected != nil {
		return s.Connected(ctx, principal)
	}
	return s.Flows.HasSecret(ctx, principal, s.Purpose)
}

// start refuses a client without URL mode before creating anything it
// could not use (CAP-S-03), then starts (or reuses) the user's flow.
func (s *Step) start(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := req.Require(urlMode); err != nil {
		return nil, err
	}
	flow, err := s.Flows.StartFlow(ctx, req.Principal, s.Purpose)
	if err != nil {
		return nil, err
	}
	return s.ask(flow, s.Texts.Ask), nil
}

func (s *Step) ask(flow *store.Flow, message string) mcpserver.Reply {
	return mcpserver.Ask().ElicitURL(s.InputKey, message, s.Flows.FlowURL(flow)).WithState([]byte(flow.ID))
}

// NoArguments refuses arguments, with -32602: the connect and status tools
// declare an empty object with additionalProperties false.
func NoArguments(req *mcpserver.Request) error {
	var args map[string]json.RawMessage
	if err := req.BindArguments(&args); err != nil {
		return err
	}
	if len(args) > 0 {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s takes no arguments", req.Name)
	}
	return nil
}

// NoArgumentsSchema is the inputSchema of a tool without arguments.
var NoArgumentsSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
