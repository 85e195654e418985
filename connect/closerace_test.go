package connect_test

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// holdingStore holds the caller of a write that ends a flow once that
// write has returned, as a slow commit or a descheduled goroutine does,
// until release: CloseFlowAndRecord, or CloseFlow for a Service that would
// record the outcome in a write of its own after it.
type holdingStore struct {
	*sqlite.Store
	once     sync.Once
	held     chan struct{} // closed when a write is held
	released chan struct{} // closed by release
}

func newHoldingStore(st *sqlite.Store) *holdingStore {
	return &holdingStore{Store: st, held: make(chan struct{}), released: make(chan struct{})}
}

// hold holds the first caller only.
func (h *holdingStore) hold() {
	h.once.Do(func() {
		close(h.held)
		<-h.released
	})
}

func (h *holdingStore) release() { close(h.released) }

func (h *holdingStore) CloseFlowAndRecord(ctx context.Context, flowID string, op *store.Operation) error {
	defer h.hold()
	return h.Store.CloseFlowAndRecord(ctx, flowID, op)
}

func (h *holdingStore) CloseFlow(ctx context.Context, flowID, principal string, now time.Time) error {
	defer h.hold()
	return h.Store.CloseFlow(ctx, flowID, principal, now)
}

// urlAnswer is the retry of ir answering the URL request with action.
func urlAnswer(ir *mcpclient.InputRequired, action string) *mcpclient.Retry {
	return ir.Retry(map[string]any{"billing_key": &mcp.ElicitResult{Action: action}})
}

// A retry that arrives while a decline or cancel is closing the flow
// (held just after the store wrote the close) sees either the open flow or
// the recorded outcome, never a closed flow without one: it gets the
// close's result, not a new link saying the earlier one expired.
func TestStepRetryRacingACloseGetsItsOutcome(t *testing.T) {
	for _, tc := range []struct {
		action string
		text   func(connect.StepTexts) string
	}{
		{mcp.ActionDecline, func(t connect.StepTexts) string { return t.Declined }},
		{mcp.ActionCancel, func(t connect.StepTexts) string { return t.Cancelled }},
	} {
		t.Run(tc.action, func(t *testing.T) {
			var hs *holdingStore
			// No wait: a retry of an open flow is answered at once (with
			// the same link), so nothing here waits on the held close.
			e := newStepEnvWith(t, -1, func(o *connect.Options) {
				hs = newHoldingStore(o.Store.(*sqlite.Store))
				o.Store = hs
			})
			c := e.client(accepting, nil)
			ir := e.first(c)
			closing := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, _, err := c.CallToolOnce(context.Background(), stepTool, nil, urlAnswer(ir, tc.action))
				if err != nil {
					t.Error(err)
				}
				closing <- res
			}()
			<-hs.held
			// The replay of the same state, with accept, while the close
			// is held.
			res, next, err := c.CallToolOnce(t.Context(), stepTool, nil, urlAnswer(ir, mcp.ActionAccept))
			hs.release()
			if err != nil {
				t.Fatal(err)
			}
			if next != nil {
				p := elicitParams(t, next)
				t.Fatalf("retry during the close: input_required %q (%s), want the %s result", p.Message, p.URL, tc.action)
			}
			if !res.IsError || text(res) != tc.text(e.texts()) {
				t.Fatalf("retry during the close: %+v", res)
			}
			if r := <-closing; r == nil || text(r) != tc.text(e.texts()) {
				t.Fatalf("the %s itself: %+v", tc.action, r)
			}
		})
	}
}

// A close whose ledger row cannot be written (the database refuses it: a
// trigger, standing in for a crash after the flow's update) leaves no
// closed flow without an outcome: the decline fails, the flow stays open
// with its link, and once the ledger works again a decline closes it and
// every replay gets that outcome.
func TestStepCloseFailureLeavesTheFlowOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	e := newStepEnvWith(t, -1, func(o *connect.Options) {
		st, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		o.Store = st
	})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client(accepting, nil)
	ir := e.first(c)
	link := elicitParams(t, ir).URL
	u, _ := url.Parse(link)
	flowID := u.Query().Get("flow")

	exec(`CREATE TRIGGER refuse_close BEFORE INSERT ON operations WHEN NEW.id LIKE 'connect_flow_closed.%'
		BEGIN SELECT RAISE(ABORT, 'injected: ledger write refused'); END`)
	if res, next, err := c.CallToolOnce(t.Context(), stepTool, nil, urlAnswer(ir, mcp.ActionDecline)); err == nil {
		t.Fatalf("decline with the ledger refusing: %+v, %+v; want an error", res, next)
	}
	f, err := e.svc.Flow(t.Context(), flowID)
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := e.svc.ClosedOutcome(t.Context(), flowID)
	if err != nil {
		t.Fatal(err)
	}
	if !e.svc.Pending(f) || outcome != "" {
		t.Fatalf("after the failed close: flow pending %v, outcome %q; want the flow open, nothing recorded", e.svc.Pending(f), outcome)
	}
	if _, next := e.answer(c, ir, mcp.ActionAccept); next == nil || elicitParams(t, next).URL != link || elicitParams(t, next).Message != e.texts().Pending {
		t.Fatalf("accept after the failed close: %+v, want the same link, still pending", next)
	}

	exec(`DROP TRIGGER refuse_close`)
	for _, action := range []string{mcp.ActionDecline, mcp.ActionAccept} {
		if res, _ := e.answer(c, ir, action); res == nil || !res.IsError || text(res) != e.texts().Declined {
			t.Fatalf("%s once the ledger works: %+v", action, res)
		}
	}
}
