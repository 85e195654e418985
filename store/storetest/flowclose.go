package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// testCloseFlow: a closed flow can no longer be completed or reused, and
// its expiry is now; closing is refused for a complete flow and for
// another principal's.
func testCloseFlow(t *testing.T, s store.Store) {
	ctx := context.Background()
	cases := []struct {
		name      string
		principal string        // who closes
		complete  bool          // the flow is completed first
		at        time.Duration // when, after creation
		wantErr   error
		wantExp   time.Duration // the flow's expiry afterwards, after creation
	}{
		{"pending", "alice", false, time.Minute, nil, time.Minute},
		{"expired already", "alice", false, 20 * time.Minute, nil, 15 * time.Minute},
		{"complete", "alice", true, 2 * time.Minute, store.ErrConflict, 15 * time.Minute},
		{"other principal", "bob", false, time.Minute, store.ErrNotFound, 15 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
			mustCreateFlow(t, s, f)
			if tc.complete {
				if err := s.CompleteFlow(ctx, f.ID, "alice", []byte("k"), base.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			err := s.CloseFlow(ctx, f.ID, tc.principal, base.Add(tc.at))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("CloseFlow = %v, want %v", err, tc.wantErr)
			}
			got := mustGetFlow(t, s, f.ID)
			if !sameSecond(got.ExpiresAt, base.Add(tc.wantExp)) {
				t.Errorf("ExpiresAt = %v, want %v", got.ExpiresAt, base.Add(tc.wantExp))
			}
			if tc.complete {
				if got.Status != store.FlowComplete {
					t.Errorf("status = %q after a refused close", got.Status)
				}
				return
			}
			// Closed (or left alone for bob): alice can no longer complete it.
			later := base.Add(tc.at + time.Second)
			if tc.wantErr == nil {
				wantErr(t, "CompleteFlow after close", s.CompleteFlow(ctx, f.ID, "alice", []byte("k"), later), store.ErrConflict)
				wantNoSecret(t, s, "alice", "billing_key")
				if p, err := s.PendingFlow(ctx, "alice", "billing_key", later); err == nil {
					t.Errorf("PendingFlow after close = %s", p.ID)
				}
			}
		})
	}
	wantErr(t, "CloseFlow(unknown)", s.CloseFlow(ctx, flowID(t), "alice", base), store.ErrNotFound)
}

// testCloseFlowRace: a close and a completion of one flow at once: exactly
// one wins, and the secret is stored exactly when the completion won.
func testCloseFlowRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 8 {
		f := newFlow(t, "alice", "k"+string(rune('a'+i)), base, 15*time.Minute)
		mustCreateFlow(t, s, f)
		var wg sync.WaitGroup
		var closeErr, completeErr error
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; closeErr = s.CloseFlow(ctx, f.ID, "alice", base.Add(time.Minute)) }()
		go func() {
			defer wg.Done()
			<-start
			completeErr = s.CompleteFlow(ctx, f.ID, "alice", []byte("k"), base.Add(time.Minute))
		}()
		close(start)
		wg.Wait()
		got := mustGetFlow(t, s, f.ID)
		switch {
		case closeErr == nil && errors.Is(completeErr, store.ErrConflict):
			if got.Status != store.FlowPending {
				t.Fatalf("close won but status = %q", got.Status)
			}
			wantNoSecret(t, s, "alice", f.Purpose)
		case completeErr == nil && errors.Is(closeErr, store.ErrConflict):
			if got.Status != store.FlowComplete {
				t.Fatalf("completion won but status = %q", got.Status)
			}
			wantSecret(t, s, "alice", f.Purpose, []byte("k"))
		default:
			t.Fatalf("close = %v, complete = %v: want exactly one to win", closeErr, completeErr)
		}
	}
}

// closeOp is the ledger row that records why f was closed, at at: one id
// per flow, as connect names it.
func closeOp(f *store.Flow, outcome string, at time.Time) *store.Operation {
	return &store.Operation{ID: "close." + f.ID, Principal: f.Principal, Name: "close " + f.Purpose,
		Outcome: outcome, Result: []byte(outcome), CompletedAt: at}
}

// wantOutcome fails unless the ledger holds id with outcome; "" wants
// no row.
func wantOutcome(t *testing.T, s store.Store, id, outcome string) {
	t.Helper()
	got, err := s.GetOperation(context.Background(), id)
	switch {
	case outcome == "" && !errors.Is(err, store.ErrNotFound):
		t.Fatalf("GetOperation(%s) = %+v, %v; want ErrNotFound", id, got, err)
	case outcome == "":
	case err != nil:
		t.Fatalf("GetOperation(%s): %v", id, err)
	case got.Outcome != outcome:
		t.Fatalf("GetOperation(%s).Outcome = %q, want %q", id, got.Outcome, outcome)
	}
}

// wantRecorded fails unless err is a *store.RecordedError (so ErrConflict
// too) carrying the row of id with outcome.
func wantRecorded(t *testing.T, what string, err error, id, outcome string) {
	t.Helper()
	var rec *store.RecordedError
	if !errors.As(err, &rec) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: err = %v, want a *store.RecordedError", what, err)
	}
	if rec.Op == nil || rec.Op.ID != id || rec.Op.Outcome != outcome || string(rec.Op.Result) != outcome {
		t.Fatalf("%s: recorded %+v, want %s with outcome %q", what, rec.Op, id, outcome)
	}
}

// closeTTL is the lifetime of the flows testCloseFlowAndRecord closes.
const closeTTL = 15 * time.Minute

// closeCase is one case of testCloseFlowAndRecord.
type closeCase struct {
	name    string
	prepare func(t *testing.T, f *store.Flow) // what happened to f before
	by      string                            // who closes
	at      time.Duration                     // when, after creation
	wantErr error                             // nil, store.ErrNotFound, or store.ErrConflict (not recorded)
	// recorded is the outcome the ledger already holds: the call gets
	// it in a *store.RecordedError.
	recorded string
	wantExp  time.Duration // the flow's expiry afterwards, after creation
	status   store.FlowStatus
	// untouched: the flow is left pending and open, so alice can
	// still finish it.
	untouched bool
}

// testCloseFlowAndRecord: the flow is closed and the operation recorded
// together, or neither is written: a recorded operation id wins over
// every flow state (the first close's outcome holds), then the flow's
// own refusals (complete, another principal's, none).
func testCloseFlowAndRecord(t *testing.T, s store.Store) {
	ctx := context.Background()
	const ttl = closeTTL
	cases := []closeCase{{name: "pending", at: time.Minute, wantExp: time.Minute},
		{name: "expired already", at: 20 * time.Minute, wantExp: ttl},
		{name: "closed before without a record", prepare: func(t *testing.T, f *store.Flow) {
			if err := s.CloseFlow(ctx, f.ID, f.Principal, base.Add(30*time.Second)); err != nil {
				t.Fatal(err)
			}
		}, at: time.Minute, wantExp: 30 * time.Second},
		{name: "closed and recorded by an earlier close", prepare: func(t *testing.T, f *store.Flow) {
			if err := s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, "declined", base.Add(30*time.Second))); err != nil {
				t.Fatal(err)
			}
		}, at: time.Minute, recorded: "declined", wantExp: 30 * time.Second},
		{name: "operation id taken, flow pending", prepare: func(t *testing.T, f *store.Flow) {
			mustComplete(t, s, closeOp(f, "other", base), nil)
		}, at: time.Minute, recorded: "other", wantExp: ttl, untouched: true},
		{name: "complete", prepare: func(t *testing.T, f *store.Flow) {
			if err := s.CompleteFlow(ctx, f.ID, f.Principal, []byte("k"), base.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}, at: 2 * time.Minute, wantErr: store.ErrConflict, wantExp: ttl, status: store.FlowComplete},
		{name: "complete, operation id taken", prepare: func(t *testing.T, f *store.Flow) {
			if err := s.CompleteFlow(ctx, f.ID, f.Principal, []byte("k"), base.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			mustComplete(t, s, closeOp(f, "cancelled", base), nil)
		}, at: 2 * time.Minute, recorded: "cancelled", wantExp: ttl, status: store.FlowComplete},
		{name: "other principal", by: "bob", at: time.Minute, wantErr: store.ErrNotFound, wantExp: ttl, untouched: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s) })
	}
	testCloseFlowAndRecordEdges(t, s)
}

// testCloseFlowAndRecordEdges: a flow that never existed, one swept after
// its recorded close, and operations that are not valid.
func testCloseFlowAndRecordEdges(t *testing.T, s store.Store) {
	ctx := context.Background()
	const ttl = closeTTL
	t.Run("unknown flow", func(t *testing.T) {
		f := newFlow(t, "alice", "billing_key", base, ttl) // never created
		op := closeOp(f, "declined", base)
		if err := s.CloseFlowAndRecord(ctx, f.ID, op); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("CloseFlowAndRecord = %v, want ErrNotFound", err)
		}
		wantOutcome(t, s, op.ID, "")
	})
	t.Run("swept after a recorded close", func(t *testing.T) {
		f := newFlow(t, "alice", "billing_key", base, ttl)
		mustCreateFlow(t, s, f)
		if err := s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, "cancelled", base.Add(time.Minute))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteExpired(ctx, base.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "GetFlow after the sweep", func() error { _, err := s.GetFlow(ctx, f.ID); return err }(), store.ErrNotFound)
		wantRecorded(t, "CloseFlowAndRecord after the sweep", s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, "declined", base.Add(2*time.Hour))), "close."+f.ID, "cancelled")
	})
	t.Run("invalid operation", func(t *testing.T) {
		f := newFlow(t, "alice", "billing_key", base, ttl)
		mustCreateFlow(t, s, f)
		long := closeOp(f, "declined", base)
		long.ID = string(bytes.Repeat([]byte{'x'}, store.MaxOperationIDLen+1))
		empty := closeOp(f, "declined", base)
		empty.ID = ""
		for _, op := range []*store.Operation{nil, empty, long} {
			if err := s.CloseFlowAndRecord(ctx, f.ID, op); err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("CloseFlowAndRecord(%v) = %v, want an invalid-argument error", op, err)
			}
		}
		if got := mustGetFlow(t, s, f.ID); !sameSecond(got.ExpiresAt, f.ExpiresAt) {
			t.Fatalf("an invalid operation closed the flow: expires %v", got.ExpiresAt)
		}
	})
}

// run creates a flow of alice's, applies prepare, closes it as tc says
// and checks the ledger and the flow afterwards.
func (tc closeCase) run(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFlow(t, "alice", "billing_key", base, closeTTL)
	mustCreateFlow(t, s, f)
	if tc.prepare != nil {
		tc.prepare(t, f)
	}
	op := closeOp(f, "denied", base.Add(tc.at))
	if tc.by != "" {
		op.Principal = tc.by
	}
	tc.checkResult(t, s, op, s.CloseFlowAndRecord(ctx, f.ID, op))
	got := mustGetFlow(t, s, f.ID)
	status := tc.status
	if status == "" {
		status = store.FlowPending
	}
	if got.Status != status || !sameSecond(got.ExpiresAt, base.Add(tc.wantExp)) {
		t.Fatalf("flow %s expiring %v, want %s expiring %v", got.Status, got.ExpiresAt, status, base.Add(tc.wantExp))
	}
	if tc.untouched {
		if err := s.CompleteFlow(ctx, f.ID, "alice", []byte("k"), base.Add(tc.at+time.Second)); err != nil {
			t.Fatalf("CompleteFlow of the untouched flow: %v", err)
		}
	}
}

// checkResult checks what CloseFlowAndRecord(op) returned and what the
// ledger holds for op.ID after it.
func (tc closeCase) checkResult(t *testing.T, s store.Store, op *store.Operation, err error) {
	t.Helper()
	switch {
	case tc.recorded != "":
		wantRecorded(t, "CloseFlowAndRecord", err, op.ID, tc.recorded)
		wantOutcome(t, s, op.ID, tc.recorded)
	case tc.wantErr != nil:
		var rec *store.RecordedError
		if !errors.Is(err, tc.wantErr) || errors.As(err, &rec) {
			t.Fatalf("CloseFlowAndRecord = %v, want %v (not a recorded operation)", err, tc.wantErr)
		}
		wantOutcome(t, s, op.ID, "")
	case err != nil:
		t.Fatalf("CloseFlowAndRecord: %v", err)
	default:
		got, gerr := s.GetOperation(context.Background(), op.ID)
		if gerr != nil || got.Principal != "alice" || got.Name != op.Name || got.Outcome != "denied" ||
			string(got.Result) != "denied" || !sameSecond(got.CompletedAt, op.CompletedAt) {
			t.Fatalf("GetOperation = %+v, %v; want %+v", got, gerr, op)
		}
	}
}

// testCloseFlowAndRecordRace: calls that race for one flow. Closes with
// different outcomes: one succeeds, every other gets its row, and the
// ledger and the flow agree with it. A close and a completion: exactly
// one wins, the operation is recorded exactly when the close won. A close
// and a CompleteOperation of its id: exactly one wins, and the flow is
// closed exactly when the close won.
func testCloseFlowAndRecordRace(t *testing.T, s store.Store) {
	raceCloses(t, s)
	raceCloseAndComplete(t, s)
	raceCloseAndLedger(t, s)
}

// raceAll runs fns at once and waits for them.
func raceAll(fns ...func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, fn := range fns {
		wg.Go(func() { <-start; fn() })
	}
	close(start)
	wg.Wait()
}

// raceCloses: closes with different outcomes; one wins, the others get
// its row.
func raceCloses(t *testing.T, s store.Store) {
	ctx := context.Background()
	outcomes := []string{"declined", "cancelled", "denied", "declined"}
	for i := range 8 {
		f := newFlow(t, "alice", "closes", base, 15*time.Minute)
		mustCreateFlow(t, s, f)
		errs := make([]error, len(outcomes))
		var fns []func()
		for j, o := range outcomes {
			fns = append(fns, func() {
				errs[j] = s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, o, base.Add(time.Duration(j+1)*time.Minute)))
			})
		}
		raceAll(fns...)
		won := -1
		for j, err := range errs {
			if err == nil {
				if won >= 0 {
					t.Fatalf("round %d: closes %d and %d both succeeded", i, won, j)
				}
				won = j
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no close succeeded: %v", i, errs)
		}
		for j, err := range errs {
			if j != won {
				wantRecorded(t, fmt.Sprintf("round %d, close %d", i, j), err, "close."+f.ID, outcomes[won])
			}
		}
		wantOutcome(t, s, "close."+f.ID, outcomes[won])
		if got := mustGetFlow(t, s, f.ID); !sameSecond(got.ExpiresAt, base.Add(time.Duration(won+1)*time.Minute)) {
			t.Fatalf("round %d: flow expires %v, want the winning close's time", i, got.ExpiresAt)
		}
	}
}

// raceCloseAndComplete: a close and a completion; exactly one wins.
func raceCloseAndComplete(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 8 {
		f := newFlow(t, "alice", "k"+string(rune('a'+i)), base, 15*time.Minute)
		mustCreateFlow(t, s, f)
		var closeErr, completeErr error
		raceAll(func() { closeErr = s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, "declined", base.Add(time.Minute))) },
			func() { completeErr = s.CompleteFlow(ctx, f.ID, "alice", []byte("k"), base.Add(time.Minute)) })
		var rec *store.RecordedError
		switch {
		case closeErr == nil && errors.Is(completeErr, store.ErrConflict):
			wantOutcome(t, s, "close."+f.ID, "declined")
			wantNoSecret(t, s, "alice", f.Purpose)
		case completeErr == nil && errors.Is(closeErr, store.ErrConflict) && !errors.As(closeErr, &rec):
			wantOutcome(t, s, "close."+f.ID, "")
			wantSecret(t, s, "alice", f.Purpose, []byte("k"))
		default:
			t.Fatalf("round %d: close = %v, complete = %v: want exactly one to win", i, closeErr, completeErr)
		}
	}
}

// raceCloseAndLedger: a close and a CompleteOperation of its id; exactly
// one wins.
func raceCloseAndLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 8 {
		f := newFlow(t, "alice", "ledger", base, 15*time.Minute)
		mustCreateFlow(t, s, f)
		var closeErr, opErr error
		raceAll(func() { closeErr = s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, "declined", base.Add(time.Minute))) },
			func() { opErr = s.CompleteOperation(ctx, closeOp(f, "other", base), nil) })
		exp := mustGetFlow(t, s, f.ID).ExpiresAt
		switch {
		case closeErr == nil && errors.Is(opErr, store.ErrConflict):
			wantOutcome(t, s, "close."+f.ID, "declined")
			if !sameSecond(exp, base.Add(time.Minute)) {
				t.Fatalf("round %d: the close won but the flow expires %v", i, exp)
			}
		case opErr == nil:
			wantRecorded(t, fmt.Sprintf("round %d", i), closeErr, "close."+f.ID, "other")
			if !sameSecond(exp, f.ExpiresAt) {
				t.Fatalf("round %d: the close lost but the flow expires %v", i, exp)
			}
		default:
			t.Fatalf("round %d: close = %v, CompleteOperation = %v: want exactly one to win", i, closeErr, opErr)
		}
	}
}

// CheckCloseFlowAtomic checks, on an empty store s, that
// CloseFlowAndRecord writes nothing when its ledger row cannot be written
// after the flow was closed in the same transaction, as when the process
// dies between the two: the flow stays pending and completable.
// breakLedger must make every later insert of an operation fail (a
// driver's test installs a trigger); s is unusable for the ledger after.
func CheckCloseFlowAtomic(t *testing.T, s store.Store, breakLedger func(t *testing.T)) {
	t.Helper()
	ctx := context.Background()
	f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
	mustCreateFlow(t, s, f)
	breakLedger(t)
	err := s.CloseFlowAndRecord(ctx, f.ID, closeOp(f, "declined", base.Add(time.Minute)))
	if err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CloseFlowAndRecord with the ledger refusing writes = %v, want its failure", err)
	}
	wantOutcome(t, s, "close."+f.ID, "")
	got := mustGetFlow(t, s, f.ID)
	if got.Status != store.FlowPending || !sameSecond(got.ExpiresAt, f.ExpiresAt) {
		t.Fatalf("flow %s expiring %v after the failed close, want pending expiring %v", got.Status, got.ExpiresAt, f.ExpiresAt)
	}
	if p, err := s.PendingFlow(ctx, "alice", "billing_key", base.Add(2*time.Minute)); err != nil || p.ID != f.ID {
		t.Fatalf("PendingFlow after the failed close = %v, %v; want the flow", p, err)
	}
	if err := s.CompleteFlow(ctx, f.ID, "alice", []byte("k"), base.Add(2*time.Minute)); err != nil {
		t.Fatalf("CompleteFlow after the failed close: %v", err)
	}
}
