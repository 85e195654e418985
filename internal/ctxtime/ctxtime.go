// Package ctxtime holds the waits that stop with their context: one
// wait (Sleep), shared by handlers that simulate or poll slow work (a
// task's export, the fixture's long jobs, the 2025 bridge's polls), and
// one repeating loop (Every), shared by the background jobs of elicitd
// and the gateway (sweeps, key-ring and catalog refreshes).
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; then it returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Every calls fn(ctx) every d (the first call d after it starts) until
// ctx ends; it returns then. A call that takes longer than d delays the
// next one rather than overlapping it.
func Every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}
