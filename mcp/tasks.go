package mcp

import "encoding/json"

// The tasks extension (ExtensionTasks, SEP-2663). A tools/call to a tool
// that supports tasks, from a request whose _meta declares the extension,
// may answer with a CreateTaskResult (resultType "task") instead of the
// tool's result. The client then polls tasks/get, which returns a
// DetailedTask: the status, and once the task ends the tool's result
// (completed) or a JSON-RPC error (failed) inlined. A task waiting for the
// user is input_required with inputRequests, answered with tasks/update;
// tasks/cancel ends it. tasks/update and tasks/cancel answer with an empty
// acknowledgement ({"resultType":"complete"}); the new state shows on the
// next tasks/get. The 2025-11-25 methods tasks/result and tasks/list do
// not exist in this extension (-32601).

// ResultTypeTask is the resultType of a CreateTaskResult.
const ResultTypeTask = "task"

// Methods of the tasks extension.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksUpdate = "tasks/update"
	MethodTasksCancel = "tasks/cancel"
)

// TaskStatus is a task's state. Working and InputRequired are live;
// Completed, Failed and Cancelled are terminal and never change again.
type TaskStatus string

// Task statuses. A tool that ran and reported an error (isError) is
// Completed; Failed is for protocol-level errors only.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is completed, failed or cancelled.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Task is the state every task answer carries. Times are RFC 3339 strings
// in UTC. TTLMs is how long, in milliseconds from creation, the task stays
// readable (nil: no limit); PollIntervalMs is the suggested wait between
// tasks/get calls (0: not sent). Both are integers on the wire.
type Task struct {
	TaskID         string     `json:"taskId"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTLMs          *int64     `json:"ttlMs"`
	PollIntervalMs int64      `json:"pollIntervalMs,omitempty"`
}

// CreateTaskResult answers a tools/call that started a task: the Task
// members at the top level with resultType "task", and nothing of the
// tool's result.
type CreateTaskResult struct {
	ResultType string `json:"resultType"`
	Task
	Meta ResultMeta `json:"_meta,omitempty"`
}

// DetailedTask answers tasks/get (resultType "complete"): the Task, the
// pending inputRequests while input_required, the tool's result once
// completed (Result, a CallToolResult), or the error once failed.
type DetailedTask struct {
	ResultType string `json:"resultType"`
	Task
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         json.RawMessage            `json:"error,omitempty"`
	Meta          ResultMeta                 `json:"_meta,omitempty"`
}

// Ack is the result of tasks/update and tasks/cancel: {"resultType":"complete"}.
type Ack struct {
	ResultType string     `json:"resultType"`
	Meta       ResultMeta `json:"_meta,omitempty"`
}
