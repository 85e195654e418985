package storetest

import (
	"context"
	"errors"
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
