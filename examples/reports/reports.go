// Package reports is the form-mode reference app of elicitd: the
// report-export workflow of docs/flows.md §export_report and send_report,
// with every row of its transition table (ELICIT-STEP-01…08) handled by
// construction.
//
//   - export_report(period, dataset) asks, in a form, the detail level
//     (summary | detailed) and a label (1–80 characters, treated as data).
//     Accept prepares a draft; preparing is not sending.
//   - send_report(draft_id, recipient) needs the user's reporting account
//     connected (URL mode, through package connect, as billing does) and
//     then its own form confirmation naming the draft and the recipient.
//     Only an accepted confirmation bound to that draft sends it.
//   - list_drafts lists the caller's drafts and their states.
//   - export_and_send(period, dataset) exports a report (a while), then
//     asks in a form who receives it, then sends it; it runs as a task of
//     the tasks extension for clients that declare it (task.go).
//
// Decline and cancel end an operation with distinct isError results and
// are never asked again. Expired state and changed arguments restart with
// a fresh question (mcpserver.HandlerOptions.RestartStale), so an old
// answer is never applied to a new action. Every finished operation is
// recorded in the store's ledger in the same transaction as its effect, so
// a replayed retry returns the recorded result and never prepares or sends
// twice. Sends are simulated: a "report_send" record, no network.
package reports

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/textclass"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// Names used on the wire and in the store.
const (
	ToolExport = "export_report"
	ToolSend   = "send_report"
	ToolList   = "list_drafts"

	KeyOptions = "report_options"    // form: detail and label
	KeyConnect = "reporting_account" // URL: connect the reporting account
	KeyConfirm = "confirm_send"      // form: confirm this send

	Purpose = "reporting_account" // the connect flow purpose and secret name

	KindDraft = "report_draft" // store records: one per prepared draft
	KindSend  = "report_send"  // store records: one per (simulated) send

	StatusPrepared = "prepared"
	StatusSent     = "sent"
)

// Outcomes recorded in the ledger and logged (outcomes are not faults).
const (
	OutcomePrepared         = "prepared"
	OutcomeSent             = "sent"
	OutcomeDeclined         = "declined"
	OutcomeCancelled        = "cancelled"
	OutcomeConnectDeclined  = "connect_declined"
	OutcomeConnectCancelled = "connect_cancelled"
	OutcomeNotConfirmed     = "not_confirmed"
	OutcomeRefused          = "refused"
)

// Result texts. Decline and cancel differ on purpose (ELI-S-08), and none
// claims that nothing happened where earlier work may exist.
const (
	TextExportDeclined   = "No draft was prepared: you declined to choose the report options."
	TextExportCancelled  = "The report options were dismissed before a choice was made, so no draft was prepared. Call export_report again to restart."
	TextConnectDeclined  = "The report was not sent: you declined to connect your reporting account. The draft is unchanged."
	TextConnectCancelled = "The report was not sent: the account connection step was dismissed. The draft is unchanged; call send_report again to restart."
	TextSendDeclined     = "The report was not sent: you declined the confirmation. The draft is unchanged."
	TextSendCancelled    = "The report was not sent: the confirmation was dismissed. The draft is unchanged; call send_report again to restart."
	TextNotConfirmed     = "The report was not sent: the confirmation was submitted without ticking \"Send it now\". The draft is unchanged."
	TextSignIn           = "Sign-in is required."
	textConnectAsk       = "Connect your reporting account: open this page on the server, sign in, and enter the account's API key there. It never passes through this client."
	textConnectPending   = "The reporting account is not connected yet. Open the page, finish connecting it, then accept again."
)

// MaxLabelLen is the longest label, in characters.
const MaxLabelLen = 80

// exportForm asks the detail level and a label (a bounded choice and a
// length limit, docs/flows.md §export_report and send_report).
var exportForm = mustForm(
	elicit.TitledEnum("detail",
		elicit.Choice{Value: "summary", Title: "Summary"},
		elicit.Choice{Value: "detailed", Title: "Detailed"}).
		Title("Detail level").Description("How much the draft report contains.").Required(),
	elicit.String("label").Title("Label").
		Description("A name for the draft, 1 to 80 characters.").MinLength(1).MaxLength(MaxLabelLen).Required(),
)

// confirmForm is the send confirmation; the message names draft and recipient.
var confirmForm = mustForm(
	elicit.Boolean("send").Title("Send it now").Description("Tick to send this draft to the recipient named above.").Required(),
)

func mustForm(fields ...*elicit.Field) *elicit.Schema {
	s, err := elicit.FormSchema(fields...)
	if err != nil {
		panic("reports: " + err.Error()) // fixed at compile time; caught by any test
	}
	return s
}

// App serves the report tools. It is safe for concurrent use.
type App struct {
	ledger store.Ledger
	flows  *connect.Service
	log    *slog.Logger
	wait   time.Duration // connect.Service.HoldRetry's d: 0 default, negative none
	// exportTime is export_and_send's export time; nil: DefaultExportTime.
	exportTime *time.Duration
}

// New returns the app. ledger keeps drafts, sends and the operation
// ledger; flows runs the reporting-account connection (URL mode) and
// provides the clock; logger (nil: slog.Default) receives one line per
// outcome with ids only, never form content.
func New(flows *connect.Service, ledger store.Ledger, logger *slog.Logger) *App {
	if logger == nil {
		logger = slog.Default()
	}
	return &App{ledger: ledger, flows: flows, log: logger}
}

// WithWait sets how long a send_report retry that accepted the
// reporting-account page before it was finished is held open, answered as
// soon as the page is finished (connect.Service.HoldRetry: 0 means
// connect.DefaultWait, negative no wait), and returns a. Call it before
// Register.
func (a *App) WithWait(d time.Duration) *App {
	a.wait = d
	return a
}

// Register adds export_report, send_report, list_drafts and
// export_and_send (task.go) to s. Their
// input schemas are inferred from exportArgs, sendArgs and struct{}, and
// the library refuses arguments that do not fit them (-32602) before a
// handler runs.
func (a *App) Register(s *mcpserver.Server) {
	restart := &mcpserver.HandlerOptions{RestartStale: true}
	mcpserver.AddToolWith(s, &mcp.Tool{
		Name:  ToolExport,
		Title: "Export report (prepare a draft)",
		Description: "Prepare a draft report for a period and dataset. Asks the user, in a form, for the detail level and a label. " +
			"Preparing a draft does not send it; use send_report for that.",
	}, func(ctx context.Context, req *mcpserver.Request, args exportArgs) (mcpserver.Reply, any, error) {
		r, err := a.exportReport(ctx, req, &args)
		return r, nil, err
	}, restart)
	mcpserver.AddToolWith(s, &mcp.Tool{
		Name:  ToolSend,
		Title: "Send report",
		Description: "Send a prepared draft to a recipient. Needs the user's reporting account connected (the user does it on the " +
			"server's own page) and the user's explicit confirmation naming the draft and the recipient.",
	}, func(ctx context.Context, req *mcpserver.Request, args sendArgs) (mcpserver.Reply, any, error) {
		r, err := a.sendReport(ctx, req, &args)
		return r, nil, err
	}, restart)
	readOnly := true
	mcpserver.AddTool(s, &mcp.Tool{
		Name:        ToolList,
		Title:       "List drafts",
		Description: "List the user's report drafts and whether each was sent.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &readOnly},
	}, func(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
		r, err := a.listDrafts(ctx, req)
		return r, nil, err
	})
	a.registerExportAndSend(s)
}

// ---- arguments ----

// exportArgs are export_report's arguments; the tags are its input schema.
type exportArgs struct {
	Period  string `json:"period" description:"YYYY-MM or YYYY-Qn, e.g. 2026-Q2" pattern:"^[0-9]{4}-(0[1-9]|1[0-2]|Q[1-4])$"`
	Dataset string `json:"dataset" enum:"sales|support|usage"`
}

// sendArgs are send_report's arguments. A draft id is at most
// store.MaxRecordIDLen (128) long, and visible ASCII (d_ and hex): any
// other text is not one, so it is refused (-32602), not echoed.
type sendArgs struct {
	DraftID   string `json:"draft_id" minLength:"1" maxLength:"128" pattern:"^[!-~]+$"`
	Recipient string `json:"recipient" format:"email" maxLength:"254"`
}

// ---- display ----

// Quote shows user-supplied text (a label, an id) as data in text meant
// for people: a JSON string literal, so it cannot end the quote or add
// lines, and every character that acts on the text rather than showing
// (textclass.Escaped: controls, bidi and other format characters,
// separators, fillers) is written as a \uXXXX escape. It does not escape HTML: <, > and & stay as typed, and
// a client that renders the text as HTML or Markdown escapes it itself.
func Quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	var out strings.Builder
	for _, r := range strings.TrimSuffix(b.String(), "\n") {
		if textclass.Escaped(r) {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

type draftData struct {
	Period  string    `json:"period"`
	Dataset string    `json:"dataset"`
	Detail  string    `json:"detail"`
	Label   string    `json:"label"`
	SentTo  string    `json:"sent_to,omitempty"`
	SentAt  time.Time `json:"sent_at,omitzero"`
}

func describe(d *draftData) string {
	return fmt.Sprintf("the %s %s report for %s, labelled %s", d.Detail, d.Dataset, d.Period, Quote(d.Label))
}

// ---- ledger ----

// recorded returns the recorded result of req's operation, if it completed.
func (a *App) recorded(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, bool, error) {
	if req.Round == 0 {
		return nil, false, nil
	}
	op, err := a.ledger.GetOperation(ctx, req.OperationID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	r, err := a.replay(req, op)
	return r, err == nil, err
}

// replay answers req with op, its operation's recorded outcome.
func (a *App) replay(req *mcpserver.Request, op *store.Operation) (mcpserver.Reply, error) {
	if op.Principal != req.Principal {
		// Operation ids come from sealed state bound to the principal.
		return nil, fmt.Errorf("reports: operation %s belongs to another principal", req.OperationID)
	}
	if op.Outcome == mcpserver.TaskCancelOutcome {
		// tasks/cancel recorded the task's operation before this run's
		// effect: nothing was done, and the task is cancelled (the
		// result is dropped; it is returned for the record only).
		a.log.Info("reports: task cancelled before its effect", "tool", req.Name, "operation_id", req.OperationID, "task", req.TaskID)
		return mcpserver.ToolResult(textResult(TextTaskCancelled, true, nil)), nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(op.Result, &res); err != nil {
		return nil, fmt.Errorf("reports: recorded result of %s: %w", req.OperationID, err)
	}
	a.log.Info("reports: replayed retry answered from the ledger", "tool", req.Name, "operation_id", req.OperationID, "outcome", op.Outcome)
	return mcpserver.ToolResult(&res), nil
}

// finish records res as the outcome of req's operation, with effect (may
// be nil) in the same transaction, and returns it. If the operation was
// recorded already (a replayed retry, or another retry of it that came
// first), that recorded result is returned and effect does not run, so a
// caller need not look the operation up before. effect may replace *res
// before it returns nil.
func (a *App) finish(ctx context.Context, req *mcpserver.Request, outcome string, res *mcp.CallToolResult,
	effect func(context.Context, store.Effects) error, logAttrs ...any) (mcpserver.Reply, error) {
	op := &store.Operation{ID: req.OperationID, Principal: req.Principal, Name: req.Method + " " + req.Name,
		Outcome: outcome, CompletedAt: a.flows.Now()}
	err := a.ledger.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
		if effect != nil {
			if err := effect(ctx, fx); err != nil {
				return err
			}
		}
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		op.Result = b
		return nil
	})
	if rec := (*store.RecordedError)(nil); errors.As(err, &rec) {
		return a.replay(req, rec.Op)
	}
	if errors.Is(err, store.ErrConflict) {
		if r, ok, rerr := a.recorded(ctx, req); ok || rerr != nil {
			return r, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	a.log.Info("reports: outcome", append([]any{"tool", req.Name, "operation_id", req.OperationID,
		"principal", req.Principal, "outcome", outcome}, logAttrs...)...)
	return mcpserver.ToolResult(res), nil
}

func textResult(text string, isError bool, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}, IsError: isError, StructuredContent: structured}
}

func newID(prefix string) (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reports: random id: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

var (
	needForm    = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &mcp.Empty{}}}
	needFormURL = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &mcp.Empty{}, URL: &mcp.Empty{}}}
)

// restartNote tells the user why a question comes again.
func restartNote(r mcpserver.RestartReason) string {
	switch r {
	case mcpserver.RestartExpired:
		return "Your earlier answer expired before it was used, so it was not applied. "
	case mcpserver.RestartArgumentsChanged:
		return "The request changed since the earlier question, so the earlier answer was not applied. "
	}
	return ""
}

// ---- export_report ----

func (a *App) exportReport(ctx context.Context, req *mcpserver.Request, args *exportArgs) (mcpserver.Reply, error) {
	if req.Principal == "" {
		return mcpserver.ToolError(TextSignIn), nil
	}
	// An answer completes the operation: finish answers a replay from the
	// ledger in the same round trip that looks for it.
	switch ans := req.Elicitation(KeyOptions); ans.Outcome {
	case elicit.Accepted:
		return a.prepareDraft(ctx, req, args, ans.Content)
	case elicit.Declined:
		return a.finish(ctx, req, OutcomeDeclined, textResult(TextExportDeclined, true, nil), nil)
	case elicit.Cancelled:
		return a.finish(ctx, req, OutcomeCancelled, textResult(TextExportCancelled, true, nil), nil)
	}
	if r, ok, err := a.recorded(ctx, req); ok || err != nil {
		return r, err
	}
	// First call, or the answer was missing or invalid: ask (the library
	// adds what was wrong and caps the corrections).
	if err := req.Require(needForm); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%sChoose the detail level and a label for the %s report for %s. It will be prepared as a draft; nothing is sent.",
		restartNote(req.Restart), args.Dataset, args.Period)
	return mcpserver.Ask().ElicitFormSchema(KeyOptions, msg, exportForm).WithState([]byte("export")), nil
}

func (a *App) prepareDraft(ctx context.Context, req *mcpserver.Request, args *exportArgs, content map[string]any) (mcpserver.Reply, error) {
	id, err := newID("d_")
	if err != nil {
		return nil, err
	}
	d := &draftData{Period: args.Period, Dataset: args.Dataset, Detail: content["detail"].(string), Label: content["label"].(string)}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Draft %s prepared: %s. It has NOT been sent. To send it, call send_report with draft_id %s and a recipient.",
		id, describe(d), Quote(id))
	res := textResult(text, false, map[string]any{"draft_id": id, "status": StatusPrepared, "sent": false,
		"period": d.Period, "dataset": d.Dataset, "detail": d.Detail, "label": d.Label})
	now := a.flows.Now()
	return a.finish(ctx, req, OutcomePrepared, res, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: KindDraft, ID: id, Principal: req.Principal, Status: StatusPrepared,
			Data: data, CreatedAt: now, UpdatedAt: now})
	}, "draft_id", id)
}

// ---- send_report ----

// refuse answers res without recording it, unless a concurrent retry of
// the same operation completed it meanwhile (it may be what sent the
// draft): then its recorded result is the answer.
func (a *App) refuse(ctx context.Context, req *mcpserver.Request, res *mcp.CallToolResult) (mcpserver.Reply, error) {
	if r, ok, err := a.recorded(ctx, req); ok || err != nil {
		return r, err
	}
	return mcpserver.ToolResult(res), nil
}

// sendState is send_report's sealed application state.
type sendState struct {
	Step    string `json:"s"`           // "connect" or "confirm"
	FlowID  string `json:"f,omitempty"` // connect: the pending flow
	Version int64  `json:"v,omitempty"` // confirm: the draft version the user saw
}

var (
	errNoDraft     = errors.New("reports: no such draft")
	errAlreadySent = errors.New("reports: draft already sent")
	errChanged     = errors.New("reports: draft changed since the confirmation")
)

func noDraft(id string) *mcp.CallToolResult {
	return textResult(fmt.Sprintf("There is no draft %s of yours. Call list_drafts to see your drafts; nothing was sent.", Quote(id)), true, nil)
}

func alreadySent(id string) *mcp.CallToolResult {
	return textResult(fmt.Sprintf("Draft %s was already sent; it was not sent again.", Quote(id)), true, nil)
}

// loadDraft returns the caller's draft; another user's draft reads as absent.
func (a *App) loadDraft(ctx context.Context, principal, id string) (*store.Record, *draftData, error) {
	r, err := a.ledger.GetRecord(ctx, KindDraft, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Principal != principal) {
		return nil, nil, errNoDraft
	}
	if err != nil {
		return nil, nil, err
	}
	var d draftData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, nil, fmt.Errorf("reports: draft %s: %w", id, err)
	}
	return r, &d, nil
}

func (a *App) sendReport(ctx context.Context, req *mcpserver.Request, args *sendArgs) (mcpserver.Reply, error) {
	if req.Principal == "" {
		return mcpserver.ToolError(TextSignIn), nil
	}
	if r, ok, err := a.recorded(ctx, req); ok || err != nil {
		return r, err
	}
	rec, d, err := a.loadDraft(ctx, req.Principal, args.DraftID)
	if errors.Is(err, errNoDraft) {
		return a.refuse(ctx, req, noDraft(args.DraftID))
	}
	if err != nil {
		return nil, err
	}
	if rec.Status == StatusSent {
		return a.refuse(ctx, req, alreadySent(args.DraftID))
	}
	var st sendState
	if req.State != nil {
		if err := json.Unmarshal(req.State, &st); err != nil {
			return nil, fmt.Errorf("reports: send state: %w", err)
		}
	}

	// Step 1: the reporting account. A refusal of the connection step ends
	// the operation even if the account got connected some other way.
	if st.Step == "connect" {
		if r, done, err := a.connectRefused(ctx, req, args); done {
			return r, err
		}
		if err := a.waitForAccount(ctx, req, st.FlowID); err != nil {
			return nil, err
		}
	}
	connected, err := a.flows.HasSecret(ctx, req.Principal, Purpose)
	if err != nil {
		return nil, err
	}
	if !connected {
		return a.askConnect(ctx, req, st)
	}

	// Step 2: the confirmation, bound to this draft (arguments are sealed
	// into the state) and to the version the user saw.
	if st.Step == "confirm" {
		if r, done, err := a.confirmed(ctx, req, args, st.Version, rec.Version); done {
			return r, err
		}
	}
	if err := req.Require(needForm); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%sSend draft %s (%s) to %s now? This sends the report by e-mail and cannot be undone.",
		restartNote(req.Restart), Quote(args.DraftID), describe(d), Quote(args.Recipient))
	state, _ := json.Marshal(sendState{Step: "confirm", Version: rec.Version})
	return mcpserver.Ask().ElicitFormSchema(KeyConfirm, msg, confirmForm).WithState(state), nil
}

// connectRefused ends the operation when the user declined or cancelled
// the connection step, even if the account got connected some other way
// (done is set then).
func (a *App) connectRefused(ctx context.Context, req *mcpserver.Request, args *sendArgs) (r mcpserver.Reply, done bool, err error) {
	switch req.Elicitation(KeyConnect).Outcome {
	case elicit.Declined:
		r, err = a.finish(ctx, req, OutcomeConnectDeclined, textResult(TextConnectDeclined, true, nil), nil, "draft_id", args.DraftID)
		return r, true, err
	case elicit.Cancelled:
		r, err = a.finish(ctx, req, OutcomeConnectCancelled, textResult(TextConnectCancelled, true, nil), nil, "draft_id", args.DraftID)
		return r, true, err
	}
	return nil, false, nil
}

// confirmed acts on the answer to the confirmation: send when it says
// yes for the version the user saw, end on no, decline or cancel (done is
// set then); not done when it must be asked again (no answer, or the
// draft changed under it).
func (a *App) confirmed(ctx context.Context, req *mcpserver.Request, args *sendArgs, seen, current int64) (r mcpserver.Reply, done bool, err error) {
	ans := req.Elicitation(KeyConfirm)
	switch {
	case ans.Outcome == elicit.Accepted && ans.Content["send"] != true:
		r, err = a.finish(ctx, req, OutcomeNotConfirmed, textResult(TextNotConfirmed, true, nil), nil, "draft_id", args.DraftID)
	case ans.Outcome == elicit.Accepted && seen == current:
		r, err = a.send(ctx, req, args, seen)
	case ans.Outcome == elicit.Declined:
		r, err = a.finish(ctx, req, OutcomeDeclined, textResult(TextSendDeclined, true, nil), nil, "draft_id", args.DraftID)
	case ans.Outcome == elicit.Cancelled:
		r, err = a.finish(ctx, req, OutcomeCancelled, textResult(TextSendCancelled, true, nil), nil, "draft_id", args.DraftID)
	default:
		return nil, false, nil
	}
	return r, true, err
}

// waitForAccount holds a retry that accepted the reporting-account page
// before it was finished, until the page is finished or the wait ends
// (connect.Service.HoldRetry), so one retry completes the step: accept is
// consent, not completion (ELI-RA-01).
func (a *App) waitForAccount(ctx context.Context, req *mcpserver.Request, flowID string) error {
	if req.Elicitation(KeyConnect).Outcome != elicit.Accepted || a.wait < 0 {
		return nil
	}
	f, err := a.flows.Flow(ctx, flowID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // swept: askConnect starts anew
	case err != nil:
		return err
	case f.Principal != req.Principal || !a.flows.Pending(f):
		return nil
	}
	_, err = a.flows.HoldRetry(ctx, req, f, a.wait)
	return err
}

// askConnect asks (again) for the reporting-account page. A pending flow
// is asked with the same URL: accept is consent, not completion
// (ELI-RA-01); the send waits until the server sees the account connected.
func (a *App) askConnect(ctx context.Context, req *mcpserver.Request, st sendState) (mcpserver.Reply, error) {
	if st.Step == "connect" {
		f, err := a.flows.Flow(ctx, st.FlowID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		case f.Principal == req.Principal && f.Status == store.FlowPending && a.flows.Now().Before(f.ExpiresAt):
			state, _ := json.Marshal(sendState{Step: "connect", FlowID: f.ID})
			return mcpserver.Ask().ElicitURL(KeyConnect, textConnectPending, a.flows.FlowURL(f)).WithState(state), nil
		}
	}
	// Refuse before creating a flow the client cannot use (CAP-S-03): it
	// needs URL mode now and form mode for the confirmation after.
	if err := req.Require(needFormURL); err != nil {
		return nil, err
	}
	f, err := a.flows.StartFlow(ctx, req.Principal, Purpose)
	if err != nil {
		return nil, err
	}
	state, _ := json.Marshal(sendState{Step: "connect", FlowID: f.ID})
	return mcpserver.Ask().ElicitURL(KeyConnect, restartNote(req.Restart)+textConnectAsk, a.flows.FlowURL(f)).WithState(state), nil
}

// send marks the draft sent and records the simulated send, in the same
// transaction as the ledger row.
func (a *App) send(ctx context.Context, req *mcpserver.Request, args *sendArgs, version int64) (mcpserver.Reply, error) {
	sendID, err := newID("s_")
	if err != nil {
		return nil, err
	}
	now := a.flows.Now()
	res := &mcp.CallToolResult{}
	reply, err := a.finish(ctx, req, OutcomeSent, res, func(ctx context.Context, fx store.Effects) error {
		r, err := fx.Get(ctx, KindDraft, args.DraftID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return errNoDraft
		case err != nil:
			return err
		case r.Principal != req.Principal:
			return errNoDraft
		case r.Status != StatusPrepared:
			return errAlreadySent
		case r.Version != version:
			return errChanged
		}
		var d draftData
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return err
		}
		d.SentTo, d.SentAt = args.Recipient, now
		if r.Data, err = json.Marshal(&d); err != nil {
			return err
		}
		r.Status, r.UpdatedAt = StatusSent, now
		if err := fx.Update(ctx, r); err != nil {
			return err
		}
		sd, _ := json.Marshal(map[string]string{"draft_id": args.DraftID, "recipient": args.Recipient})
		if err := fx.Insert(ctx, &store.Record{Kind: KindSend, ID: sendID, Principal: req.Principal, Status: StatusSent,
			Data: sd, CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		*res = *textResult(fmt.Sprintf("Sent draft %s (%s) to %s.", Quote(args.DraftID), describe(&d), Quote(args.Recipient)), false,
			map[string]any{"draft_id": args.DraftID, "send_id": sendID, "recipient": args.Recipient, "status": StatusSent})
		return nil
	}, "draft_id", args.DraftID, "send_id", sendID)
	switch {
	case errors.Is(err, errNoDraft):
		return a.finish(ctx, req, OutcomeRefused, noDraft(args.DraftID), nil, "draft_id", args.DraftID)
	case errors.Is(err, errAlreadySent), errors.Is(err, errChanged), errors.Is(err, store.ErrConflict):
		// Another operation sent it between the question and the answer.
		return a.finish(ctx, req, OutcomeRefused, alreadySent(args.DraftID), nil, "draft_id", args.DraftID)
	}
	return reply, err
}

// ---- list_drafts ----

func (a *App) listDrafts(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if req.Principal == "" {
		return mcpserver.ToolError(TextSignIn), nil
	}
	recs, err := a.ledger.ListRecords(ctx, KindDraft, req.Principal)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return mcpserver.ToolResult(textResult("You have no drafts. Call export_report to prepare one.", false,
			map[string]any{"drafts": []any{}})), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d draft(s):", len(recs))
	list := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		var d draftData
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, fmt.Errorf("reports: draft %s: %w", r.ID, err)
		}
		fmt.Fprintf(&b, "\n- %s: %s, %s", r.ID, r.Status, describe(&d))
		item := map[string]any{"draft_id": r.ID, "status": r.Status, "period": d.Period, "dataset": d.Dataset,
			"detail": d.Detail, "label": d.Label, "created_at": r.CreatedAt.UTC().Format(time.RFC3339)}
		if r.Status == StatusSent {
			fmt.Fprintf(&b, ", sent to %s", Quote(d.SentTo))
			item["sent_to"] = d.SentTo
		}
		list = append(list, item)
	}
	return mcpserver.ToolResult(textResult(b.String(), false, map[string]any{"drafts": list})), nil
}
