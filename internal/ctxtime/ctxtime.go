// Package ctxtime holds the one wait that stops with its context, shared
// by handlers that simulate or poll slow work (a task's export, the
// fixture's long jobs, the 2025 bridge's polls).
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
