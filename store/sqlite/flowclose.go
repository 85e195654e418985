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
		return s.closeFlow(ctx, w, flowID, principal, now)
	})
}

// CloseFlowAndRecord implements store.Store: one job on the writer, so
// the close and the ledger row share its transaction (in a savepoint of
// their own) and commit together or not at all.
func (s *Store) CloseFlowAndRecord(ctx context.Context, flowID string, op *store.Operation) error {
	if op == nil || op.ID == "" || len(op.ID) > store.MaxOperationIDLen {
		return errors.New("sqlite: close flow and record: operation id must be 1 to 128 bytes")
	}
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		if err := s.unrecorded(ctx, w, op.ID, "close flow and record"); err != nil {
			return err
		}
		if err := s.closeFlow(ctx, w, flowID, op.Principal, op.CompletedAt); err != nil {
			return err
		}
		return s.insertOperation(ctx, w, op)
	})
}

// closeFlow is CloseFlow in w's transaction.
func (s *Store) closeFlow(ctx context.Context, w *wtx, flowID, principal string, now time.Time) error {
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
}
