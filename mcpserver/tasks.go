package mcpserver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// TaskSupport says whether a tool may run as a task of the tasks
// extension (HandlerOptions.Tasks).
type TaskSupport int

const (
	// TaskNever: the tool always answers in the call (the default).
	TaskNever TaskSupport = iota
	// TaskOptional: the handler may return RunAsTask when the request's
	// _meta declares the tasks extension (Request.TaskAllowed); without
	// it the handler runs in the call as usual.
	TaskOptional
	// TaskRequired: the tool only runs as a task. A call whose _meta does
	// not declare the tasks extension is refused with -32021 naming it,
	// before the handler runs (SEP-2663 §Required Capabilities).
	TaskRequired
)

// TaskOptions configure the tasks extension (EnableTasks). A nil
// *TaskOptions means the defaults.
type TaskOptions struct {
	// Store keeps the tasks; nil means a NewMemoryTaskStore (one instance
	// only, lost on restart).
	Store TaskStore
	// TTL is how long a task stays readable after it was created, sent as
	// ttlMs; 0 means one hour, negative means no limit (ttlMs null).
	// SweepTasks deletes expired tasks; until then they read as unknown.
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients; 0 means
	// 500 ms.
	PollInterval time.Duration
	// Lease is how long a run vouches for its working task: the instance
	// running it renews the lease every third of it, and a tasks/get on
	// any instance that finds the lease run out (its instance stopped)
	// takes the task over and runs its handler again from the top with
	// what the task holds. A run whose instance stalled past its lease
	// and resumes after such a takeover learns of it at its next store
	// write (its renewal, a status message, its outcome): its context
	// ends and nothing it returns is stored. 0 means 30 seconds.
	Lease time.Duration
	// MaxTasksPerUser is how many live tasks (working or input_required,
	// not expired) one user may have; a tools/call that would start
	// another gets a tool result with isError that says so, and no task
	// is created. Tasks of the same principal count together, on every
	// instance sharing the Store; without authentication all callers are
	// one principal (""), so the limit is the server's. 0 means 100,
	// negative means no limit. The Store enforces it atomically
	// (TaskStore.CreateTask): concurrent calls never take a user past it.
	MaxTasksPerUser int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Ledger, when set, makes tasks/cancel and a handler's effect
	// mutually exclusive: a cancel of a live task first records the
	// operation under the task's operation id (Request.OperationID, the
	// same for the whole task) with the outcome TaskCancelOutcome and no
	// effect. If the ledger already holds that operation with another
	// outcome, the handler's effect committed first: the cancel is too
	// late, is acknowledged, and the task completes. Otherwise the task
	// is cancelled, and a handler that records its effect under
	// Request.OperationID finds the operation recorded (store.ErrConflict)
	// and cannot commit; whatever that run returns is dropped.
	//
	// Without a Ledger a cancel marks the task cancelled whatever its run
	// is doing: a cancel that races a handler's commit can leave the task
	// cancelled although the effect was made.
	Ledger store.Ledger
}

// DefaultMaxTasksPerUser is TaskOptions.MaxTasksPerUser when it is 0.
const DefaultMaxTasksPerUser = 100

// TaskCancelOutcome is the store.Operation.Outcome that tasks/cancel
// records under a task's operation id when TaskOptions.Ledger is set. A
// handler that finds it recorded was cancelled before its effect.
const TaskCancelOutcome = "task_cancelled"

// tasks is the runtime of the tasks extension: the store and the runs
// this instance has going, by task id, to cancel them.
type tasks struct {
	store   TaskStore
	ledger  store.Ledger
	limit   int // live tasks per user; 0: none
	ttl     time.Duration
	poll    time.Duration
	lease   time.Duration
	now     func() time.Time
	mu      sync.Mutex
	running map[string]*taskRun
	wg      sync.WaitGroup
	// stopping is set by StopTasks: a run launched after it gives its
	// lease back at once instead of running.
	stopping bool
}

// taskRun is a run of a task's handler on this instance and the lease it
// holds. The lease's end, as the store returned it after the run's last
// write, is also its token: an instance that takes the task over writes
// a later end, so a run that finds another value in the record has lost
// the task (its instance stalled past the lease) and stops: the renewal
// ends its context, and it stores neither status message nor outcome.
type taskRun struct {
	id     string
	cancel context.CancelFunc

	// lock (one token) is held across the run's store writes, so until
	// stays the last one's; a channel rather than a mutex, since a write
	// may hang as long as the store does.
	lock  chan struct{}
	until time.Time

	// stopped is why the run was stopped before it settled, when it was
	// not tasks/cancel: OutcomeLeaseLost, OutcomeExpired or
	// OutcomeInterrupted, the first reason found (stop). Its round is
	// observed so (stopOutcome).
	stopped atomic.Value // Outcome
}

// stop records why the run is being stopped, unless a reason is
// recorded already: the first one is why.
func (r *taskRun) stop(why Outcome) { r.stopped.CompareAndSwap(nil, why) }

// stopOutcome is the outcome observed for a run stopped before it
// settled: why it was stopped, OutcomeCancelled unless stopped says else.
func (r *taskRun) stopOutcome() Outcome {
	if o, ok := r.stopped.Load().(Outcome); ok {
		return o
	}
	return OutcomeCancelled
}

// errLeaseLost refuses a write of a run whose lease another run holds now.
var errLeaseLost = errors.New("task lease lost: another instance runs the task")

// update applies fn to the run's task in the store when the task is not
// working or the run still holds its lease (errLeaseLost otherwise), and
// keeps the lease the write left.
func (r *taskRun) update(ctx context.Context, st TaskStore, fn func(*store.Task) error) (*store.Task, error) {
	r.lock <- struct{}{}
	defer func() { <-r.lock }()
	rec, err := st.UpdateTask(ctx, r.id, func(t *store.Task) error {
		if t.Status == mcp.TaskWorking && !t.LeaseUntil.Equal(r.until) {
			return errLeaseLost
		}
		return fn(t)
	})
	if err == nil && rec.Status == mcp.TaskWorking {
		r.until = rec.LeaseUntil
	}
	return rec, err
}

// holds reports whether rec, read from the store, is under the run's lease.
func (r *taskRun) holds(rec *store.Task) bool {
	r.lock <- struct{}{}
	defer func() { <-r.lock }()
	return rec.LeaseUntil.Equal(r.until)
}

// leaseEnd is the end of a lease taken or renewed at now, to the
// microsecond: every store keeps that much, and the value is compared
// exactly (taskRun).
func (rt *tasks) leaseEnd(now time.Time) time.Time {
	return now.UTC().Add(rt.lease).Truncate(time.Microsecond)
}

// EnableTasks serves the tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663): it is advertised in server/discover's capabilities.extensions,
// tasks/get, tasks/update and tasks/cancel are served, and a tool
// registered with HandlerOptions.Tasks may answer a tools/call with a
// task (RunAsTask). Call it once, before serving; a second call panics.
//
// The extension is used per request: tasks/get, tasks/update and
// tasks/cancel from a request whose _meta does not declare it are refused
// with -32021 naming it, and such a call never gets a task. A task belongs
// to the user who started it: another user's task id, an unknown or
// expired one all read as the same -32602 "Unknown task".
func (s *Server) EnableTasks(o *TaskOptions) {
	var opts TaskOptions
	if o != nil {
		opts = *o
	}
	t := &tasks{store: opts.Store, ledger: opts.Ledger, ttl: opts.TTL, poll: opts.PollInterval, lease: opts.Lease, now: opts.Now, running: map[string]*taskRun{}}
	if t.store == nil {
		t.store = NewMemoryTaskStore()
	}
	if t.ttl == 0 {
		t.ttl = time.Hour
	}
	if t.poll <= 0 {
		t.poll = 500 * time.Millisecond
	}
	if t.lease <= 0 {
		t.lease = 30 * time.Second
	}
	switch t.limit = opts.MaxTasksPerUser; {
	case t.limit == 0:
		t.limit = DefaultMaxTasksPerUser
	case t.limit < 0:
		t.limit = 0
	}
	if t.now == nil {
		t.now = time.Now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks != nil {
		panic("mcpserver: EnableTasks called twice")
	}
	s.tasks = t
	s.encoded, s.caps = nil, nil
	s.gen++
	if s.extensions == nil {
		s.extensions = map[string]json.RawMessage{}
	}
	s.extensions[mcp.ExtensionTasks] = json.RawMessage(`{}`)
}

// tasksRuntime returns the tasks runtime, nil when EnableTasks was not called.
func (s *Server) tasksRuntime() *tasks {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tasks
}

// WaitTasks waits until the task runs this instance started have
// returned: for tests and for a graceful shutdown after the runs were
// cancelled or finished. Tasks stay in the store.
func (s *Server) WaitTasks() {
	if t := s.tasksRuntime(); t != nil {
		t.wg.Wait()
	}
}

// StopTasks interrupts the task runs of this instance, for a shutdown:
// each run still going is stopped (its context ends) and its lease is
// released in the store, fenced by the lease's token like every write of
// the run, so the next tasks/get on any instance sharing the store takes
// the task over at once instead of after TaskOptions.Lease. Each such
// run is observed as OutcomeInterrupted; a run that settles before the
// release is observed as usual, and what a run returns after it is
// dropped. A run that would start later (a tasks/update still being
// served) releases its lease instead of running. StopTasks then waits
// until the runs have returned, or ctx ends (ctx's error, wrapped: a
// handler that ignores its context still holds its goroutine; the
// task's lease is released all the same). It returns a store error, the
// first, when a lease could not be released: that task is taken over
// once its lease runs out, as after a crash. Tasks stay in the store.
func (s *Server) StopTasks(ctx context.Context) error {
	rt := s.tasksRuntime()
	if rt == nil {
		return nil
	}
	rt.mu.Lock()
	rt.stopping = true
	runs := slices.Collect(maps.Values(rt.running))
	rt.mu.Unlock()
	var first error
	for _, run := range runs {
		if err := s.interrupt(ctx, rt, run); err != nil && first == nil {
			first = err
		}
	}
	done := make(chan struct{})
	go func() { rt.wg.Wait(); close(done) }()
	select {
	case <-done:
		return first
	case <-ctx.Done():
		return errors.Join(first, fmt.Errorf("mcpserver: task runs still going after they were interrupted: %w", ctx.Err()))
	}
}

// interrupt stops run for a shutdown and releases its lease.
func (s *Server) interrupt(ctx context.Context, rt *tasks, run *taskRun) error {
	run.stop(OutcomeInterrupted)
	run.cancel()
	if err := run.release(ctx, rt); err != nil {
		s.log.Warn("mcpserver: task lease not released at shutdown; another instance takes the task over when it runs out", "task", run.id, "err", err)
		return err
	}
	s.log.Info("mcpserver: task run interrupted by the shutdown; its lease is released for another instance", "task", run.id)
	return nil
}

// release ends the run's lease now, when the run still holds it: the
// lease's end becomes the present, so a tasks/get anywhere takes the task
// over. Every later write of the run finds another token and is refused.
func (r *taskRun) release(ctx context.Context, rt *tasks) error {
	r.lock <- struct{}{}
	defer func() { <-r.lock }()
	_, err := rt.store.UpdateTask(ctx, r.id, func(t *store.Task) error {
		if t.Status != mcp.TaskWorking || !t.LeaseUntil.Equal(r.until) {
			return errNoChange
		}
		t.LeaseUntil = rt.now().UTC().Truncate(time.Microsecond)
		return nil
	})
	r.until = time.Time{} // held by no run: a working task's lease is never zero
	if errors.Is(err, errNoChange) || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// SweepTasks deletes the tasks whose TTL has passed from the store and
// returns how many it deleted. Run it now and then (expired tasks already
// read as unknown; this frees the space).
func (s *Server) SweepTasks(ctx context.Context) (int, error) {
	t := s.tasksRuntime()
	if t == nil {
		return 0, nil
	}
	return t.store.DeleteExpiredTasks(ctx, t.now())
}

type taskReply struct{}

func (taskReply) isReply() {}

// RunAsTask is a tools/call handler's reply that turns the call into a
// task (SEP-2663): the client gets a CreateTaskResult at once, and the
// handler runs again in the background, from the top, with the same
// arguments and Request.TaskID set; what that run returns settles the
// task. A run that returns Ask() moves the task to input_required; the
// client's answers come with tasks/update, are checked like MRTR answers,
// and once every question is answered the handler runs again and reads
// them with Request.Elicitation and friends. The answers and state of the
// call's own MRTR rounds go with the task, so a handler can gather input
// in the call and then continue as a task.
//
// Return it only when Request.TaskAllowed is true; otherwise (or from a
// run inside a task) it is a handler bug, answered with -32603.
func RunAsTask() Reply { return taskReply{} }

// TaskAllowed reports whether the handler may return RunAsTask: a
// tools/call of a tool registered with HandlerOptions.Tasks, on a server
// with EnableTasks, whose _meta declares the tasks extension, and not
// already running inside a task.
func (r *Request) TaskAllowed() bool { return r.taskAllowed && r.TaskID == "" }

var errUnknownTask = jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Unknown task")

// taskIDLen is the length of the task ids this server makes (newTaskID).
const taskIDLen = 32

// validTaskID reports whether id has the form of the ids this server
// makes: 32 lowercase hex digits. Any other id names no task, so it is
// answered as unknown without a store read.
func validTaskID(id string) bool {
	if len(id) != taskIDLen {
		return false
	}
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// errNoChange makes an UpdateTask write nothing.
var errNoChange = errors.New("no change")

const taskTimeLayout = "2006-01-02T15:04:05.000Z07:00"

func newTaskID() string {
	id := newOperationID()
	return hex.EncodeToString(id[:])
}

// taskGate refuses a tools/call of a TaskRequired tool without the
// extension, and says whether this call may become a task.
func (s *Server) taskGate(in *transport.Incoming, support TaskSupport) (allowed bool, err error) {
	if support == TaskNever {
		return false, nil
	}
	negotiated := in.Meta.ClientCapabilities.HasExtension(mcp.ExtensionTasks)
	if support == TaskRequired && !negotiated {
		return false, missingTasks("This tool runs only as a task: declare the " + mcp.ExtensionTasks + " extension in _meta clientCapabilities")
	}
	return negotiated && s.tasksRuntime() != nil, nil
}

func missingTasks(msg string) *jsonrpc.Error {
	return MissingCapability(mcp.ClientCapabilities{Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage(`{}`)}}, msg)
}

// startTask stores a new working task for the call c and starts its run.
// The CreateTaskResult goes out only once the store has the task, so an
// immediate tasks/get finds it.
func (s *Server) startTask(ctx context.Context, c *call, req *Request) (any, error) {
	rt := s.tasksRuntime()
	caps, err := json.Marshal(c.in.Meta.ClientCapabilities)
	if err != nil {
		return nil, err
	}
	now := rt.now().UTC()
	rec := &store.Task{ID: newTaskID(), Principal: c.principal, Tool: c.in.Name, Arguments: cloneBytes(c.in.Arguments),
		Capabilities: caps, Status: mcp.TaskWorking, CreatedAt: now, UpdatedAt: now, LeaseUntil: rt.leaseEnd(now),
		OperationID: req.OperationID, Round: req.Round}
	if rt.ttl > 0 {
		rec.ExpiresAt = now.Add(rt.ttl)
	}
	if len(req.issued) > 0 || req.State != nil {
		rec.Asked = encodeAsked(req.issued, req.State)
		for k := range req.issued {
			if v, ok := req.responses[k]; ok {
				if rec.Responses == nil {
					rec.Responses = map[string]json.RawMessage{}
				}
				rec.Responses[k] = cloneBytes(v)
			}
		}
	}
	if err := rt.store.CreateTask(ctx, rec, rt.limit); err != nil {
		if over := (*store.TaskLimitError)(nil); errors.As(err, &over) {
			s.log.Info("mcpserver: task not started: the user has too many live tasks", "tool", c.in.Name, "live", over.Live, "limit", over.Limit)
			return s.taskLimitResult(over, rt.ttl), nil
		}
		return nil, err
	}
	c.ri.taskID = rec.ID
	s.launch(rt, rec.ID, rec.LeaseUntil)
	return &mcp.CreateTaskResult{ResultType: mcp.ResultTypeTask, Task: rt.wire(rec), Meta: s.serverMeta()}, nil
}

// taskLimitResult answers a call that would take its user past
// TaskOptions.MaxTasksPerUser: a tool error, since the call was sound and
// may work later (server/tools.mdx §Error Handling; the 2025-11-25 tasks
// page asked servers to limit concurrent tasks per requestor), in words
// for the user and the model (taskLimitText).
func (s *Server) taskLimitResult(over *store.TaskLimitError, ttl time.Duration) *mcp.CallToolResult {
	text := taskLimitText(over, ttl)
	return &mcp.CallToolResult{ResultType: mcp.ResultTypeComplete, Content: []mcp.Content{mcp.TextContent(text)}, IsError: true, Meta: s.serverMeta()}
}

// taskLimitText says how many tasks the user has and what frees room:
// only what happens without them, since the user cannot list their tasks
// (the extension has no tasks/list) and may not have the ids to cancel
// one. A task ends when it finishes, when the client following it
// cancels it, or at the latest when its TTL (ttl > 0) has passed.
func taskLimitText(over *store.TaskLimitError, ttl time.Duration) string {
	tasks := "tasks"
	if over.Live == 1 {
		tasks = "task"
	}
	ends := "A task ends when it finishes or when the client following it cancels it"
	if ttl > 0 {
		ends = "A task ends when it finishes, when the client following it cancels it, or at the latest " + spellDuration(ttl) + " after it started"
	}
	return fmt.Sprintf("Not started: you have %d %s in progress (working or waiting for your input), and %d is the most one user may have at a time. %s; then make the call again.",
		over.Live, tasks, over.Limit, ends)
}

// spellDuration writes d for a reader: whole hours or minutes in words
// ("1 hour", "90 minutes"), else Go's form to the second ("1m30s").
func spellDuration(d time.Duration) string {
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name
		}
		return strconv.FormatInt(n, 10) + " " + name + "s"
	}
	switch {
	case d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	}
	return d.Round(time.Second).String()
}

func (rt *tasks) wire(rec *store.Task) mcp.Task {
	t := mcp.Task{TaskID: rec.ID, Status: rec.Status, StatusMessage: rec.StatusMessage,
		CreatedAt: rec.CreatedAt.UTC().Format(taskTimeLayout), LastUpdatedAt: rec.UpdatedAt.UTC().Format(taskTimeLayout),
		PollIntervalMs: rt.poll.Milliseconds()}
	if !rec.ExpiresAt.IsZero() {
		ms := rec.ExpiresAt.Sub(rec.CreatedAt).Milliseconds()
		t.TTLMs = &ms
	}
	return t
}

// launch runs the task's handler in the background under the lease
// that ends at until (as the store has it), cancellable by tasks/cancel
// on this instance.
func (s *Server) launch(rt *tasks, id string, until time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	run := &taskRun{id: id, cancel: cancel, lock: make(chan struct{}, 1), until: until}
	rt.mu.Lock()
	stopping := rt.stopping
	if !stopping {
		rt.running[id] = run
	}
	rt.mu.Unlock()
	if stopping { // StopTasks has run: another instance takes the task over
		cancel()
		if err := run.release(context.Background(), rt); err != nil {
			s.log.Warn("mcpserver: task lease not released at shutdown; another instance takes the task over when it runs out", "task", id, "err", err)
		}
		return
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer func() {
			rt.mu.Lock()
			if rt.running[id] == run { // a later run of the task may be running already
				delete(rt.running, id)
			}
			rt.mu.Unlock()
			cancel()
		}()
		stop := s.renewLease(rt, run)
		defer stop()
		for again := true; again; {
			again = s.runTask(ctx, rt, run)
		}
	}()
}

// renewLease renews the lease of run's working task every third of
// TaskOptions.Lease until stop is called. The renewal reads the record,
// so it is also how a tasks/cancel served by another instance reaches
// this run, and how a run that lost its lease learns it: when the task
// has ended (cancelled), is gone, or another run holds the lease, the
// run's context ends and renewal stops.
func (s *Server) renewLease(rt *tasks, run *taskRun) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(rt.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if !s.renew(rt, run) {
				run.cancel()
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// errTaskEnded makes a lease renewal write nothing: the task has ended.
var errTaskEnded = errors.New("task ended")

// renew extends the lease of run's working task; false when the task
// has ended, is gone, or is another run's now, so the run should stop.
func (s *Server) renew(rt *tasks, run *taskRun) bool {
	var ended mcp.TaskStatus
	_, err := run.update(context.Background(), rt.store, func(t *store.Task) error {
		switch {
		case t.Status.Terminal():
			ended = t.Status
			return errTaskEnded
		case t.Status != mcp.TaskWorking:
			return errNoChange
		}
		t.LeaseUntil = rt.leaseEnd(rt.now())
		return nil
	})
	switch {
	case errors.Is(err, errTaskEnded), errors.Is(err, store.ErrNotFound):
		switch {
		case errors.Is(err, store.ErrNotFound): // deleted after its TTL
			run.stop(OutcomeExpired)
		case ended != mcp.TaskCancelled: // another run settled it
			run.stop(OutcomeLeaseLost)
		}
		s.log.Info("mcpserver: task ended elsewhere; stopping its run", "task", run.id)
		return false
	case errors.Is(err, errLeaseLost):
		run.stop(OutcomeLeaseLost)
		s.log.Warn("mcpserver: task run lost its lease (its instance stalled) and another run took the task over; stopping this one", "task", run.id)
		return false
	case err != nil && !errors.Is(err, errNoChange):
		s.log.Warn("mcpserver: task lease not renewed", "task", run.id, "err", err)
	}
	return true
}

// takeOver runs a working task whose lease has run out, on this
// instance: the instance that ran it stopped. The claim is atomic, so
// one instance takes it.
func (s *Server) takeOver(ctx context.Context, rt *tasks, rec *store.Task) {
	now := rt.now()
	if rec.Status != mcp.TaskWorking || rec.LeaseUntil.IsZero() || now.Before(rec.LeaseUntil) {
		return
	}
	rt.mu.Lock()
	_, local := rt.running[rec.ID]
	rt.mu.Unlock()
	if local {
		return
	}
	claimed, err := rt.store.UpdateTask(ctx, rec.ID, func(t *store.Task) error {
		if t.Status != mcp.TaskWorking || t.LeaseUntil.IsZero() || now.Before(t.LeaseUntil) {
			return errNoChange
		}
		t.LeaseUntil = rt.leaseEnd(now) // later than the lost lease: the runs tell them apart
		return nil
	})
	if err != nil {
		if !errors.Is(err, errNoChange) {
			s.log.Warn("mcpserver: task takeover failed", "task", rec.ID, "err", err)
		}
		return
	}
	s.log.Warn("mcpserver: taking over a task whose run stopped", "task", rec.ID, "tool", rec.Tool)
	s.launch(rt, rec.ID, claimed.LeaseUntil)
}

// runTask runs the handler of run's working task once and settles what
// it returned; again is true when the handler returned state only and
// runs once more.
func (s *Server) runTask(ctx context.Context, rt *tasks, run *taskRun) (again bool) {
	rec, err := rt.store.GetTask(ctx, run.id)
	if err != nil {
		s.log.Error("mcpserver: task vanished before its run", "task", run.id, "err", err)
		return false
	}
	if rec.Status != mcp.TaskWorking || !run.holds(rec) {
		return false
	}
	start := time.Now()
	in := &transport.Incoming{Method: mcp.MethodToolsCall, Name: rec.Tool, Arguments: rec.Arguments}
	req, reply, err := s.callTask(ctx, run, rec)
	if ctx.Err() != nil {
		s.observeRun(ctx, in, rec, &roundInfo{start: start, forced: run.stopOutcome()}, nil)
		return false // cancelled (the record already says so), the lease lost, or the task deleted
	}
	settle, again := s.settleTask(rt, in, rec, req, reply, err)
	cancelled := rt.cancelRecorded(context.WithoutCancel(ctx), rec)
	if cancelled { // the cancel may not have marked the task yet: its outcome wins
		settle, again = rt.markCancelled, false
	}
	var found mcp.TaskStatus // the status the write found
	settled, err := run.update(context.WithoutCancel(ctx), rt.store, func(t *store.Task) error {
		found = t.Status
		return settle(t)
	})
	switch {
	case errors.Is(err, errLeaseLost), errors.Is(err, errNoChange) && found != mcp.TaskCancelled && !cancelled:
		// Another run holds the task, or has moved it on (asked,
		// settled) since this run lost its lease.
		run.stop(OutcomeLeaseLost)
		s.log.Warn("mcpserver: task run lost its lease (its instance stalled) and another run took the task over; its outcome is dropped", "task", run.id)
		settled = nil
	case err != nil && !errors.Is(err, errNoChange):
		s.log.Error("mcpserver: task outcome not stored", "task", run.id, "err", err)
		return false
	}
	ri := &roundInfo{start: start}
	if req != nil {
		ri.summarize(req, reply)
	}
	switch {
	case cancelled: // the ledger holds the cancel
		ri.forced, again = OutcomeCancelled, false
	case settled == nil: // the task ended while its handler ran (tasks/cancel), or another run has it
		ri.forced, again = run.stopOutcome(), false
	}
	s.observeRun(ctx, in, rec, ri, settled)
	return again
}

// observeRun reports one run of a task's handler to Options.Observer, as
// a tools/call round of the task's operation; settled is the record the
// run left (nil when it was cancelled).
func (s *Server) observeRun(ctx context.Context, in *transport.Incoming, rec *store.Task, ri *roundInfo, settled *store.Task) {
	if s.opts.Observer == nil {
		return
	}
	ri.opID, ri.round, ri.taskID = rec.OperationID, rec.Round, rec.ID
	resp := &jsonrpc.Response{}
	if settled != nil {
		switch settled.Status {
		case mcp.TaskFailed:
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError}
			_ = json.Unmarshal(settled.Error, resp.Error)
		case mcp.TaskInputRequired, mcp.TaskWorking: // asked, or state only
			resp.Result = &mcp.InputRequiredResult{}
		default:
			resp.Result = &mcp.CallToolResult{}
		}
	}
	s.observe(context.WithoutCancel(ctx), in, rec.Principal, ri, resp)
}

// callTask rebuilds the handler's Request from the record and calls the
// tool's handler; a panic becomes an error.
func (s *Server) callTask(ctx context.Context, run *taskRun, rec *store.Task) (req *Request, reply Reply, err error) {
	var caps mcp.ClientCapabilities
	if err := json.Unmarshal(rec.Capabilities, &caps); err != nil {
		return nil, nil, fmt.Errorf("task capabilities unreadable: %w", err)
	}
	req = &Request{Method: mcp.MethodToolsCall, Name: rec.Tool, Principal: rec.Principal, Arguments: rec.Arguments,
		Meta:  &mcp.RequestMeta{ProtocolVersion: mcp.ProtocolVersion, ClientCapabilities: caps},
		Round: rec.Round, OperationID: rec.OperationID, TaskID: rec.ID, responses: rec.Responses,
		taskStatus: newTaskStatus(ctx, s.tasksRuntime(), run)}
	if _, err := hex.Decode(req.opID[:], []byte(rec.OperationID)); err != nil {
		return nil, nil, fmt.Errorf("task operation id unreadable: %w", err)
	}
	if rec.Asked != nil {
		iss, state, ok := decodePayload(rec.Asked)
		if !ok {
			return nil, nil, errors.New("task's asked questions unreadable")
		}
		req.issued, req.State = iss, state
	}
	if req.Round >= s.maxRounds {
		return nil, nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Too many rounds for one request")
	}
	s.mu.RLock()
	e := s.toolIndex[rec.Tool]
	s.mu.RUnlock()
	if e == nil {
		return nil, nil, fmt.Errorf("task's tool %q is no longer registered", rec.Tool)
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("mcpserver: panic in a task", "tool", rec.Tool, "task", rec.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			reply, err = nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
		}
	}()
	reply, err = e.handler(ctx, req)
	return req, reply, err
}

// settleTask turns a run's outcome into the update of its record. A tool
// error is completed with isError; a protocol error is failed with the
// JSON-RPC error inlined (SEP-2663 §error semantics).
func (s *Server) settleTask(rt *tasks, in *transport.Incoming, rec *store.Task, req *Request, reply Reply, err error) (func(*store.Task) error, bool) {
	outcome := func(status mcp.TaskStatus, result any, rpcErr *jsonrpc.Error) func(*store.Task) error {
		var res, errJSON json.RawMessage
		if result != nil {
			res, _ = json.Marshal(result)
		}
		if rpcErr != nil {
			errJSON, _ = json.Marshal(rpcErr)
		}
		// What the run said while working is over; a failure says what
		// went wrong (SEP-2663 §Task Execution Errors), in the words the
		// error already has on the wire.
		msg := ""
		if rpcErr != nil {
			msg = cleanStatusMessage(rpcErr.Message)
		}
		return func(t *store.Task) error {
			if t.Status != mcp.TaskWorking {
				return errNoChange
			}
			t.Status, t.StatusMessage, t.Result, t.Error, t.InputRequests, t.Responses = status, msg, res, errJSON, nil, nil
			t.UpdatedAt, t.LeaseUntil = rt.now().UTC(), time.Time{}
			return nil
		}
	}
	failed := func(e error) func(*store.Task) error {
		return outcome(mcp.TaskFailed, nil, s.wireError(in, e))
	}
	if err != nil {
		return failed(err), false
	}
	switch r := reply.(type) {
	case toolReply:
		if r.r != nil {
			return outcome(mcp.TaskCompleted, s.toolResult(r.r), nil), false
		}
	case *InputRequired:
		return s.settleAsk(rt, in, req, r, outcome, failed)
	}
	return failed(fmt.Errorf("task handler for %q returned %T, which does not answer tools/call in a task", rec.Tool, reply)), false
}

// settleAsk moves a task to input_required with the questions of a, after
// the same checks as an MRTR round: a valid request, only what the client
// declared when it started the task, and the rules of repeated prompting.
// A reply with state only runs the handler again at once.
func (s *Server) settleAsk(rt *tasks, in *transport.Incoming, req *Request, a *InputRequired,
	outcome func(mcp.TaskStatus, any, *jsonrpc.Error) func(*store.Task) error, failed func(error) func(*store.Task) error) (func(*store.Task) error, bool) {
	if a.err != nil {
		return failed(fmt.Errorf("invalid input requests: %w", a.err)), false
	}
	if need, missing := a.requiredCapabilities(req.Capabilities()); missing {
		return outcome(mcp.TaskFailed, nil, MissingCapability(need, "This task needs a client capability the call that started it did not declare")), false
	}
	stop, err := s.applyReaskRules(in, req, a)
	if err != nil {
		return failed(err), false
	}
	if stop != nil {
		return outcome(mcp.TaskCompleted, stop, nil), false
	}
	requests := make(map[string]json.RawMessage, len(a.requests))
	for k, r := range a.requests {
		b, err := json.Marshal(r)
		if err != nil {
			return failed(err), false
		}
		requests[k] = b
	}
	stateOnly := len(requests) == 0
	msg := cleanStatusMessage(a.status)
	return func(t *store.Task) error {
		if t.Status != mcp.TaskWorking {
			return errNoChange
		}
		// The questions go out under keys the task has not used: the
		// record's, so every instance agrees.
		_, used, _, _ := decodeTaskPayload(t.Asked)
		used = maps.Clone(used)
		if used == nil {
			used = map[string]bool{}
		}
		iss := maps.Clone(a.issued)
		pending := make(map[string]json.RawMessage, len(requests))
		for k, w := range taskKeys(a.keys, used) {
			is := iss[k]
			is.wire = w
			iss[k] = is
			pending[w] = requests[k]
			used[w] = true
		}
		t.Round, t.Asked, t.Responses, t.UpdatedAt = req.Round+1, encodeTaskAsked(iss, used, a.state), nil, rt.now().UTC()
		if stateOnly { // still working, and the run's message stands
			t.LeaseUntil = rt.leaseEnd(rt.now())
			return nil
		}
		t.Status, t.StatusMessage, t.InputRequests, t.LeaseUntil = mcp.TaskInputRequired, msg, pending, time.Time{}
		return nil
	}, stateOnly
}

// taskKeys returns the key each of a reply's question keys goes out
// under in a task. The extension wants a key to name one request over a
// task's whole life, while a handler asks again under its own key (a
// correction after an invalid answer, or a question asked anew), so a
// key the task has used (in used) becomes key#2, key#3, … (the first not
// used and not another question's key). The client answers under these
// keys; the handler reads the answers under its own. An answer sent
// again to a question asked before, such as a replayed update whose
// answer was refused, names a key that is no longer pending and is
// ignored.
func taskKeys(keys []string, used map[string]bool) map[string]string {
	out := make(map[string]string, len(keys))
	taken := func(w string) bool {
		_, mine := out[w]
		return used[w] || mine || slices.Contains(keys, w)
	}
	for _, k := range keys {
		if !used[k] {
			out[k] = k
		}
	}
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		for n := 2; ; n++ {
			if w := k + "#" + strconv.Itoa(n); !taken(w) {
				out[k] = w
				break
			}
		}
	}
	return out
}

// serveTasks answers tasks/get, tasks/update and tasks/cancel.
func (s *Server) serveTasks(ctx context.Context, in *transport.Incoming, principal string) (any, error) {
	rt := s.tasksRuntime()
	if !in.Meta.ClientCapabilities.HasExtension(mcp.ExtensionTasks) {
		return nil, missingTasks(in.Method + " needs the " + mcp.ExtensionTasks + " extension declared in this request's _meta clientCapabilities")
	}
	if !validTaskID(in.Name) {
		return nil, errUnknownTask
	}
	rec, err := rt.lookup(ctx, in.Name, principal)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errUnknownTask
		}
		return nil, err
	}
	switch in.Method {
	case mcp.MethodTasksGet:
		s.takeOver(ctx, rt, rec)
		return s.detailedTask(rt, rec), nil
	case mcp.MethodTasksUpdate:
		return s.updateTask(ctx, rt, in, rec)
	case mcp.MethodTasksCancel:
		return s.cancelTask(ctx, rt, rec)
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", in.Method)
}

// lookup returns the task id of principal; another user's task and an
// expired one are store.ErrNotFound, like an unknown id.
func (rt *tasks) lookup(ctx context.Context, id, principal string) (*store.Task, error) {
	rec, err := rt.store.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.Principal != principal || (!rec.ExpiresAt.IsZero() && !rt.now().Before(rec.ExpiresAt)) {
		return nil, store.ErrNotFound
	}
	return rec, nil
}

func (s *Server) detailedTask(rt *tasks, rec *store.Task) *mcp.DetailedTask {
	d := &mcp.DetailedTask{ResultType: mcp.ResultTypeComplete, Task: rt.wire(rec), Meta: s.serverMeta()}
	switch rec.Status {
	case mcp.TaskInputRequired:
		d.InputRequests = rec.InputRequests
	case mcp.TaskCompleted:
		d.Result = rec.Result
	case mcp.TaskFailed:
		d.Error = rec.Error
	}
	return d
}

func (s *Server) ack() *mcp.Ack {
	return &mcp.Ack{ResultType: mcp.ResultTypeComplete, Meta: s.serverMeta()}
}

// updateTask takes answers to the task's pending input requests. Each is
// checked against the request it answers (-32602, nothing stored, when it
// is not a valid result of it); answers to keys that are not pending are
// ignored and acknowledged, so a replayed or concurrent update with the
// same answers has one effect, and an update of a task that has ended
// changes nothing (no key is outstanding then). When the last pending
// request is answered, the task is working again and its handler runs,
// on this instance.
func (s *Server) updateTask(ctx context.Context, rt *tasks, in *transport.Incoming, rec *store.Task) (any, error) {
	if in.InputResponses == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: inputResponses is required (an object)")
	}
	if rec.Status.Terminal() {
		// No key is outstanding: the answers are ignored and acknowledged
		// (SEP-2663 §Task Update Requests).
		return s.ack(), nil
	}
	if rec.Status == mcp.TaskInputRequired {
		pending, _, err := pendingQuestions(rec)
		if err != nil {
			return nil, err
		}
		if err := checkResponses(pending, in.InputResponses); err != nil {
			return nil, err
		}
	}
	updated, err := rt.store.UpdateTask(ctx, rec.ID, func(t *store.Task) error {
		if t.Status != mcp.TaskInputRequired {
			return errNoChange
		}
		_, handlerKey, err := pendingQuestions(t)
		if err != nil {
			return err
		}
		changed := false
		for w, v := range in.InputResponses {
			k, pending := handlerKey[w]
			if !pending || len(v) == 0 || string(v) == "null" {
				continue
			}
			if t.Responses == nil {
				t.Responses = map[string]json.RawMessage{}
			}
			t.Responses[k] = cloneBytes(v)
			delete(t.InputRequests, w)
			changed = true
		}
		if !changed {
			return errNoChange
		}
		if len(t.InputRequests) == 0 { // working again: the question's message is over
			t.Status, t.StatusMessage, t.InputRequests, t.LeaseUntil = mcp.TaskWorking, "", nil, rt.leaseEnd(rt.now())
		}
		t.UpdatedAt = rt.now().UTC()
		return nil
	})
	switch {
	case errors.Is(err, errNoChange):
		return s.ack(), nil
	case errors.Is(err, store.ErrNotFound):
		return nil, errUnknownTask
	case err != nil:
		return nil, err
	}
	if updated.Status == mcp.TaskWorking {
		s.launch(rt, updated.ID, updated.LeaseUntil)
	}
	return s.ack(), nil
}

// pendingQuestions returns the questions t still waits for, by the key
// the client answers under, and the handler's key for each of them.
func pendingQuestions(t *store.Task) (questions map[string]issued, handlerKey map[string]string, err error) {
	iss, _, _, ok := decodeTaskPayload(t.Asked)
	if !ok {
		return nil, nil, errors.New("task's asked questions unreadable")
	}
	questions, handlerKey = map[string]issued{}, map[string]string{}
	for k, is := range iss {
		w := is.wire
		if w == "" { // asked before tasks had keys of their own
			w = k
		}
		if _, pending := t.InputRequests[w]; pending {
			questions[w], handlerKey[w] = is, k
		}
	}
	return questions, handlerKey, nil
}

// cancelTask ends a live task as cancelled and cancels its run's context
// when it runs on this instance; a task that has already ended is left as
// it is, and so is one whose handler's effect the ledger already holds
// (TaskOptions.Ledger: the cancel is too late). Either way the answer is
// the empty acknowledgement.
func (s *Server) cancelTask(ctx context.Context, rt *tasks, rec *store.Task) (any, error) {
	if rec.Status.Terminal() {
		return s.ack(), nil
	}
	if late, err := rt.recordCancel(ctx, rec); err != nil || late {
		if err != nil {
			return nil, err
		}
		return s.ack(), nil
	}
	_, err := rt.store.UpdateTask(ctx, rec.ID, rt.markCancelled)
	if err != nil && !errors.Is(err, errNoChange) {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errUnknownTask
		}
		return nil, err
	}
	rt.mu.Lock()
	run := rt.running[rec.ID]
	rt.mu.Unlock()
	if run != nil {
		run.cancel()
	}
	return s.ack(), nil
}

// markCancelled is the store update of a cancelled task; errNoChange when
// the task has ended already.
func (rt *tasks) markCancelled(t *store.Task) error {
	if t.Status.Terminal() {
		return errNoChange
	}
	t.Status, t.StatusMessage, t.InputRequests, t.LeaseUntil = mcp.TaskCancelled, "Cancelled by the client", nil, time.Time{}
	t.UpdatedAt = rt.now().UTC()
	return nil
}

// recordCancel records the cancel of rec in the ledger under its
// operation id (nothing without TaskOptions.Ledger). late is true when
// the ledger holds the operation with another outcome: the handler's
// effect committed first.
func (rt *tasks) recordCancel(ctx context.Context, rec *store.Task) (late bool, err error) {
	if rt.ledger == nil {
		return false, nil
	}
	op := &store.Operation{ID: rec.OperationID, Principal: rec.Principal, Name: mcp.MethodToolsCall + " " + rec.Tool,
		Outcome: TaskCancelOutcome, CompletedAt: rt.now().UTC()}
	err = rt.ledger.CompleteOperation(ctx, op, nil)
	if recorded := (*store.RecordedError)(nil); errors.As(err, &recorded) {
		return recorded.Op.Outcome != TaskCancelOutcome, nil
	}
	if errors.Is(err, store.ErrConflict) { // recorded while we wrote: read it
		got, gerr := rt.ledger.GetOperation(ctx, rec.OperationID)
		if gerr != nil {
			return false, gerr
		}
		return got.Outcome != TaskCancelOutcome, nil
	}
	return false, err
}

// cancelRecorded reports whether the ledger holds rec's operation as
// cancelled by tasks/cancel (never without TaskOptions.Ledger). A read
// error counts as no.
func (rt *tasks) cancelRecorded(ctx context.Context, rec *store.Task) bool {
	if rt.ledger == nil {
		return false
	}
	op, err := rt.ledger.GetOperation(ctx, rec.OperationID)
	return err == nil && op.Outcome == TaskCancelOutcome
}
