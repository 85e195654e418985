package postgres

import (
	"context"
	"testing"

	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// TestFlowNotify: a notice sent by one Store (instance) reaches a watch
// opened on another sharing the database, for its flow id only; after the
// last stop the LISTEN connection goes, and a new watch starts it again.
func TestFlowNotify(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	ctx := context.Background()
	open := func() *Store {
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	const id, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	for round := range 2 {
		ch, stop, err := a.WatchFlow(ctx, id)
		if err != nil {
			t.Fatalf("round %d: WatchFlow: %v", round, err)
		}
		// The other flow's notice comes first on the same connection, so
		// once id's has arrived, a wrong delivery would be visible.
		if err := b.NotifyFlow(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := b.NotifyFlow(ctx, id); err != nil {
			t.Fatal(err)
		}
		<-ch
		select {
		case <-ch:
			t.Fatalf("round %d: a second notice: the other flow's reached this watch", round)
		default:
		}
		stop()
		stop() // twice is fine
		a.flows.mu.Lock()
		listening, open := a.flows.l != nil, a.flows.n
		a.flows.mu.Unlock()
		if listening || open != 0 {
			t.Fatalf("round %d: after the last stop: listening=%v watches=%d", round, listening, open)
		}
	}
	// A watch whose context has ended fails without leaking.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := a.WatchFlow(cctx, id); err == nil {
		t.Fatal("WatchFlow with an ended context succeeded")
	}
}
