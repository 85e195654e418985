package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// sendServer has a "send" tool that runs as a task, asks to confirm, and
// then records its effect (a "send" record keyed by the task id) in led
// under Request.OperationID. gate, when set, is called with "before" and
// "after" around the commit; refused counts the commits the ledger
// refused.
type sendServer struct {
	*Server
	led     store.Ledger
	gate    func(ctx context.Context, stage string)
	refused atomic.Int32
}

func newSendServer(t *testing.T, led store.Ledger, gate func(context.Context, string)) *sendServer {
	t.Helper()
	ss := &sendServer{Server: New(mcp.Implementation{Name: "send", Version: "1"}, nil), led: led, gate: gate}
	ss.EnableTasks(&TaskOptions{Ledger: led})
	ss.AddToolWith(&mcp.Tool{Name: "send"}, ss.send, &HandlerOptions{Tasks: TaskOptional})
	return ss
}

func (ss *sendServer) send(ctx context.Context, r *Request) (Reply, error) {
	if r.TaskAllowed() {
		return RunAsTask(), nil
	}
	if r.Elicitation("ok").Outcome != elicit.Accepted {
		return Ask().ElicitForm("ok", "Send?", json.RawMessage(confirmForm)), nil
	}
	if ss.gate != nil {
		ss.gate(ctx, "before")
	}
	now := time.Now().UTC()
	op := &store.Operation{ID: r.OperationID, Principal: r.Principal, Name: "tools/call send", Outcome: "sent", CompletedAt: now}
	// WithoutCancel: the commit is attempted even after a cancel ended
	// the run's context, so the ledger (not the context) must refuse it.
	err := ss.led.CompleteOperation(context.WithoutCancel(ctx), op, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: "send", ID: r.TaskID, Principal: r.Principal, Status: "sent",
			Data: []byte(`{}`), CreatedAt: now, UpdatedAt: now})
	})
	if errors.Is(err, store.ErrConflict) {
		ss.refused.Add(1)
		return ToolError("cancelled before the send"), nil
	}
	if err != nil {
		return nil, err
	}
	if ss.gate != nil {
		ss.gate(ctx, "after")
	}
	return Text("sent"), nil
}

// sends is how many "send" records task id has (0 or 1).
func (ss *sendServer) sends(t *testing.T, id string) int {
	t.Helper()
	_, err := ss.led.GetRecord(context.Background(), "send", id)
	switch {
	case err == nil:
		return 1
	case errors.Is(err, store.ErrNotFound):
		return 0
	}
	t.Fatal(err)
	return -1
}

// memLedger is an in-memory store.Ledger: one outcome per operation id,
// its effect's records written under the same lock. (A driver here would
// put modernc.org/sqlite in every mcpserver user's go.sum; elicitd's
// TestExportAndSendCancelRacesAnswer runs the race on SQLite and
// PostgreSQL.)
type memLedger struct {
	mu      sync.Mutex
	ops     map[string]*store.Operation
	records map[string]*store.Record // by kind + "/" + id
}

func newMemLedger() *memLedger {
	return &memLedger{ops: map[string]*store.Operation{}, records: map[string]*store.Record{}}
}

func (l *memLedger) CompleteOperation(ctx context.Context, op *store.Operation, effect func(context.Context, store.Effects) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if got, ok := l.ops[op.ID]; ok {
		c := *got
		return &store.RecordedError{Op: &c}
	}
	fx := &memEffects{l: l, op: op.ID, added: map[string]*store.Record{}}
	if effect != nil {
		if err := effect(ctx, fx); err != nil {
			return err
		}
	}
	maps.Copy(l.records, fx.added)
	c := *op
	l.ops[op.ID] = &c
	return nil
}

func (l *memLedger) GetOperation(_ context.Context, id string) (*store.Operation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if got, ok := l.ops[id]; ok {
		c := *got
		return &c, nil
	}
	return nil, store.ErrNotFound
}

func (l *memLedger) GetRecord(_ context.Context, kind, id string) (*store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.records[kind+"/"+id]; ok {
		c := *r
		return &c, nil
	}
	return nil, store.ErrNotFound
}

func (l *memLedger) ListRecords(context.Context, string, string) ([]*store.Record, error) {
	return nil, errors.New("memLedger: ListRecords not needed here")
}

// memEffects supports Insert only (the other methods are not called).
type memEffects struct {
	store.Effects
	l     *memLedger
	op    string
	added map[string]*store.Record
}

func (fx *memEffects) Insert(_ context.Context, r *store.Record) error {
	key := r.Kind + "/" + r.ID
	if _, ok := fx.l.records[key]; ok {
		return store.ErrConflict
	}
	r.Version, r.OperationID = 1, fx.op
	c := *r
	fx.added[key] = &c
	return nil
}

const sendAnswer = `,"inputResponses":{"ok":{"action":"accept","content":{"confirm":true}}}`

// startAsking starts a "send" task and waits until it asks.
func startAsking(t *testing.T, ss *sendServer) (rpc, string) {
	t.Helper()
	c := rpc{ss.Server, "alice"}
	id := startTask(t, c, "send", `{}`)
	ss.WaitTasks()
	if g := getTask(t, c, id); g["status"] != "input_required" {
		t.Fatalf("not asking: %v", g)
	}
	return c, id
}

// TestTaskCancelBeforeEffect: a cancel that comes while the run is about
// to commit records the operation first; the handler's commit is refused
// by the ledger, the task stays cancelled, and nothing is sent.
func TestTaskCancelBeforeEffect(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	ss := newSendServer(t, newMemLedger(), func(_ context.Context, stage string) {
		if stage == "before" {
			close(reached)
			<-release
		}
	})
	c, id := startAsking(t, ss)
	mustCall(t, c, taskReq("tasks/update", id, tasksCaps, sendAnswer))
	<-reached
	if ack := mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, "")); ack["resultType"] != "complete" {
		t.Fatalf("cancel ack: %v", ack)
	}
	close(release)
	ss.WaitTasks()
	if g := getTask(t, c, id); g["status"] != "cancelled" || g["result"] != nil {
		t.Fatalf("after the cancel: %v", g)
	}
	if n, r := ss.sends(t, id), ss.refused.Load(); n != 0 || r != 1 {
		t.Fatalf("sends = %d, refused commits = %d; want 0 and 1", n, r)
	}
}

// TestTaskCancelAfterEffect: a cancel that comes after the run committed
// its effect is too late: it is acknowledged, the run's context is not
// ended, and the task completes with the one send.
func TestTaskCancelAfterEffect(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	var ctxEnded atomic.Bool
	ss := newSendServer(t, newMemLedger(), func(ctx context.Context, stage string) {
		if stage == "after" {
			close(reached)
			<-release
			ctxEnded.Store(ctx.Err() != nil)
		}
	})
	c, id := startAsking(t, ss)
	mustCall(t, c, taskReq("tasks/update", id, tasksCaps, sendAnswer))
	<-reached
	if ack := mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, "")); ack["resultType"] != "complete" {
		t.Fatalf("cancel ack: %v", ack)
	}
	if g := getTask(t, c, id); g["status"] != "working" {
		t.Fatalf("a late cancel changed the task: %v", g)
	}
	close(release)
	ss.WaitTasks()
	g := getTask(t, c, id)
	if g["status"] != "completed" || text(g["result"].(map[string]any)) != "sent" {
		t.Fatalf("after the late cancel: %v", g)
	}
	if n := ss.sends(t, id); n != 1 || ctxEnded.Load() {
		t.Fatalf("sends = %d (want 1), run context ended %v", n, ctxEnded.Load())
	}
}

// TestTaskCancelRacesLastAnswer: the last answer and a cancel sent at the
// same time, many times over. Whichever wins, the end state tells the
// truth: cancelled has no send, completed has exactly one.
func TestTaskCancelRacesLastAnswer(t *testing.T) {
	ss := newSendServer(t, newMemLedger(), nil)
	const races = 50
	var cancelled, completed int
	for range races {
		c, id := startAsking(t, ss)
		var wg sync.WaitGroup
		for _, body := range []string{taskReq("tasks/update", id, tasksCaps, sendAnswer), taskReq("tasks/cancel", id, tasksCaps, "")} {
			wg.Go(func() {
				if _, err := c.call(t, body); err != nil {
					t.Errorf("%s: %v", body, err)
				}
			})
		}
		wg.Wait()
		ss.WaitTasks()
		g := getTask(t, c, id)
		n := ss.sends(t, id)
		switch g["status"] {
		case "cancelled":
			cancelled++
			if n != 0 {
				t.Errorf("task %s cancelled with %d sends", id, n)
			}
		case "completed":
			completed++
			if n != 1 || text(g["result"].(map[string]any)) != "sent" {
				t.Errorf("task %s completed with %d sends: %v", id, n, g)
			}
		default:
			t.Errorf("task %s ended %v", id, g["status"])
		}
	}
	t.Logf("%d races: %d cancelled, %d completed, %d commits refused", races, cancelled, completed, ss.refused.Load())
}
