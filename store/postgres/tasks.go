package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// The tasks of the tasks extension: Store implements mcpserver.TaskStore
// (its contract: storetest.RunTasks). UpdateTask locks the task's row
// (SELECT … FOR UPDATE) for its transaction, so concurrent updates of a
// task, from any instance, are serialized.

const taskColumns = `id, principal, tool, arguments, capabilities, status, status_message, created_at, updated_at,
	expires_at, operation_id, round, asked, input_requests, responses, result, error, lease_until`

// taskLockClass is the first key of the advisory locks that serialize a
// principal's task creations under a limit (the second is a hash of the
// principal); migrateLockClass is another class.
const taskLockClass int32 = 0x7461736b // "task"

// liveTasks counts a principal's live tasks at a time (store.Task.Live);
// the statuses are literals, as the partial index tasks_live has them.
const liveTasks = `SELECT count(*) FROM tasks WHERE principal = $1 AND status IN ('working', 'input_required')
	AND (expires_at IS NULL OR expires_at > $2)`

// CreateTask implements mcpserver.TaskStore. Under a limit, the count and
// the insert run in one transaction holding an advisory lock on the
// principal (any instance on the database takes the same one), so a
// user's concurrent creations are counted one after the other: exactly,
// where READ COMMITTED alone would let each count miss the others.
func (s *Store) CreateTask(ctx context.Context, t *store.Task, limit int) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	args, err := taskArgs(t)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if limit > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, taskLockClass, t.Principal); err != nil {
				return err
			}
			var live int
			if err := tx.QueryRow(ctx, liveTasks, t.Principal, toNanos(t.CreatedAt)).Scan(&live); err != nil {
				return err
			}
			if live >= limit {
				return &store.TaskLimitError{Live: live, Limit: limit}
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO tasks (`+taskColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`, args...)
		return err
	})
	var over *store.TaskLimitError
	switch {
	case errors.As(err, &over):
		return over
	case isUniqueViolation(err):
		return s.errorf("postgres: task id exists: %w", store.ErrConflict)
	case err != nil:
		return s.errorf("postgres: create task: %w", err)
	}
	return nil
}

// GetTask implements mcpserver.TaskStore.
func (s *Store) GetTask(ctx context.Context, id string) (*store.Task, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: get task: %w", err)
	}
	return t, nil
}

// UpdateTask implements mcpserver.TaskStore.
func (s *Store) UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.errorf("postgres: update task: %w", err)
	}
	defer tx.Rollback(ctx)
	t, err := scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: update task: %w", err)
	}
	if err := update(t); err != nil {
		return nil, err
	}
	t.ID = id
	args, err := taskArgs(t)
	if err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `UPDATE tasks SET principal = $2, tool = $3, arguments = $4, capabilities = $5, status = $6,
		status_message = $7, created_at = $8, updated_at = $9, expires_at = $10, operation_id = $11, round = $12, asked = $13,
		input_requests = $14, responses = $15, result = $16, error = $17, lease_until = $18 WHERE id = $1`, args...)
	if err != nil {
		return nil, s.errorf("postgres: update task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, s.errorf("postgres: update task: %w", err)
	}
	return t, nil
}

// DeleteExpiredTasks implements mcpserver.TaskStore.
func (s *Store) DeleteExpiredTasks(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= $1`, toNanos(now))
	if err != nil {
		return 0, s.errorf("postgres: delete expired tasks: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// taskArgs are the values of taskColumns, in order.
func taskArgs(t *store.Task) ([]any, error) {
	requests, responses, err := t.MapsJSON()
	if err != nil {
		return nil, err
	}
	return []any{t.ID, t.Principal, t.Tool, store.NullBytes(t.Arguments), store.NullBytes(t.Capabilities), string(t.Status), t.StatusMessage,
		toNanos(t.CreatedAt), toNanos(t.UpdatedAt), nullNanos(t.ExpiresAt), t.OperationID, t.Round, store.NullBytes(t.Asked),
		requests, responses, store.NullBytes(t.Result), store.NullBytes(t.Error), nullNanos(t.LeaseUntil)}, nil
}

func scanTask(row pgx.Row) (*store.Task, error) {
	var t store.Task
	var status string
	var created, updated int64
	var expires, lease *int64
	var arguments, capabilities, asked, requests, responses, result, errJSON []byte
	err := row.Scan(&t.ID, &t.Principal, &t.Tool, &arguments, &capabilities, &status, &t.StatusMessage, &created, &updated,
		&expires, &t.OperationID, &t.Round, &asked, &requests, &responses, &result, &errJSON, &lease)
	if err != nil {
		return nil, err
	}
	t.Status = mcp.TaskStatus(status)
	t.CreatedAt, t.UpdatedAt = fromNanos(created), fromNanos(updated)
	if expires != nil {
		t.ExpiresAt = fromNanos(*expires)
	}
	if lease != nil {
		t.LeaseUntil = fromNanos(*lease)
	}
	t.Arguments, t.Capabilities, t.Asked, t.Result, t.Error = arguments, capabilities, asked, result, errJSON
	if err := t.SetMapsJSON(requests, responses); err != nil {
		return nil, err
	}
	return &t, nil
}
