package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/store"
)

// CloseFlow implements store.Store. As in CompleteFlow, the conditional
// UPDATE is the guard: a concurrent CompleteFlow waits for the row lock
// and then finds the flow expired, or got it first and this changes
// nothing.
func (s *Store) CloseFlow(ctx context.Context, flowID, principal string, now time.Time) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx,
		`UPDATE flows SET expires_at = LEAST(expires_at, $1)
		 WHERE id = $2 AND principal = $3 AND status = 'pending'`,
		toNanos(now), flowID, principal)
	if err != nil {
		return s.errorf("postgres: close flow: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var status string
	err = s.pool.QueryRow(ctx, `SELECT status FROM flows WHERE id = $1 AND principal = $2`, flowID, principal).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return s.errorf("postgres: close flow: %w", err)
	}
	return fmt.Errorf("postgres: flow is %s: %w", status, store.ErrConflict)
}
