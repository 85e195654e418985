package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

func TestSealingKey(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	key := func(id string, created, activates time.Time) *store.StateKey {
		return &store.StateKey{ID: id, Sealed: []byte{1}, CreatedAt: created, ActivatesAt: activates}
	}
	// Newest first, as StateKeys returns them.
	ring := []*store.StateKey{
		key("c", t0.Add(time.Minute), t0.Add(time.Hour)),
		key("b", t0, time.Time{}), // zero: seals from creation
		key("a", t0.Add(-time.Hour), time.Time{}),
	}
	allPending := []*store.StateKey{key("y", t0, t0.Add(2*time.Hour)), key("x", t0, t0.Add(time.Hour))}
	tests := []struct {
		name string
		keys []*store.StateKey
		now  time.Time
		want int
	}{
		{"empty", nil, t0, -1},
		{"before c activates", ring, t0.Add(59 * time.Minute), 1},
		{"when c activates", ring, t0.Add(time.Hour), 0},
		{"before b", ring, t0.Add(-time.Second), 2},
		{"all pending: the oldest", allPending, t0, 1},
		{"an older key activating later is passed over", []*store.StateKey{key("n", t0, time.Time{}), key("o", t0, t0.Add(time.Hour))}, t0.Add(2 * time.Hour), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.SealingKey(tt.keys, tt.now); got != tt.want {
				t.Fatalf("SealingKey = %d, want %d", got, tt.want)
			}
		})
	}
}

func ExampleSealingKey() {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ring := []*store.StateKey{ // newest first
		{ID: "k2", Sealed: []byte{1}, CreatedAt: t0, ActivatesAt: t0.Add(2 * time.Minute)},
		{ID: "k1", Sealed: []byte{1}, CreatedAt: t0.Add(-24 * time.Hour)},
	}
	for _, at := range []time.Duration{0, 2 * time.Minute} {
		fmt.Printf("+%v: %s seals\n", at, ring[store.SealingKey(ring, t0.Add(at))].ID)
	}
	// Output:
	// +0s: k1 seals
	// +2m0s: k2 seals
}
