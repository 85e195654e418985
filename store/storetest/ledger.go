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

// ledgerTests are the Ledger part of the contract.
var ledgerTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"OperationRoundTrip", testOperationRoundTrip},
	{"OperationNotFound", testOperationNotFound},
	{"OperationInvalidID", testOperationInvalidID},
	{"OperationReplayDoesNotRunEffect", testOperationReplay},
	{"EffectErrorWritesNothing", testEffectErrorWritesNothing},
	{"RecordInsertConflict", testRecordInsertConflict},
	{"RecordUpdateVersion", testRecordUpdateVersion},
	{"ListRecords", testListRecords},
	{"ConcurrentCompleteOperation", testConcurrentCompleteOperation},
	{"ConcurrentTransitionOneWinner", testConcurrentTransition},
	{"DeleteExpiredKeepsLedger", testDeleteExpiredKeepsLedger},
}

var errEffect = errors.New("storetest: effect refused")

func newOp(t *testing.T, principal string) *store.Operation {
	t.Helper()
	return &store.Operation{ID: flowID(t), Principal: principal, Name: "tools/call export_report", CompletedAt: base}
}

func draft(id, principal string) *store.Record {
	return &store.Record{Kind: "report_draft", ID: id, Principal: principal, Status: "prepared",
		Data: []byte(`{"label":"Q2 \u003cb\u003e"}`), CreatedAt: base, UpdatedAt: base}
}

func mustComplete(t *testing.T, s store.Store, op *store.Operation, effect func(context.Context, store.Effects) error) {
	t.Helper()
	if err := s.CompleteOperation(context.Background(), op, effect); err != nil {
		t.Fatalf("CompleteOperation(%s): %v", op.ID, err)
	}
}

func wantRecords(t *testing.T, s store.Store, kind, principal string, n int) []*store.Record {
	t.Helper()
	rs, err := s.ListRecords(context.Background(), kind, principal)
	if err != nil {
		t.Fatalf("ListRecords(%q, %q): %v", kind, principal, err)
	}
	if rs == nil || len(rs) != n {
		t.Fatalf("ListRecords(%q, %q) = %d records (nil: %v), want %d", kind, principal, len(rs), rs == nil, n)
	}
	return rs
}

func testOperationRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	op := newOp(t, "alice")
	d := draft("d-1", "alice")
	mustComplete(t, s, op, insertAndRecord(op, d))
	got, err := s.GetOperation(ctx, op.ID)
	if err != nil {
		t.Fatalf("GetOperation: %v", err)
	}
	if got.ID != op.ID || got.Principal != "alice" || got.Name != op.Name || got.Outcome != "prepared" ||
		string(got.Result) != `{"draft_id":"d-1"}` || !sameSecond(got.CompletedAt, base) {
		t.Fatalf("GetOperation = %+v", got)
	}
	wantStoredDraft(t, s, d, op.ID)
	// A nil effect records the operation alone; nil Result reads as empty.
	bare := newOp(t, "alice")
	bare.Outcome = "declined"
	mustComplete(t, s, bare, nil)
	if got, err := s.GetOperation(ctx, bare.ID); err != nil || got.Outcome != "declined" || got.Result == nil || len(got.Result) != 0 {
		t.Fatalf("bare operation: %+v, %v", got, err)
	}
}

// insertAndRecord is an effect that inserts d, checks what Insert set and
// that Get sees it inside the transaction, then decides op's recorded
// outcome and result.
func insertAndRecord(op *store.Operation, d *store.Record) func(context.Context, store.Effects) error {
	return func(ctx context.Context, fx store.Effects) error {
		if err := fx.Insert(ctx, d); err != nil {
			return err
		}
		if d.Version != 1 || d.OperationID != op.ID {
			return fmt.Errorf("after Insert: version %d, operation %q", d.Version, d.OperationID)
		}
		got, err := fx.Get(ctx, d.Kind, d.ID)
		if err != nil || got.Status != "prepared" {
			return fmt.Errorf("Get inside the transaction: %+v, %v", got, err)
		}
		op.Outcome, op.Result = "prepared", []byte(`{"draft_id":"d-1"}`)
		return nil
	}
}

// wantStoredDraft fails unless the stored d is version 1, written by
// operation opID at base.
func wantStoredDraft(t *testing.T, s store.Store, d *store.Record, opID string) {
	t.Helper()
	r, err := s.GetRecord(context.Background(), d.Kind, d.ID)
	if err != nil {
		t.Fatalf("GetRecord: %v", err)
	}
	if r.Principal != d.Principal || r.Status != "prepared" || !bytes.Equal(r.Data, d.Data) || r.Version != 1 ||
		r.OperationID != opID || !sameSecond(r.CreatedAt, base) || !sameSecond(r.UpdatedAt, base) {
		t.Fatalf("GetRecord = %+v", r)
	}
}

func testOperationNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	if op, err := s.GetOperation(ctx, flowID(t)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetOperation(unknown) = %v, %v", op, err)
	}
	if r, err := s.GetRecord(ctx, "report_draft", "none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRecord(unknown) = %v, %v", r, err)
	}
	wantRecords(t, s, "report_draft", "alice", 0)
}

func testOperationInvalidID(t *testing.T, s store.Store) {
	ran := false
	for _, id := range []string{"", string(make([]byte, store.MaxOperationIDLen+1))} {
		err := s.CompleteOperation(context.Background(), &store.Operation{ID: id, CompletedAt: base},
			func(context.Context, store.Effects) error { ran = true; return nil })
		if err == nil || errors.Is(err, store.ErrConflict) {
			t.Errorf("CompleteOperation(id of %d bytes) = %v, want a plain error", len(id), err)
		}
	}
	if ran {
		t.Fatal("effect ran for an invalid operation id")
	}
}

func testOperationReplay(t *testing.T, s store.Store) {
	ctx := context.Background()
	op := newOp(t, "alice")
	op.Outcome, op.Result = "sent", []byte(`first`)
	mustComplete(t, s, op, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: "report_send", ID: "s-1", Principal: "alice", Status: "sent", CreatedAt: base, UpdatedAt: base})
	})
	for i := range 3 {
		ran := false
		replay := *op
		replay.Outcome, replay.Result = "sent", []byte(fmt.Sprintf("replay-%d", i))
		err := s.CompleteOperation(ctx, &replay, func(ctx context.Context, fx store.Effects) error {
			ran = true
			return fx.Insert(ctx, &store.Record{Kind: "report_send", ID: fmt.Sprintf("s-r%d", i), Principal: "alice", Status: "sent", CreatedAt: base, UpdatedAt: base})
		})
		wantErr(t, "replayed CompleteOperation", err, store.ErrConflict)
		if ran {
			t.Fatal("effect ran again for a recorded operation")
		}
		// The error carries the recorded row, so a replay needs no
		// GetOperation.
		var rec *store.RecordedError
		if !errors.As(err, &rec) || rec.Op == nil {
			t.Fatalf("replayed CompleteOperation = %v, want a *store.RecordedError with the row", err)
		}
		if got := rec.Op; got.ID != op.ID || got.Principal != "alice" || got.Outcome != "sent" || string(got.Result) != "first" ||
			!got.CompletedAt.Equal(op.CompletedAt) {
			t.Fatalf("RecordedError.Op = %+v, want the first call's row %+v", got, op)
		}
	}
	wantRecords(t, s, "report_send", "alice", 1)
	if got, err := s.GetOperation(ctx, op.ID); err != nil || string(got.Result) != "first" {
		t.Fatalf("recorded result changed: %+v, %v", got, err)
	}
}

func testEffectErrorWritesNothing(t *testing.T, s store.Store) {
	ctx := context.Background()
	op := newOp(t, "alice")
	err := s.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
		if err := fx.Insert(ctx, draft("d-1", "alice")); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", errEffect)
	})
	if !errors.Is(err, errEffect) {
		t.Fatalf("CompleteOperation = %v, want the effect's error", err)
	}
	if _, err := s.GetOperation(ctx, op.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ledger row written despite the effect's error: %v", err)
	}
	if _, err := s.GetRecord(ctx, "report_draft", "d-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("effect's record kept despite its error: %v", err)
	}
	// The operation can still complete later, once.
	mustComplete(t, s, op, func(ctx context.Context, fx store.Effects) error { return fx.Insert(ctx, draft("d-1", "alice")) })
	wantRecords(t, s, "report_draft", "alice", 1)
}

func testRecordInsertConflict(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustComplete(t, s, newOp(t, "alice"), func(ctx context.Context, fx store.Effects) error { return fx.Insert(ctx, draft("d-1", "alice")) })
	op := newOp(t, "mallory")
	var insertErr error
	err := s.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
		insertErr = fx.Insert(ctx, draft("d-1", "mallory"))
		return insertErr
	})
	wantErr(t, "Insert(duplicate)", insertErr, store.ErrConflict)
	wantErr(t, "CompleteOperation(duplicate record)", err, store.ErrConflict)
	if _, err := s.GetOperation(ctx, op.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ledger row written for a refused effect: %v", err)
	}
	if r, _ := s.GetRecord(ctx, "report_draft", "d-1"); r == nil || r.Principal != "alice" {
		t.Fatalf("duplicate insert overwrote the record: %+v", r)
	}
	// The same id under another kind is another record.
	mustComplete(t, s, newOp(t, "alice"), func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: "report_send", ID: "d-1", Principal: "alice", Status: "sent"})
	})
	// Invalid keys are refused.
	err = s.CompleteOperation(ctx, newOp(t, "alice"), func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: "", ID: "x"})
	})
	if err == nil {
		t.Fatal("record with an empty kind inserted")
	}
}

func testRecordUpdateVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustComplete(t, s, newOp(t, "alice"), func(ctx context.Context, fx store.Effects) error { return fx.Insert(ctx, draft("d-1", "alice")) })
	stale, err := s.GetRecord(ctx, "report_draft", "d-1")
	if err != nil {
		t.Fatal(err)
	}
	send := newOp(t, "alice")
	mustComplete(t, s, send, func(ctx context.Context, fx store.Effects) error {
		r, err := fx.Get(ctx, "report_draft", "d-1")
		if err != nil {
			return err
		}
		r.Status, r.UpdatedAt = "sent", base.Add(time.Minute)
		if err := fx.Update(ctx, r); err != nil {
			return err
		}
		if r.Version != 2 || r.OperationID != send.ID {
			return fmt.Errorf("after Update: version %d, operation %q", r.Version, r.OperationID)
		}
		return nil
	})
	got, err := s.GetRecord(ctx, "report_draft", "d-1")
	if err != nil || got.Status != "sent" || got.Version != 2 || got.OperationID != send.ID ||
		!sameSecond(got.UpdatedAt, base.Add(time.Minute)) || !sameSecond(got.CreatedAt, base) {
		t.Fatalf("after update: %+v, %v", got, err)
	}
	// An update based on the old version is refused, and nothing is written.
	late := newOp(t, "alice")
	var updErr error
	err = s.CompleteOperation(ctx, late, func(ctx context.Context, fx store.Effects) error {
		stale.Status = "prepared"
		updErr = fx.Update(ctx, stale)
		return updErr
	})
	wantErr(t, "Update(stale version)", updErr, store.ErrConflict)
	wantErr(t, "CompleteOperation(stale update)", err, store.ErrConflict)
	if got, _ := s.GetRecord(ctx, "report_draft", "d-1"); got.Status != "sent" || got.Version != 2 {
		t.Fatalf("stale update written: %+v", got)
	}
	var missErr error
	_ = s.CompleteOperation(ctx, newOp(t, "alice"), func(ctx context.Context, fx store.Effects) error {
		missErr = fx.Update(ctx, &store.Record{Kind: "report_draft", ID: "none", Version: 1})
		return missErr
	})
	wantErr(t, "Update(missing)", missErr, store.ErrNotFound)
}

func testListRecords(t *testing.T, s store.Store) {
	entries := []struct {
		kind, id, principal string
		at                  time.Duration
	}{
		{"report_draft", "b", "alice", 2 * time.Second},
		{"report_draft", "a", "alice", 1 * time.Second},
		{"report_draft", "c", "alice", 2 * time.Second},
		{"report_draft", "x", "bob", 0},
		{"report_send", "s", "alice", 0},
	}
	for _, e := range entries {
		mustComplete(t, s, newOp(t, e.principal), func(ctx context.Context, fx store.Effects) error {
			return fx.Insert(ctx, &store.Record{Kind: e.kind, ID: e.id, Principal: e.principal, Status: "prepared",
				CreatedAt: base.Add(e.at), UpdatedAt: base.Add(e.at)})
		})
	}
	rs := wantRecords(t, s, "report_draft", "alice", 3)
	if rs[0].ID != "a" || rs[1].ID != "b" || rs[2].ID != "c" {
		t.Fatalf("order = %s %s %s, want a b c (CreatedAt, then ID)", rs[0].ID, rs[1].ID, rs[2].ID)
	}
	wantRecords(t, s, "report_draft", "bob", 1)
	wantRecords(t, s, "report_send", "alice", 1)
	wantRecords(t, s, "report_send", "bob", 0)
}

func testConcurrentCompleteOperation(t *testing.T, s store.Store) {
	ctx := context.Background()
	op := newOp(t, "alice")
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			mine := *op
			errs[i] = s.CompleteOperation(ctx, &mine, func(ctx context.Context, fx store.Effects) error {
				return fx.Insert(ctx, &store.Record{Kind: "report_send", ID: fmt.Sprintf("send-%d", i), Principal: "alice", Status: "sent"})
			})
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrConflict):
			var rec *store.RecordedError
			if errors.As(err, &rec) && (rec.Op == nil || rec.Op.ID != op.ID) {
				t.Errorf("goroutine %d: RecordedError.Op = %+v, want operation %s", i, rec.Op, op.ID)
			}
		default:
			t.Errorf("goroutine %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d calls recorded the operation, want exactly 1", ok)
	}
	wantRecords(t, s, "report_send", "alice", 1)
	if _, err := s.GetOperation(ctx, op.ID); err != nil {
		t.Fatal(err)
	}
}

// testConcurrentTransition: several operations race to move one record
// from "prepared" to "sent"; exactly one may win (the others see "sent"
// or lose on the version).
func testConcurrentTransition(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustComplete(t, s, newOp(t, "alice"), func(ctx context.Context, fx store.Effects) error { return fx.Insert(ctx, draft("d-1", "alice")) })
	const n = 12
	errs := make([]error, n)
	ops := make([]*store.Operation, n)
	for i := range ops {
		ops[i] = newOp(t, "alice")
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.CompleteOperation(ctx, ops[i], func(ctx context.Context, fx store.Effects) error {
				r, err := fx.Get(ctx, "report_draft", "d-1")
				if err != nil {
					return err
				}
				if r.Status != "prepared" {
					return errEffect
				}
				r.Status = "sent"
				if err := fx.Update(ctx, r); err != nil {
					return err
				}
				return fx.Insert(ctx, &store.Record{Kind: "report_send", ID: fmt.Sprintf("send-%d", i), Principal: "alice", Status: "sent"})
			})
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, errEffect), errors.Is(err, store.ErrConflict):
		default:
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d operations sent the draft, want exactly 1", won)
	}
	wantRecords(t, s, "report_send", "alice", 1)
}

func testDeleteExpiredKeepsLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	op := newOp(t, "alice")
	mustComplete(t, s, op, func(ctx context.Context, fx store.Effects) error { return fx.Insert(ctx, draft("d-1", "alice")) })
	if _, err := s.DeleteExpired(ctx, base.Add(1000*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetOperation(ctx, op.ID); err != nil {
		t.Fatalf("operation swept: %v", err)
	}
	wantRecords(t, s, "report_draft", "alice", 1)
}
