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

// CloseFlowAndRecord implements store.Store in one round trip: BEGIN;
// the operation id's advisory lock, as CompleteOperation takes it (so a
// concurrent call for the id, this or CompleteOperation, from this or
// another process, commits first and is seen); one statement that reads
// the ledger row and the flow, closes the flow only if the ledger has no
// row, and inserts op only if it closed the flow; COMMIT. A statement
// that fails aborts the transaction, and the COMMIT after it is not run:
// the connection is rolled back before it goes back to the pool.
func (s *Store) CloseFlowAndRecord(ctx context.Context, flowID string, op *store.Operation) error {
	if op == nil || op.ID == "" || len(op.ID) > store.MaxOperationIDLen {
		return errors.New("postgres: close flow and record: operation id must be 1 to 128 bytes")
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return s.errorf("postgres: close flow and record: %w", err)
	}
	defer release()
	result := op.Result
	if result == nil {
		result = []byte{}
	}
	var (
		status    *string // the flow's; nil: no such flow of the principal
		closed    bool
		prior     store.Operation
		completed *int64 // prior's; nil: no prior row
	)
	err = lockedRow(ctx, conn, operationLockClass, op.ID, closeFlowAndRecord,
		[]any{op.ID, flowID, op.Principal, toNanos(op.CompletedAt), op.Name, op.Outcome, result, zNanos(op.CompletedAt)},
		func(row pgx.Row) error {
			return row.Scan(&status, &closed, &prior.Principal, &prior.Name, &prior.Outcome, &prior.Result, &completed)
		})
	switch {
	case isUniqueViolation(err):
		// Only a writer that skips the lock gets here; its row is final.
		if recorded, gerr := s.GetOperation(ctx, op.ID); gerr == nil {
			return fmt.Errorf("postgres: close flow and record: %w", &store.RecordedError{Op: recorded})
		}
		return s.errorf("postgres: close flow and record: %w", err)
	case err != nil:
		return s.errorf("postgres: close flow and record: %w", err)
	case closed:
		return nil
	case completed != nil:
		prior.ID, prior.CompletedAt = op.ID, fromZNanos(*completed)
		if prior.Result == nil {
			prior.Result = []byte{}
		}
		return fmt.Errorf("postgres: close flow and record: %w", &store.RecordedError{Op: &prior})
	case status == nil:
		return store.ErrNotFound
	}
	// Complete, as read or (read pending) by a CompleteFlow that held the
	// row lock first.
	return fmt.Errorf("postgres: flow is complete: %w", store.ErrConflict)
}

// closeFlowAndRecord is CloseFlowAndRecord's statement. Parameters: $1
// operation id, $2 flow id, $3 principal, $4 the close time in
// nanoseconds, $5–$8 op's name, outcome, result and completed_at. Its one
// row: the flow's status as read (NULL: no such flow of the principal),
// whether this statement closed the flow and recorded op, and the
// recorded operation's columns (completed_at NULL: none).
const closeFlowAndRecord = `WITH prior AS (
	SELECT principal, name, outcome, result, completed_at FROM operations WHERE id = $1
), closed AS (
	UPDATE flows SET expires_at = LEAST(expires_at, $4::bigint)
	WHERE id = $2 AND principal = $3 AND status = 'pending' AND NOT EXISTS (SELECT 1 FROM prior)
	RETURNING 1
), recorded AS (
	INSERT INTO operations (id, principal, name, outcome, result, completed_at)
	SELECT $1, $3, $5::text, $6::text, $7::bytea, $8::bigint WHERE EXISTS (SELECT 1 FROM closed)
	RETURNING 1
)
SELECT (SELECT status FROM flows WHERE id = $2 AND principal = $3),
	EXISTS (SELECT 1 FROM recorded),
	COALESCE(p.principal, ''), COALESCE(p.name, ''), COALESCE(p.outcome, ''), p.result, p.completed_at
FROM (SELECT 1) AS one LEFT JOIN prior AS p ON true`
