package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
)

// Tasks keeps the tasks of the tasks extension: the method set of
// mcpserver.TaskStore, whose doc is the contract (storetest.RunTasks
// checks it). Every Store has it, so one store backs a server's flows,
// ledger and tasks (mcpserver.TaskOptions.Store).
type Tasks interface {
	CreateTask(ctx context.Context, t *Task, limit int) error
	GetTask(ctx context.Context, id string) (*Task, error)
	UpdateTask(ctx context.Context, id string, update func(*Task) error) (*Task, error)
	DeleteExpiredTasks(ctx context.Context, now time.Time) (int, error)
}

// ErrTaskLimit is what a *TaskLimitError is (errors.Is): CreateTask
// refused a task because its user has as many live tasks as allowed.
var ErrTaskLimit = errors.New("store: too many live tasks")

// TaskLimitError is CreateTask's refusal of a task over the limit of live
// tasks per user: Live is how many the user has (at least Limit, more if
// the limit was lowered since). Nothing was written.
type TaskLimitError struct {
	Live, Limit int
}

func (e *TaskLimitError) Error() string {
	return fmt.Sprintf("store: the user has %d live tasks, the limit is %d", e.Live, e.Limit)
}

// Is makes errors.Is(err, ErrTaskLimit) true.
func (e *TaskLimitError) Is(target error) bool { return target == ErrTaskLimit }

// Live reports whether t is live at now: working or input_required, and
// not expired (its ExpiresAt is unset or after now). A user's live tasks
// count towards CreateTask's limit.
func (t *Task) Live(now time.Time) bool {
	live := t.Status == mcp.TaskWorking || t.Status == mcp.TaskInputRequired
	return live && (t.ExpiresAt.IsZero() || t.ExpiresAt.After(now))
}

// Task is one task of the tasks extension (io.modelcontextprotocol/tasks)
// as a store keeps it. mcpserver fills it and defines, with its
// TaskStore interface, what a store must do with it; a store only
// persists it.
type Task struct {
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
	// LeaseUntil is until when the instance running a working task
	// vouches for it (it renews the lease while the run lasts); past it,
	// another instance may take the task over. Zero: no run holds it.
	// The value is also the lease's token, compared exactly: a run that
	// finds another one there has lost the task.
	LeaseUntil time.Time
	// OperationID and Round continue the handler's operation across runs.
	OperationID string
	Round       int
	// Asked is the server's encoding of what the last round asked and of
	// the handler's state; opaque to a store.
	Asked []byte
	// InputRequests holds the input requests still unanswered, by key
	// (each an mcp.InputRequest as JSON), while the status is
	// input_required.
	InputRequests map[string]json.RawMessage
	// Responses holds the answers received so far for the current round.
	Responses map[string]json.RawMessage
	// Result is the tool's CallToolResult (JSON) once completed; Error the
	// JSON-RPC error object once failed.
	Result, Error json.RawMessage
}

// Clone returns a deep copy of t.
func (t *Task) Clone() *Task {
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

// MapsJSON encodes InputRequests and Responses as JSON objects for a SQL
// store's columns; a nil map encodes as nil (NULL), so it reads back nil.
func (t *Task) MapsJSON() (requests, responses []byte, err error) {
	enc := func(m map[string]json.RawMessage) ([]byte, error) {
		if m == nil {
			return nil, nil
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("store: task %s: a map entry is not valid JSON", t.ID)
		}
		return b, nil
	}
	if requests, err = enc(t.InputRequests); err != nil {
		return nil, nil, err
	}
	responses, err = enc(t.Responses)
	return requests, responses, err
}

// SetMapsJSON is the inverse of MapsJSON: nil leaves a map nil.
func (t *Task) SetMapsJSON(requests, responses []byte) error {
	for _, m := range []struct {
		raw []byte
		out *map[string]json.RawMessage
	}{{requests, &t.InputRequests}, {responses, &t.Responses}} {
		if m.raw == nil {
			*m.out = nil
			continue
		}
		if err := json.Unmarshal(m.raw, m.out); err != nil {
			return fmt.Errorf("store: task %s: unreadable map: %w", t.ID, err)
		}
	}
	return nil
}

// NullBytes maps nil to a nil []byte and keeps anything else, for a
// store's nullable BLOB columns: nil is written as NULL and reads back nil.
func NullBytes[T ~[]byte](b T) []byte {
	if b == nil {
		return nil
	}
	return []byte(b)
}
