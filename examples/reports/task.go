package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// export_and_send: the tasks-extension reference tool (docs/tasks.md).
// It exports a report, which takes a while (WithExportTime), then asks
// in a form who receives it, then sends it (simulated: a "report_send"
// record). A client that declares the tasks extension gets a task at
// once and follows it with tasks/get; the question comes as the task's
// input_required and the answer with tasks/update. A client that does
// not gets the same steps in the call, as MRTR rounds.
//
// The send is recorded in the ledger under the operation's id, which a
// task keeps for its whole life, in the same transaction as the send
// record: however often tasks/update is replayed or raced, and when
// another instance takes the task over after a crash and runs the
// handler again from the top, the run finds the send recorded and
// answers with that result instead of sending again. With
// mcpserver.TaskOptions.Ledger set to the same ledger, a tasks/cancel
// records the operation first when it comes before the send, and the
// send is then refused; when it comes after, it is too late and the task
// completes.

// Names of export_and_send on the wire.
const (
	ToolExportAndSend = "export_and_send"
	KeyRecipient      = "recipient" // form: who receives the exported report
)

// Result texts of export_and_send. Decline and cancel differ on purpose
// (ELI-S-08).
const (
	TextExportSendDeclined  = "The report was exported but not sent: you declined to name a recipient."
	TextExportSendCancelled = "The report was exported but not sent: the recipient question was dismissed. Call export_and_send again to restart."
	// TextTaskCancelled: tasks/cancel came before the effect
	// (mcpserver.TaskCancelOutcome in the ledger); nothing was sent.
	TextTaskCancelled = "The task was cancelled before anything was sent."
)

// DefaultExportTime is how long export_and_send's simulated export takes
// unless WithExportTime says otherwise.
const DefaultExportTime = 3 * time.Second

// ExportParts is how many parts export_and_send's simulated export has;
// before each it reports its progress ("Exporting the sales report for
// 2026-Q2 (2/5)": the task's statusMessage, or notifications/progress
// for a call that carried a progressToken).
const ExportParts = 5

// recipientForm asks who receives the report; submitting it sends.
var recipientForm = mustForm(
	elicit.String("recipient").Title("Recipient").Format(elicit.FormatEmail).MaxLength(254).
		Description("The e-mail address the report is sent to. Submitting sends it now.").Required(),
)

// exported is export_and_send's state between the export and the send:
// what the long part produced, so a re-ask does not export again.
type exported struct {
	Rows int `json:"rows"`
}

// WithExportTime sets how long export_and_send's simulated export takes
// (0: at once; DefaultExportTime when not called) and returns a. Call it
// before Register.
func (a *App) WithExportTime(d time.Duration) *App {
	a.exportTime = &d
	return a
}

func (a *App) registerExportAndSend(s *mcpserver.Server) {
	mcpserver.AddToolWith(s, &mcp.Tool{
		Name:  ToolExportAndSend,
		Title: "Export and send a report",
		Description: "Export the report for a period and dataset, which takes a while, then ask the user in a form who receives it, " +
			"then send it. Runs as a task for clients that declare the tasks extension.",
	}, func(ctx context.Context, req *mcpserver.Request, args exportArgs) (mcpserver.Reply, any, error) {
		r, err := a.exportAndSend(ctx, req, &args)
		return r, nil, err
	}, &mcpserver.HandlerOptions{RestartStale: true, Tasks: mcpserver.TaskOptional})
}

func (a *App) exportAndSend(ctx context.Context, req *mcpserver.Request, args *exportArgs) (mcpserver.Reply, error) {
	if req.Principal == "" {
		return mcpserver.ToolError(TextSignIn), nil
	}
	if r, ok, err := a.recorded(ctx, req); ok || err != nil {
		return r, err
	}
	var ex exported
	if req.State != nil {
		if err := json.Unmarshal(req.State, &ex); err != nil {
			return nil, fmt.Errorf("reports: export state: %w", err)
		}
	}
	switch ans := req.Elicitation(KeyRecipient); ans.Outcome {
	case elicit.Accepted:
		return a.sendExport(ctx, req, args, ex, ans.Content["recipient"].(string))
	case elicit.Declined:
		return a.finish(ctx, req, OutcomeDeclined, textResult(TextExportSendDeclined, true, nil), nil)
	case elicit.Cancelled:
		return a.finish(ctx, req, OutcomeCancelled, textResult(TextExportSendCancelled, true, nil), nil)
	}
	// Refused before any work when the client cannot answer the form.
	if err := req.Require(needForm); err != nil {
		return nil, err
	}
	if req.TaskAllowed() {
		return mcpserver.RunAsTask(), nil
	}
	if req.State == nil { // not exported yet in this operation
		var err error
		if ex, err = a.export(ctx, req, args); err != nil {
			return nil, err
		}
	}
	state, _ := json.Marshal(ex)
	msg := fmt.Sprintf("%sThe %s report for %s is exported (%d rows). Who should receive it? Submitting sends it now; decline to keep it unsent.",
		restartNote(req.Restart), args.Dataset, args.Period, ex.Rows)
	return mcpserver.Ask().ElicitFormSchema(KeyRecipient, msg, recipientForm).WithState(state).
		WithStatusMessage(fmt.Sprintf("Exported %d rows; waiting for the recipient", ex.Rows)), nil
}

// export is the long part: a simulated export of ExportParts parts that
// takes the export time, says before each part how far it is, and stops
// as soon as ctx ends (tasks/cancel, or the client gone).
func (a *App) export(ctx context.Context, req *mcpserver.Request, args *exportArgs) (exported, error) {
	d := DefaultExportTime
	if a.exportTime != nil {
		d = *a.exportTime
	}
	a.log.Info("reports: export running", "tool", req.Name, "operation_id", req.OperationID, "task", req.TaskID)
	what := fmt.Sprintf("Exporting the %s report for %s", args.Dataset, args.Period)
	for part := range ExportParts {
		// Best effort: the progress is for the user's eyes, and a store
		// that cannot take it fails the send later, not the export now.
		_ = req.Progress(float64(part), ExportParts, what)
		if err := ctxtime.Sleep(ctx, d/ExportParts); err != nil {
			a.log.Info("reports: export stopped", "tool", req.Name, "operation_id", req.OperationID, "task", req.TaskID, "err", err)
			return exported{}, err
		}
	}
	h := fnv.New32a()
	h.Write([]byte(args.Period + "/" + args.Dataset))
	return exported{Rows: 1000 + int(h.Sum32()%9000)}, nil
}

// sendExport sends the exported report to recipient: the send record and
// the ledger row in one transaction, once per operation.
func (a *App) sendExport(ctx context.Context, req *mcpserver.Request, args *exportArgs, ex exported, recipient string) (mcpserver.Reply, error) {
	sendID, err := newID("s_")
	if err != nil {
		return nil, err
	}
	now := a.flows.Now()
	data, err := json.Marshal(map[string]any{"period": args.Period, "dataset": args.Dataset, "rows": ex.Rows, "recipient": recipient})
	if err != nil {
		return nil, err
	}
	res := textResult(fmt.Sprintf("Sent the %s report for %s (%d rows) to %s.", args.Dataset, args.Period, ex.Rows, Quote(recipient)), false,
		map[string]any{"send_id": sendID, "recipient": recipient, "rows": ex.Rows, "status": StatusSent})
	return a.finish(ctx, req, OutcomeSent, res, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: KindSend, ID: sendID, Principal: req.Principal, Status: StatusSent,
			Data: data, CreatedAt: now, UpdatedAt: now})
	}, "send_id", sendID, "task", req.TaskID)
}
