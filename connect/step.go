package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// DefaultWait is how long Step holds a retry whose URL-mode accept came
// before the page was finished, when Step.Wait is 0.
const DefaultWait = 30 * time.Second

// Step is the tool side of a URL-mode flow (client/elicitation.mdx §URL
// Mode; ELI-U-S-03): an MCP tool, without arguments, that connects the
// calling user's account by sending them to this Service's page, where
// they sign in and enter a secret (an API key) or approve a third party
// (an OAuthProvider). Mount the pages (Service.Handler) and register the
// tool (Register); that is all:
//
//	flows, _ := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: "https://mcp.example.com"})
//	mux.Handle("/ui/", flows.Handler())
//	step := &connect.Step{Flows: flows, Purpose: "billing_key", Name: "your billing account"}
//	step.Register(srv, &mcp.Tool{Name: "connect_billing", Description: "Connect the user's billing account."})
//	mux.Handle("/mcp", streamhttp.NewHandler(srv, &streamhttp.Options{Auth: authenticator}))
//
// What the tool answers, decided on each call from the sealed
// requestState (which flow) and the store (how it stands):
//
//   - a first call when already connected: says so, asks nothing;
//   - a first call otherwise: input_required with a URL-mode elicitation
//     of the flow's page (a client without URL mode gets -32021 before
//     anything is made, CAP-S-03);
//   - accept with the page finished: connected (Texts.Connected, or
//     ConnectedText);
//   - accept before the page is finished: accept is consent, not
//     completion (ELI-RA-01), so the step waits, holding the retry open
//     for up to Wait and keeping the response stream alive
//     (mcpserver.Request.KeepAlive: progress notifications when the
//     request carries a progressToken, SSE comments otherwise), and answers
//     as soon as the page is finished (Service.WaitFlow wakes on the
//     change, it does not poll); past Wait it answers input_required
//     again with the same link, and the client retries;
//   - decline or cancel: distinct isError results (ELI-S-08). Both are
//     final: the flow is closed (Service.CloseFlow), its page stops taking
//     input and says why, and a replay of that requestState, whatever it
//     answers, gets the same result again (a refusal is final, ELI-S-08);
//     calling the tool again starts afresh. Were the page
//     finished before the refusal arrived, the result says that what was
//     entered is kept;
//   - the third party denied access (an OAuthProvider's callback with an
//     error): the flow is closed as FlowDenied, a held retry is answered
//     at once, and it and every replay get Texts.Denied (isError);
//     calling the tool again starts afresh;
//   - once the page is finished, the first answer (accept, decline or
//     cancel) is recorded (Service.AnswerFlow) and answers every replay of
//     that requestState: one operation, one outcome.
//
// Lifetimes, one rule: the link is the flow, and lives FlowTTL
// (DefaultFlowTTL, the requestState's default life); every answer
// re-seals the state for another state life, so the state outlives the
// link it carries; and whichever runs out first, a retry is answered with
// what is true, never with an unexplained error: Register serves an
// expired state as a fresh call (mcpserver.HandlerOptions.RestartStale),
// which reports a finished flow as connected, and an expired link is
// replaced by a new one (Texts.Expired). A wait never outlasts the link.
//
// A Step needs an authenticated user: without one the flow could be
// finished by nobody. Register marks its tool so
// (mcpserver.HandlerOptions.RequirePrincipal), and serving it without
// authentication fails when the HTTP handler is built
// (streamhttp.NewHandler).
//
// Fill the fields before Register and do not change them afterwards.
type Step struct {
	// Flows runs the flows and holds the vault. Required.
	Flows *Service
	// Purpose is the flow purpose and the vault secret's name
	// (1–64 characters of [A-Za-z0-9._-]); an OAuth provider's Purpose
	// makes it a third-party authorization. Required.
	Purpose string
	// InputKey is the inputRequests key of the URL elicitation; "" means
	// Purpose.
	InputKey string
	// Name says what is connected, for the default texts, e.g. "your
	// billing account"; "" means Purpose.
	Name string
	// Texts are what the user reads; an empty field gets a default built
	// from Name (DefaultTexts).
	Texts StepTexts
	// Wait bounds how long a retry that accepted before the page was
	// finished is held open, waiting for the page; 0 means DefaultWait,
	// negative means no wait (input_required again at once, for each
	// such retry). Keep it below the timeouts of the clients and proxies
	// in between (the TypeScript SDK's default request timeout is 60 s),
	// and below the HTTP server's WriteTimeout.
	Wait time.Duration
	// Connected, if set, tells whether principal is connected on a first
	// call (the stored authorization still works, say); nil means that a
	// stored secret for Purpose exists.
	Connected func(ctx context.Context, principal string) (bool, error)
	// ConnectedText, if set, gives the result text once the flow is
	// finished, in place of Texts.Connected: e.g. naming the account the
	// third party connected. An error there is the handler's error.
	ConnectedText func(ctx context.Context, principal string) (string, error)
}

// StepTexts are the results and elicitation messages of a Step. Declined
// and Cancelled must differ (ELI-S-08).
type StepTexts struct {
	SignIn           string // no authenticated user
	Connected        string // the flow is finished
	AlreadyConnected string // first call, nothing to ask
	Declined         string // declined before the page was finished: nothing stored
	Cancelled        string // cancelled before the page was finished: may restart
	DeclinedKept     string // declined, but the page had been finished
	CancelledKept    string // cancelled, but the page had been finished
	Ask              string // message of a new URL elicitation
	Pending          string // message when accept came before the page was finished
	Expired          string // put before Ask when a new link replaces an expired one
	Denied           string // the third party denied access (FlowDenied): nothing stored, may restart
}

// DefaultTexts returns the texts a Step uses for empty StepTexts fields:
// name says what is connected ("your billing account"), tool is the
// tool's name (for "call … again").
func DefaultTexts(name, tool string) StepTexts {
	capName := upperFirst(name)
	return StepTexts{
		SignIn:           "Sign-in is required to connect " + name + ".",
		Connected:        capName + " is connected. What you entered is stored on the server and is never shown here.",
		AlreadyConnected: capName + " is already connected.",
		Declined:         capName + " was not connected: you declined. Nothing was stored.",
		Cancelled:        "The step to connect " + name + " was dismissed before it finished. Nothing was stored; call " + tool + " again to restart it.",
		DeclinedKept:     "You declined in your client, but what you had already entered on the server's page is kept: " + name + " is connected.",
		CancelledKept:    "The step was dismissed in your client, but what you had already entered on the server's page is kept: " + name + " is connected.",
		Ask:              "Connect " + name + ": open this page on the server, sign in, and finish there. Nothing you enter there passes through this client.",
		Pending:          "The page has not been finished yet. Open it, finish there, then accept again.",
		Expired:          "The earlier link expired; this is a new one. ",
		Denied:           "The provider denied access, so " + name + " was not connected. Nothing was stored; call " + tool + " again to try again.",
	}
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// texts fills the empty fields of s.Texts for the tool called tool.
func (s *Step) texts(tool string) StepTexts {
	name := s.Name
	if name == "" {
		name = s.Purpose
	}
	t, d := s.Texts, DefaultTexts(name, tool)
	for _, f := range []struct {
		v   *string
		def string
	}{
		{&t.SignIn, d.SignIn}, {&t.Connected, d.Connected}, {&t.AlreadyConnected, d.AlreadyConnected},
		{&t.Declined, d.Declined}, {&t.Cancelled, d.Cancelled}, {&t.DeclinedKept, d.DeclinedKept},
		{&t.CancelledKept, d.CancelledKept}, {&t.Ask, d.Ask}, {&t.Pending, d.Pending}, {&t.Expired, d.Expired}, {&t.Denied, d.Denied},
	} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return t
}

func (s *Step) inputKey() string {
	if s.InputKey != "" {
		return s.InputKey
	}
	return s.Purpose
}

// NoArgumentsSchema is the inputSchema of a tool without arguments, such
// as a Step's: an empty object, nothing else allowed.
var NoArgumentsSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// NoArguments refuses, with -32602, a call that passes arguments to a
// tool declared with NoArgumentsSchema.
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

// Register adds tool to srv, served by Handle, with RestartStale (the
// lifetime rule above) and RequirePrincipal. A nil tool.InputSchema
// becomes NoArgumentsSchema. It panics, as mcpserver.Server.AddTool does
// for programming errors, when Flows is nil or Purpose is invalid.
func (s *Step) Register(srv *mcpserver.Server, tool *mcp.Tool) {
	switch {
	case s.Flows == nil:
		panic("connect: Step.Register: Flows is required")
	case !validPurpose(s.Purpose):
		panic(fmt.Sprintf("connect: Step.Register: purpose %q must be 1-64 characters of [A-Za-z0-9._-]", s.Purpose))
	}
	if tool.InputSchema == nil {
		tool.InputSchema = NoArgumentsSchema
	}
	srv.AddToolWith(tool, s.Handle, &mcpserver.HandlerOptions{RestartStale: true, RequirePrincipal: true})
}

// urlMode is the capability the step needs (CAP-S-03).
var urlMode = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}

// Handle is the tool handler (see Step). Use Register, which sets the
// handler options the lifetime rule needs.
func (s *Step) Handle(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := NoArguments(req); err != nil {
		return nil, err
	}
	t := s.texts(req.Name)
	switch {
	case req.Principal == "":
		return mcpserver.ToolError(t.SignIn), nil
	case req.State == nil:
		return s.first(ctx, req, t)
	}
	return s.retry(ctx, req, t)
}

// first answers a first call, or a stale state served as one (Restart).
func (s *Step) first(ctx context.Context, req *mcpserver.Request, t StepTexts) (mcpserver.Reply, error) {
	connected, err := s.connected(ctx, req.Principal)
	switch {
	case err != nil:
		return nil, err
	case connected && req.Restart != "":
		// The state ran out, but the page was finished: say what is true.
		return s.connectedResult(ctx, req.Principal, t)
	case connected:
		return mcpserver.Text(t.AlreadyConnected), nil
	}
	ask := t.Ask
	if req.Restart != "" {
		ask = t.Expired + ask
	}
	return s.start(ctx, req, ask)
}

// retry answers a retry that carries the flow's id as its state.
func (s *Step) retry(ctx context.Context, req *mcpserver.Request, t StepTexts) (mcpserver.Reply, error) {
	flowID := string(req.State)
	// Decline and cancel are final: a recorded outcome answers every
	// replay, whatever it says now.
	if outcome, err := s.Flows.ClosedOutcome(ctx, flowID); err != nil {
		return nil, err
	} else if outcome != "" {
		return s.closedResult(req, outcome, t), nil
	}
	flow, err := s.Flows.Flow(ctx, flowID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.start(ctx, req, t.Expired+t.Ask) // swept after expiry
	case err != nil:
		return nil, err
	case flow.Principal != req.Principal:
		// The sealed state is bound to the principal, so this means a bug.
		return nil, fmt.Errorf("connect: Step: flow %s belongs to another principal", flowID)
	}
	ans := req.Elicitation(s.inputKey())
	switch {
	case flow.Status == store.FlowComplete:
		return s.finishedResult(ctx, req, flow, ans.Outcome, t)
	case ans.Outcome == elicit.Declined || ans.Outcome == elicit.Cancelled:
		return s.decline(ctx, req, flow, ans.Outcome, t)
	case !s.Flows.Pending(flow):
		return s.closedOrExpired(ctx, req, flow, t)
	case ans.Outcome == elicit.Accepted && s.Wait >= 0:
		return s.held(ctx, req, flow, t)
	}
	return s.ask(flow, t.Pending), nil
}

// decline records a decline or cancel of an open flow; once the page has
// finished the flow, the first answer recorded for it wins.
func (s *Step) decline(ctx context.Context, req *mcpserver.Request, flow *store.Flow, answer elicit.Outcome, t StepTexts) (mcpserver.Reply, error) {
	outcome := FlowDeclined
	if answer == elicit.Cancelled {
		outcome = FlowCancelled
	}
	outcome, err := s.Flows.CloseFlow(ctx, flow, outcome)
	if errors.Is(err, store.ErrConflict) {
		return s.finishedResult(ctx, req, flow, answer, t) // the page won the race
	}
	if err != nil {
		return nil, err
	}
	return s.closedResult(req, outcome, t), nil
}

// held answers an accept after holding it until the flow is finished,
// closed or expired, or s.Wait has passed.
func (s *Step) held(ctx context.Context, req *mcpserver.Request, flow *store.Flow, t StepTexts) (mcpserver.Reply, error) {
	flow, err := s.wait(ctx, req, flow)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return s.ask(flow, t.Pending), nil // the client went away: nobody reads this
	}
	if outcome, err := s.Flows.ClosedOutcome(ctx, flow.ID); err != nil {
		return nil, err
	} else if outcome != "" {
		return s.closedResult(req, outcome, t), nil // a concurrent retry declined
	}
	switch {
	case flow.Status == store.FlowComplete:
		return s.finishedResult(ctx, req, flow, elicit.Accepted, t)
	case !s.Flows.Pending(flow):
		return s.closedOrExpired(ctx, req, flow, t)
	}
	return s.ask(flow, t.Pending), nil
}

// closedOrExpired answers a flow that is no longer pending: closed with an
// outcome (declined, cancelled, denied) or expired, when a new link
// replaces it. A close can land between retry's first read of the outcome
// and its read of the flow, so the outcome is read again here, after the
// flow was seen ended; a close writes both at once (Service.CloseFlow),
// so a flow seen closed always has its outcome here.
func (s *Step) closedOrExpired(ctx context.Context, req *mcpserver.Request, flow *store.Flow, t StepTexts) (mcpserver.Reply, error) {
	outcome, err := s.Flows.ClosedOutcome(ctx, flow.ID)
	if err != nil {
		return nil, err
	}
	if outcome != "" {
		return s.closedResult(req, outcome, t), nil
	}
	return s.start(ctx, req, t.Expired+t.Ask)
}

// waitMessage is the progress message while a retry is held.
const waitMessage = "Waiting for you to finish on the page"

// wait holds the retry (Service.HoldRetry) for s.Wait.
func (s *Step) wait(ctx context.Context, req *mcpserver.Request, flow *store.Flow) (*store.Flow, error) {
	return s.Flows.HoldRetry(ctx, req, flow, s.Wait)
}

func (s *Step) connected(ctx context.Context, principal string) (bool, error) {
	if s.Connected != nil {
		return s.Connected(ctx, principal)
	}
	return s.Flows.HasSecret(ctx, principal, s.Purpose)
}

func (s *Step) connectedResult(ctx context.Context, principal string, t StepTexts) (mcpserver.Reply, error) {
	if s.ConnectedText == nil {
		return mcpserver.Text(t.Connected), nil
	}
	text, err := s.ConnectedText(ctx, principal)
	if err != nil {
		return nil, err
	}
	return mcpserver.Text(text), nil
}

// closedResult answers a flow closed with outcome, now or before; the
// round is reported with that outcome, whatever this retry answered.
func (s *Step) closedResult(req *mcpserver.Request, outcome string, t StepTexts) mcpserver.Reply {
	switch outcome {
	case FlowCancelled:
		req.ReportOutcome(mcpserver.OutcomeCancelled)
		return mcpserver.ToolError(t.Cancelled)
	case FlowDenied:
		req.ReportOutcome(mcpserver.OutcomeDeclined)
		return mcpserver.ToolError(t.Denied)
	}
	req.ReportOutcome(mcpserver.OutcomeDeclined)
	return mcpserver.ToolError(t.Declined)
}

// flowAnswers are the answers Service.AnswerFlow records.
var flowAnswers = map[elicit.Outcome]string{elicit.Accepted: FlowAccepted, elicit.Declined: FlowDeclined, elicit.Cancelled: FlowCancelled}

// finishedResult answers o, an answer to flow whose page was finished:
// the first answer recorded for the flow (Service.AnswerFlow) decides, so
// every replay of the state gets the same result and round outcome.
// Declined and cancelled keep the secret, and the result says so.
func (s *Step) finishedResult(ctx context.Context, req *mcpserver.Request, flow *store.Flow, o elicit.Outcome, t StepTexts) (mcpserver.Reply, error) {
	var recorded string
	var err error
	if answer, ok := flowAnswers[o]; ok {
		recorded, err = s.Flows.AnswerFlow(ctx, flow, answer)
	} else {
		recorded, err = s.Flows.AnsweredOutcome(ctx, flow.ID) // no answer: say what is recorded, or connected
	}
	if err != nil {
		return nil, err
	}
	switch recorded {
	case FlowCancelled:
		req.ReportOutcome(mcpserver.OutcomeCancelled)
		return mcpserver.ToolError(t.CancelledKept), nil
	case FlowDeclined:
		req.ReportOutcome(mcpserver.OutcomeDeclined)
		return mcpserver.ToolError(t.DeclinedKept), nil
	case FlowAccepted:
		req.ReportOutcome(mcpserver.OutcomeAccepted)
	}
	return s.connectedResult(ctx, req.Principal, t)
}

// start refuses a client without URL mode before creating anything it
// could not use (CAP-S-03), then starts (or reuses) the user's flow.
func (s *Step) start(ctx context.Context, req *mcpserver.Request, message string) (mcpserver.Reply, error) {
	if err := req.Require(urlMode); err != nil {
		return nil, err
	}
	flow, err := s.Flows.StartFlow(ctx, req.Principal, s.Purpose)
	if err != nil {
		return nil, err
	}
	return s.ask(flow, message), nil
}

func (s *Step) ask(flow *store.Flow, message string) mcpserver.Reply {
	return mcpserver.Ask().ElicitURL(s.inputKey(), strings.TrimSpace(message), s.Flows.FlowURL(flow)).WithState([]byte(flow.ID))
}
