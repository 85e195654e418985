package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// The tasks of the tasks extension: Store implements mcpserver.TaskStore
// (its contract: storetest.RunTasks). Writes go through the store's
// single writer, so concurrent updates of a task are serialized.

const taskColumns = `id, principal, tool, arguments, capabilities, status, status_message, created_at, updated_at,
	expires_at, operation_id, round, asked, input_requests, responses, result, error, lease_until`

// liveTasks counts a principal's live tasks at a time (store.Task.Live);
// the statuses are literals, as the partial index tasks_live has them.
const liveTasks = `SELECT count(*) FROM tasks WHERE principal = ? AND status IN ('working', 'input_required')
	AND (expires_at IS NULL OR expires_at > ?)`

// CreateTask implements mcpserver.TaskStore. The limit's count and the
// insert run in one transaction on the store's single writer, so no
// other write comes between them.
func (s *Store) CreateTask(ctx context.Context, t *store.Task, limit int) error {
	args, err := taskArgs(t)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		if limit > 0 {
			var live int
			if err := w.queryRow(ctx, liveTasks, t.Principal, toNanos(t.CreatedAt)).Scan(&live); err != nil {
				return s.errorf("sqlite: create task: count live tasks: %w", err)
			}
			if live >= limit {
				return &store.TaskLimitError{Live: live, Limit: limit}
			}
		}
		_, err := w.exec(ctx, `INSERT INTO tasks (`+taskColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		if isUniqueViolation(err) {
			return s.errorf("sqlite: task id exists: %w", store.ErrConflict)
		}
		if err != nil {
			return s.errorf("sqlite: create task: %w", err)
		}
		return nil
	})
}

// GetTask implements mcpserver.TaskStore.
func (s *Store) GetTask(ctx context.Context, id string) (*store.Task, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	t, err := scanTask(s.queryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: get task: %w", err)
	}
	return t, nil
}

// UpdateTask implements mcpserver.TaskStore. It runs on the writer, one
// write at a time, so concurrent updates of a task are serialized.
func (s *Store) UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	var out *store.Task
	err := s.write(ctx, func(ctx context.Context, w *wtx) error {
		t, err := scanTask(w.queryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return s.errorf("sqlite: update task: %w", err)
		}
		if err := update(t); err != nil {
			return err
		}
		t.ID = id
		args, err := taskArgs(t)
		if err != nil {
			return err
		}
		_, err = w.exec(ctx, `UPDATE tasks SET principal = ?, tool = ?, arguments = ?, capabilities = ?, status = ?,
		status_message = ?, created_at = ?, updated_at = ?, expires_at = ?, operation_id = ?, round = ?, asked = ?,
		input_requests = ?, responses = ?, result = ?, error = ?, lease_until = ? WHERE id = ?`, append(args[1:], id)...)
		if err != nil {
			return s.errorf("sqlite: update task: %w", err)
		}
		out = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteExpiredTasks implements mcpserver.TaskStore.
func (s *Store) DeleteExpiredTasks(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.write(ctx, func(ctx context.Context, w *wtx) error {
		res, err := w.exec(ctx, `DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?`, toNanos(now))
		if err != nil {
			return s.errorf("sqlite: delete expired tasks: %w", err)
		}
		affected, err := res.RowsAffected()
		if err != nil {
			return s.errorf("sqlite: delete expired tasks: %w", err)
		}
		n = int(affected)
		return nil
	})
	return n, err
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

func scanTask(row rowScanner) (*store.Task, error) {
	var t store.Task
	var status string
	var created, updated int64
	var expires, lease sql.NullInt64
	var arguments, capabilities, asked, requests, responses, result, errJSON []byte
	err := row.Scan(&t.ID, &t.Principal, &t.Tool, &arguments, &capabilities, &status, &t.StatusMessage, &created, &updated,
		&expires, &t.OperationID, &t.Round, &asked, &requests, &responses, &result, &errJSON, &lease)
	if err != nil {
		return nil, err
	}
	t.Status = mcp.TaskStatus(status)
	t.CreatedAt, t.UpdatedAt = fromNanos(created), fromNanos(updated)
	if expires.Valid {
		t.ExpiresAt = fromNanos(expires.Int64)
	}
	if lease.Valid {
		t.LeaseUntil = fromNanos(lease.Int64)
	}
	t.Arguments, t.Capabilities, t.Asked, t.Result, t.Error = arguments, capabilities, asked, result, errJSON
	if err := t.SetMapsJSON(requests, responses); err != nil {
		return nil, err
	}
	return &t, nil
}
