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

// createTaskUnder is CreateTask's statement under a limit: it counts the
// principal's live tasks at the new task's created_at (store.Task.Live;
// the statuses are literals, as the partial index tasks_live has them)
// and inserts the task only when they are fewer than the limit.
// Parameters: $1–$18 the values of taskColumns (taskArgs: $2 principal,
// $8 created_at), $19 the limit. Its one row: the count, and whether the
// task was inserted.
const createTaskUnder = `WITH live AS (
		SELECT count(*) AS n FROM tasks WHERE principal = $2 AND status IN ('working', 'input_required')
			AND (expires_at IS NULL OR expires_at > $8)
	), ins AS (
		INSERT INTO tasks (` + taskColumns + `)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18 FROM live WHERE live.n < $19
		RETURNING 1
	)
	SELECT (SELECT n FROM live), EXISTS (SELECT 1 FROM ins)`

// CreateTask implements mcpserver.TaskStore. Under a limit it takes one
// round trip (lockedRow): BEGIN; an advisory lock on the principal, which
// every instance on the database takes, so a user's concurrent creations
// count one after the other (exact: under READ COMMITTED alone each count
// could miss the others); the count and the insert (createTaskUnder);
// COMMIT.
func (s *Store) CreateTask(ctx context.Context, t *store.Task, limit int) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	args, err := taskArgs(t)
	if err != nil {
		return err
	}
	if limit <= 0 {
		_, err = s.pool.Exec(ctx, `INSERT INTO tasks (`+taskColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`, args...)
		return s.createTaskError(err)
	}
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return s.errorf("postgres: create task: %w", err)
	}
	defer release()
	var live int
	var inserted bool
	err = lockedRow(ctx, conn, taskLockClass, t.Principal, createTaskUnder, append(args, limit),
		func(row pgx.Row) error { return row.Scan(&live, &inserted) })
	if err == nil && !inserted {
		return &store.TaskLimitError{Live: live, Limit: limit}
	}
	return s.createTaskError(err)
}

func (s *Store) createTaskError(err error) error {
	switch {
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
