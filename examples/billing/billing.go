// Package billing is the reference URL-mode flow of elicitd: the tool
// connect_billing needs the user's payment-provider API key, and asks for
// it the safe way (client/elicitation.mdx §URL Mode; seed 000).
//
// The key is typed on the server's own page (package connect), never
// crosses the MCP connection, and never comes back in a result
// (ELI-S-01, ELI-S-02, SEC-U-S-08). The retry decides from the sealed
// requestState (which flow) and the store (is it complete) what to answer
// (ELI-U-S-03): accept with the page unfinished stays input_required,
// decline and cancel end with distinct isError results.
package billing

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

// Names used on the wire.
const (
	ToolName       = "connect_billing" // the tool that asks for the key
	StatusToolName = "billing_status"  // read-only: is billing connected?
	InputKey       = "billing_key"     // the inputRequests key of the URL elicitation
	Purpose        = "billing_key"     // the connect flow purpose and secret name
)

// Result texts. Decline and cancel differ on purpose (ELI-S-08).
const (
	TextConnected          = "Your billing account is connected. The API key is stored on the server and is never shown here."
	TextAlreadyConnected   = "Your billing account is already connected."
	TextDeclined           = "Billing was not connected: you declined to provide an API key. Nothing was stored."
	TextCancelled          = "The billing connection step was dismissed before it finished. Nothing was stored; call connect_billing again to restart it."
	TextDeclinedKept       = "You declined in your client, but the API key you had already entered on the server's page is kept: billing is connected."
	TextCancelledKept      = "The step was dismissed in your client, but the API key you had already entered on the server's page is kept: billing is connected."
	TextStatusConnected    = "Billing is connected."
	TextStatusNotConnected = "Billing is not connected. Call connect_billing to connect it."
	messageAsk             = "Connect your payment provider: open this page on the server, sign in, and enter your API key there. The key never passes through this client."
	messagePending         = "The key page has not been completed yet. Open it, enter your API key, then accept again."
)

// App serves connect_billing.
type App struct{ flows *connect.Service }

// New returns the app; flows stores the flows and the encrypted keys.
func New(flows *connect.Service) *App { return &App{flows: flows} }

// Register adds connect_billing to s.
func (a *App) Register(s *mcpserver.Server) {
	s.AddTool(&mcp.Tool{
		Name:        ToolName,
		Title:       "Connect billing",
		Description: "Connect the user's payment-provider account. The user enters the API key on the server's own web page (URL-mode elicitation); the key never passes through the client.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}, a.connectBilling)
	readOnly := true
	s.AddTool(&mcp.Tool{
		Name:        StatusToolName,
		Title:       "Billing status",
		Description: "Tell whether the user's payment-provider account is connected. Never reveals the key.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &readOnly},
	}, a.billingStatus)
}

func (a *App) billingStatus(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := noArguments(req); err != nil {
		return nil, err
	}
	if req.Principal == "" {
		return mcpserver.ToolError("Sign-in is required."), nil
	}
	connected, err := a.flows.HasSecret(ctx, req.Principal, Purpose)
	if err != nil {
		return nil, err
	}
	if connected {
		return mcpserver.Text(TextStatusConnected), nil
	}
	return mcpserver.Text(TextStatusNotConnected), nil
}

func (a *App) connectBilling(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := noArguments(req); err != nil {
		return nil, err
	}
	if req.Principal == "" {
		return mcpserver.ToolError("Sign-in is required to connect billing."), nil
	}
	if req.State == nil {
		connected, err := a.flows.HasSecret(ctx, req.Principal, Purpose)
		if err != nil {
			return nil, err
		}
		if connected {
			return mcpserver.Text(TextAlreadyConnected), nil
		}
		// Refuse before creating anything the client cannot use (CAP-S-03).
		if err := req.Require(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}); err != nil {
			return nil, err
		}
		return a.startFlow(ctx, req)
	}

	flowID := string(req.State)
	flow, err := a.flows.Flow(ctx, flowID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return a.startFlow(ctx, req) // swept after expiry: start again
	case err != nil:
		return nil, err
	case flow.Principal != req.Principal:
		// The sealed state is bound to the principal, so this means a bug.
		return nil, fmt.Errorf("billing: flow %s belongs to another principal", flowID)
	}
	switch ans := req.Elicitation(InputKey); ans.Outcome {
	case elicit.Declined:
		if flow.Status == store.FlowComplete {
			return mcpserver.ToolError(TextDeclinedKept), nil // say what is true
		}
		return mcpserver.ToolError(TextDeclined), nil
	case elicit.Cancelled:
		if flow.Status == store.FlowComplete {
			return mcpserver.ToolError(TextCancelledKept), nil
		}
		return mcpserver.ToolError(TextCancelled), nil
	case elicit.Accepted:
		// URL-mode accept is consent, not completion (ELI-RA-01).
		if flow.Status == store.FlowComplete {
			return mcpserver.Text(TextConnected), nil
		}
	}
	if flow.Status == store.FlowComplete {
		return mcpserver.Text(TextConnected), nil
	}
	if a.expired(flow) {
		return a.startFlow(ctx, req)
	}
	return a.ask(req, flow, messagePending)
}

func (a *App) expired(f *store.Flow) bool { return !a.flows.Now().Before(f.ExpiresAt) }

func (a *App) startFlow(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := req.Require(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}); err != nil {
		return nil, err
	}
	flow, err := a.flows.StartFlow(ctx, req.Principal, Purpose)
	if err != nil {
		return nil, err
	}
	return a.ask(req, flow, messageAsk)
}

func (a *App) ask(_ *mcpserver.Request, flow *store.Flow, message string) (mcpserver.Reply, error) {
	return mcpserver.Ask().ElicitURL(InputKey, message, a.flows.FlowURL(flow)).WithState([]byte(flow.ID)), nil
}

// noArguments refuses arguments: both tools declare an empty object with
// additionalProperties false.
func noArguments(req *mcpserver.Request) error {
	var args map[string]json.RawMessage
	if err := req.BindArguments(&args); err != nil {
		return err
	}
	if len(args) > 0 {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s takes no arguments", req.Name)
	}
	return nil
}
