// Package billing is the reference URL-mode flow of elicitd: the tool
// connect_billing needs the user's payment-provider API key, and asks for
// it the safe way (client/elicitation.mdx §URL Mode; docs/flows.md §connect_billing).
//
// The key is typed on the server's own page (package connect), never
// crosses the MCP connection, and never comes back in a result
// (ELI-S-01, ELI-S-02, SEC-U-S-08). The retry decides from the sealed
// requestState (which flow) and the store (is it complete) what to answer
// (ELI-U-S-03): accept with the page unfinished stays input_required,
// decline and cancel end with distinct isError results, and are final
// (connect.Step does all of it).
package billing

import (
	"context"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
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
	textSignIn             = "Sign-in is required to connect billing."
	messageAsk             = "Connect your payment provider: open this page on the server, sign in, and enter your API key there. The key never passes through this client."
	messagePending         = "The key page has not been completed yet. Open it, enter your API key, then accept again."
)

// App serves connect_billing.
type App struct {
	flows *connect.Service
	step  *connect.Step
}

// New returns the app; flows stores the flows and the encrypted keys.
func New(flows *connect.Service) *App {
	return &App{flows: flows, step: &connect.Step{Flows: flows, InputKey: InputKey, Purpose: Purpose, Texts: connect.StepTexts{
		SignIn: textSignIn, Connected: TextConnected, AlreadyConnected: TextAlreadyConnected,
		Declined: TextDeclined, Cancelled: TextCancelled, DeclinedKept: TextDeclinedKept, CancelledKept: TextCancelledKept,
		Ask: messageAsk, Pending: messagePending,
	}}}
}

// WithWait sets how long an accept that came before the key page was
// finished is held open (connect.Step.Wait: 0 means connect.DefaultWait,
// negative no wait), and returns a. Call it before Register.
func (a *App) WithWait(d time.Duration) *App {
	a.step.Wait = d
	return a
}

// Register adds connect_billing and billing_status to s.
func (a *App) Register(s *mcpserver.Server) {
	a.step.Register(s, &mcp.Tool{
		Name:        ToolName,
		Title:       "Connect billing",
		Description: "Connect the user's payment-provider account. The user enters the API key on the server's own web page (URL-mode elicitation); the key never passes through the client.",
	})
	readOnly := true
	s.AddTool(&mcp.Tool{
		Name:        StatusToolName,
		Title:       "Billing status",
		Description: "Tell whether the user's payment-provider account is connected. Never reveals the key.",
		InputSchema: connect.NoArgumentsSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &readOnly},
	}, a.billingStatus)
}

func (a *App) billingStatus(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := connect.NoArguments(req); err != nil {
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
