package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// CloseFlow implements store.Store. As in CompleteFlow, the conditional
// UPDATE is the guard: a flow completed first is left alone, and a
// completion that comes second finds it expired.
func (s *Store) CloseFlow(ctx context.Context, flowID, principal string, now time.Time) error {
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		res, err := w.exec(ctx,
			`UPDATE flows SET expires_at = MIN(expires_at, ?)
			 WHERE id = ? AND principal = ? AND status = 'pending'`,
			toNanos(now), flowID, principal)
		if err != nil {
			return s.errorf("sqlite: close flow: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.errorf("sqlite: close flow: %w", err)
		} else if n == 1 {
			return nil
		}
		var status string
		err = w.queryRow(ctx, `SELECT status FROM flows WHERE id = ? AND principal = ?`, flowID, principal).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return s.errorf("sqlite: close flow: %w", err)
		}
		return fmt.Errorf("sqlite: flow is %s: %w", status, store.ErrConflict)
	})
}
