package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// TaskStore keeps the tasks of the tasks extension (EnableTasks), as
// store.Task records. It is defined here, where it is used; MemoryTaskStore is one, and a durable
// store (SQLite, PostgreSQL) implements the same four methods so that any
// instance sharing it can answer tasks/get, tasks/update and tasks/cancel
// and a restart loses no task.
//
// The contract every implementation keeps:
//
//   - CreateTask stores a copy of t. store.ErrConflict (possibly wrapped)
//     when the id is taken; nothing is written then. When limit > 0 and
//     t.Principal already has limit or more live tasks at t.CreatedAt
//     (store.Task.Live: working or input_required, not expired), nothing
//     is written and the error is a *store.TaskLimitError with the count
//     found. The count and the write are atomic with respect to other
//     CreateTask calls for the same principal, so concurrent creations
//     never take a user past the limit. limit <= 0: no limit.
//   - GetTask returns a copy of the record, or store.ErrNotFound (possibly
//     wrapped). It does not filter by user or expiry: the server does
//     (another user's task and an expired one read as unknown).
//   - UpdateTask reads the record, calls update on a copy and stores the
//     copy when update returns nil, atomically: no other UpdateTask of the
//     same id interleaves (a transaction with a row lock, or a mutex), so
//     concurrent updates are serialized and each sees the previous one's
//     result. It returns the stored record. When update returns an error,
//     nothing is written and UpdateTask returns that error unchanged;
//     store.ErrNotFound when the id is absent. update may be called more
//     than once (a retried transaction) and must only change its argument.
//   - DeleteExpiredTasks deletes every record whose ExpiresAt is set and
//     not after now, and returns how many it deleted.
//
// Records round-trip exactly: every field written is read back equal
// (times to the microsecond, in UTC; nil and empty maps may read back
// either way). The server relies on it for LeaseUntil, which it compares
// for equality: it is the token of a run's lease. Other errors mean the store could not be reached; the
// client then gets a retryable error when they say so (ErrUnavailable).
type TaskStore interface {
	CreateTask(ctx context.Context, t *store.Task, limit int) error
	GetTask(ctx context.Context, id string) (*store.Task, error)
	UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error)
	DeleteExpiredTasks(ctx context.Context, now time.Time) (int, error)
}

// MemoryTaskStore is a TaskStore in this process's memory: tasks live as
// long as the process, and only this instance sees them. For one
// instance, tests and examples; several instances need a shared store.
//
// It drops expired tasks itself as new ones come, without
// Server.SweepTasks (which still works): when CreateTask finds the store
// holding twice as many tasks as its last look left (and at least
// memorySweepFloor), it deletes those expired at the new task's
// CreatedAt. That costs O(1) per task over time, and the store holds at
// most about twice the tasks that have not expired.
type MemoryTaskStore struct {
	mu      sync.Mutex
	tasks   map[string]*store.Task
	byUser  map[string]map[string]struct{} // task ids by principal, for the limit's count
	sweepAt int                            // CreateTask looks for expired tasks when the store holds this many
}

// memorySweepFloor is the size below which MemoryTaskStore does not look
// for expired tasks.
const memorySweepFloor = 64

// NewMemoryTaskStore returns an empty MemoryTaskStore.
func NewMemoryTaskStore() *MemoryTaskStore {
	return &MemoryTaskStore{tasks: map[string]*store.Task{}, byUser: map[string]map[string]struct{}{}, sweepAt: memorySweepFloor}
}

// CreateTask implements TaskStore. The limit counts the principal's
// tasks (only theirs, by an index) under the store's lock.
func (m *MemoryTaskStore) CreateTask(_ context.Context, t *store.Task, limit int) error {
	now := t.CreatedAt
	if now.IsZero() {
		now = time.Now()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[t.ID]; ok {
		return store.ErrConflict
	}
	if len(m.tasks) >= m.sweepAt {
		m.deleteExpired(now)
		m.sweepAt = max(2*len(m.tasks), memorySweepFloor)
	}
	if limit > 0 {
		live := 0
		for id := range m.byUser[t.Principal] {
			if m.tasks[id].Live(now) {
				live++
			}
		}
		if live >= limit {
			return &store.TaskLimitError{Live: live, Limit: limit}
		}
	}
	m.put(t.Clone())
	return nil
}

// put stores t and indexes it under its principal; m.mu is held.
func (m *MemoryTaskStore) put(t *store.Task) {
	if old, ok := m.tasks[t.ID]; ok && old.Principal != t.Principal {
		m.unindex(old)
	}
	m.tasks[t.ID] = t
	ids := m.byUser[t.Principal]
	if ids == nil {
		ids = map[string]struct{}{}
		m.byUser[t.Principal] = ids
	}
	ids[t.ID] = struct{}{}
}

// unindex removes t from its principal's index; m.mu is held.
func (m *MemoryTaskStore) unindex(t *store.Task) {
	ids := m.byUser[t.Principal]
	delete(ids, t.ID)
	if len(ids) == 0 {
		delete(m.byUser, t.Principal)
	}
}

// GetTask implements TaskStore.
func (m *MemoryTaskStore) GetTask(_ context.Context, id string) (*store.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return t.Clone(), nil
}

// UpdateTask implements TaskStore.
func (m *MemoryTaskStore) UpdateTask(_ context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	c := t.Clone()
	if err := update(c); err != nil {
		return nil, err
	}
	c.ID = id
	m.put(c.Clone())
	return c, nil
}

// DeleteExpiredTasks implements TaskStore.
func (m *MemoryTaskStore) DeleteExpiredTasks(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteExpired(now), nil
}

// deleteExpired deletes the tasks expired at now; m.mu is held.
func (m *MemoryTaskStore) deleteExpired(now time.Time) int {
	n := 0
	for id, t := range m.tasks {
		if !t.ExpiresAt.IsZero() && !t.ExpiresAt.After(now) {
			delete(m.tasks, id)
			m.unindex(t)
			n++
		}
	}
	return n
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T(nil), b...)
}
