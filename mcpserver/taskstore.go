package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
)

// TaskStore keeps the tasks of the tasks extension (EnableTasks). It is
// defined here, where it is used; MemoryTaskStore is one, and a durable
// store (SQLite, PostgreSQL) implements the same four methods so that any
// instance sharing it can answer tasks/get, tasks/update and tasks/cancel
// and a restart loses no task.
//
// The contract every implementation keeps:
//
//   - CreateTask stores a copy of t. ErrTaskExists when the id is taken;
//     nothing is written then.
//   - GetTask returns a copy of the record, or ErrTaskNotFound. It does
//     not filter by user or expiry: the server does (another user's task
//     and an expired one read as unknown).
//   - UpdateTask reads the record, calls update on a copy and stores the
//     copy when update returns nil, atomically: no other UpdateTask of the
//     same id interleaves (a transaction with a row lock, or a mutex), so
//     concurrent updates are serialized and each sees the previous one's
//     result. It returns the stored record. When update returns an error,
//     nothing is written and UpdateTask returns that error unchanged;
//     ErrTaskNotFound when the id is absent. update may be called more
//     than once (a retried transaction) and must only change its argument.
//   - DeleteExpiredTasks deletes every record whose ExpiresAt is set and
//     not after now, and returns how many it deleted.
//
// Records round-trip exactly: every field written is read back equal
// (times to the microsecond, in UTC; nil and empty maps may read back
// either way). Errors other than the two sentinels mean the store could
// not be reached; the client then gets a retryable error (ErrUnavailable
// semantics) when they say so.
type TaskStore interface {
	CreateTask(ctx context.Context, t *TaskRecord) error
	GetTask(ctx context.Context, id string) (*TaskRecord, error)
	UpdateTask(ctx context.Context, id string, update func(*TaskRecord) error) (*TaskRecord, error)
	DeleteExpiredTasks(ctx context.Context, now time.Time) (int, error)
}

// Sentinel errors of a TaskStore.
var (
	ErrTaskNotFound = errors.New("mcpserver: task not found")
	ErrTaskExists   = errors.New("mcpserver: task id already exists")
)

// TaskRecord is one task as a TaskStore keeps it. The server fills it; a
// store only persists it.
type TaskRecord struct {
	// ID is the taskId: 32 hex characters from crypto/rand.
	ID string
	// Principal is the user the task belongs to ("" without
	// authentication); only that user's requests see it.
	Principal string
	// Tool and Arguments are the tools/call that started the task; the
	// handler runs again with them on every resume.
	Tool      string
	Arguments json.RawMessage
	// Capabilities are the client capabilities (JSON) of the call that
	// started the task: what the task may ask the user for.
	Capabilities json.RawMessage
	// Status and StatusMessage are what tasks/get shows.
	Status        mcp.TaskStatus
	StatusMessage string
	// CreatedAt and UpdatedAt are set by the server (UTC); ExpiresAt is
	// CreatedAt plus the TTL, zero for no expiry.
	CreatedAt, UpdatedAt, ExpiresAt time.Time
	// OperationID and Round continue the handler's operation across runs,
	// as Request.OperationID and Request.Round.
	OperationID string
	Round       int
	// Asked is the library's encoding of what the last round asked (the
	// input kinds and form schemas) and of the handler's state
	// (InputRequired.WithState); opaque to a store.
	Asked []byte
	// InputRequests holds the input requests still unanswered, by key (each
	// an mcp.InputRequest as JSON), while the status is input_required.
	InputRequests map[string]json.RawMessage
	// Responses holds the answers received so far for the current round.
	Responses map[string]json.RawMessage
	// Result is the tool's CallToolResult (JSON) once completed; Error the
	// JSON-RPC error object once failed.
	Result, Error json.RawMessage
}

func (t *TaskRecord) clone() *TaskRecord {
	c := *t
	c.Arguments = cloneBytes(t.Arguments)
	c.Capabilities = cloneBytes(t.Capabilities)
	c.Asked = cloneBytes(t.Asked)
	c.Result = cloneBytes(t.Result)
	c.Error = cloneBytes(t.Error)
	c.InputRequests = cloneRawMap(t.InputRequests)
	c.Responses = cloneRawMap(t.Responses)
	return &c
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T(nil), b...)
}

func cloneRawMap(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := maps.Clone(m)
	for k, v := range c {
		c[k] = cloneBytes(v)
	}
	return c
}

// MemoryTaskStore is a TaskStore in this process's memory: tasks live as
// long as the process, and only this instance sees them. For one
// instance, tests and examples; several instances need a shared store.
type MemoryTaskStore struct {
	mu    sync.Mutex
	tasks map[string]*TaskRecord
}

// NewMemoryTaskStore returns an empty MemoryTaskStore.
func NewMemoryTaskStore() *MemoryTaskStore {
	return &MemoryTaskStore{tasks: map[string]*TaskRecord{}}
}

// CreateTask implements TaskStore.
func (m *MemoryTaskStore) CreateTask(_ context.Context, t *TaskRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[t.ID]; ok {
		return ErrTaskExists
	}
	m.tasks[t.ID] = t.clone()
	return nil
}

// GetTask implements TaskStore.
func (m *MemoryTaskStore) GetTask(_ context.Context, id string) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, ErrTaskNotFound
	}
	return t.clone(), nil
}

// UpdateTask implements TaskStore.
func (m *MemoryTaskStore) UpdateTask(_ context.Context, id string, update func(*TaskRecord) error) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, ErrTaskNotFound
	}
	c := t.clone()
	if err := update(c); err != nil {
		return nil, err
	}
	c.ID = id
	m.tasks[id] = c.clone()
	return c, nil
}

// DeleteExpiredTasks implements TaskStore.
func (m *MemoryTaskStore) DeleteExpiredTasks(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, t := range m.tasks {
		if !t.ExpiresAt.IsZero() && !t.ExpiresAt.After(now) {
			delete(m.tasks, id)
			n++
		}
	}
	return n, nil
}
