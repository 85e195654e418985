package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"github.com/mcp-elicit/elicit/store/storetest"
)

// TestCloseFlowAtomic: a ledger row that cannot be written (a trigger
// refuses it, in the statement that closes the flow) takes the close back
// with it.
func TestCloseFlowAtomic(t *testing.T) {
	s, err := Open(t.Context(), pgtest.SchemaDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckCloseFlowAtomic(t, s, func(t *testing.T) {
		if _, err := s.pool.Exec(t.Context(), `CREATE FUNCTION refuse_operations() RETURNS trigger LANGUAGE plpgsql AS
			$$BEGIN RAISE EXCEPTION 'injected: ledger write refused'; END$$`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(t.Context(),
			`CREATE TRIGGER refuse_operations BEFORE INSERT ON operations FOR EACH ROW EXECUTE FUNCTION refuse_operations()`); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCloseFlowAndRecordRoundTrips: closing a flow with its ledger row
// takes one round trip whatever the answer (closed, already recorded,
// flow complete, no such flow); the close and the ledger row as two
// calls took three (CloseFlow, then CompleteOperation's two).
func TestCloseFlowAndRecordRoundTrips(t *testing.T) {
	rt := &RoundTrips{}
	// One connection, warmed up below: every statement is prepared on it,
	// as in steady state.
	s, err := OpenWith(t.Context(), pgtest.SchemaDSN(t), &Options{MaxConns: 1, DialFunc: rt.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	flow := func(id string) *store.Flow {
		f := &store.Flow{ID: id, Principal: "alice", Purpose: "billing_key", Status: store.FlowPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateFlow(ctx, f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	closeOp := func(f *store.Flow, outcome string) *store.Operation {
		return &store.Operation{ID: "close." + f.ID, Principal: "alice", Name: "close", Outcome: outcome, CompletedAt: now}
	}
	warm := flow("warm")
	if err := s.CloseFlowAndRecord(ctx, warm.ID, closeOp(warm, "declined")); err != nil {
		t.Fatal(err)
	}
	f, done := flow("f"), flow("done")
	if err := s.CompleteFlow(ctx, done.ID, "alice", []byte("k"), now); err != nil {
		t.Fatal(err)
	}
	var rec *store.RecordedError
	for _, tc := range []struct {
		name string
		f    *store.Flow
		ok   func(error) bool
	}{
		{"close", f, func(err error) bool { return err == nil }},
		{"close again", f, func(err error) bool { return errors.As(err, &rec) && rec.Op.Outcome == "declined" }},
		{"complete flow", done, func(err error) bool { return errors.Is(err, store.ErrConflict) && !errors.As(err, &rec) }},
		{"no such flow", &store.Flow{ID: "none"}, func(err error) bool { return errors.Is(err, store.ErrNotFound) }},
	} {
		rt.Reset()
		err := s.CloseFlowAndRecord(ctx, tc.f.ID, closeOp(tc.f, "declined"))
		n := rt.Reset()
		t.Logf("%s: %d round trips", tc.name, n)
		if !tc.ok(err) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n != 1 {
			t.Errorf("%s: %d round trips, want 1", tc.name, n)
		}
	}
}
