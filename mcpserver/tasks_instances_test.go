package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// blockingInstance is a server on st whose "block" tool runs as a task
// and waits for its context to end; ended counts the runs whose context
// ended, and runs the runs.
func blockingInstance(st TaskStore, lease time.Duration, runs, ended *atomic.Int32) *Server {
	s := New(mcp.Implementation{Name: "i", Version: "1"}, nil)
	s.EnableTasks(&TaskOptions{Store: st, Lease: lease})
	s.AddToolWith(&mcp.Tool{Name: "block"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		runs.Add(1)
		select {
		case <-ctx.Done():
			ended.Add(1)
			return nil, ctx.Err()
		case <-time.After(24 * time.Hour):
			return Text("finished"), nil
		}
	}, &HandlerOptions{Tasks: TaskOptional})
	return s
}

// TestTaskCancelAcrossInstances: tasks/cancel served by instance B ends
// the context of the run on instance A (A's lease renewal reads the
// record, within a third of the lease), A's run stores nothing, and the
// task stays cancelled.
func TestTaskCancelAcrossInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		const lease = 3 * time.Second
		var runsA, endedA, runsB, endedB atomic.Int32
		a := blockingInstance(st, lease, &runsA, &endedA)
		b := blockingInstance(st, lease, &runsB, &endedB)
		id := startTask(t, rpc{a, "alice"}, "block", `{}`)
		synctest.Wait()
		if runsA.Load() != 1 {
			t.Fatalf("runs on A: %d", runsA.Load())
		}
		if ack := mustCall(t, rpc{b, "alice"}, taskReq("tasks/cancel", id, tasksCaps, "")); ack["resultType"] != "complete" {
			t.Fatalf("cancel on B: %v", ack)
		}
		time.Sleep(lease / 3)
		synctest.Wait()
		if endedA.Load() != 1 {
			t.Fatal("the run on A did not see the cancellation made on B")
		}
		a.WaitTasks()
		b.WaitTasks()
		if g := getTask(t, rpc{a, "alice"}, id); g["status"] != "cancelled" || runsB.Load() != 0 {
			t.Fatalf("after the cancel: %v; runs on B %d", g, runsB.Load())
		}
	})
}

// TestTaskRunsObserved: Options.Observer sees the call answered with a
// task (OutcomeTask) and then each run of its handler, with the task's
// id, operation and round: the run that asks, the run with the answers,
// and a run ended by tasks/cancel.
func TestTaskRunsObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var rounds []Round
		s := New(mcp.Implementation{Name: "obs", Version: "1"}, &Options{Observer: func(_ context.Context, r *Round) {
			mu.Lock()
			defer mu.Unlock()
			rounds = append(rounds, *r)
		}})
		s.EnableTasks(nil)
		s.AddToolWith(&mcp.Tool{Name: "ask"}, func(ctx context.Context, r *Request) (Reply, error) {
			if r.TaskAllowed() {
				return RunAsTask(), nil
			}
			switch r.Elicitation("ok").Outcome {
			case elicit.Missing:
				return Ask().ElicitForm("ok", "OK?", json.RawMessage(confirmForm)), nil
			case elicit.Declined:
				return ToolError("declined"), nil
			}
			<-ctx.Done() // accepted: works until cancelled
			return nil, ctx.Err()
		}, &HandlerOptions{Tasks: TaskOptional})
		c := rpc{s, "alice"}
		id := startTask(t, c, "ask", `{}`)
		s.WaitTasks()
		mustCall(t, c, taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{"ok":{"action":"accept","content":{"confirm":true}}}`))
		synctest.Wait()
		mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, ""))
		s.WaitTasks()
		declined := startTask(t, c, "ask", `{}`)
		s.WaitTasks()
		mustCall(t, c, taskReq("tasks/update", declined, tasksCaps, `,"inputResponses":{"ok":{"action":"decline"}}`))
		s.WaitTasks()

		type seen struct {
			task    string
			round   int
			outcome Outcome
		}
		var got []seen
		mu.Lock()
		for _, r := range rounds {
			if r.Method != mcp.MethodToolsCall || r.Name != "ask" || r.Principal != "alice" || len(r.OperationID) != 32 {
				t.Errorf("round %+v", r)
			}
			got = append(got, seen{r.TaskID, r.Round, r.Outcome})
		}
		mu.Unlock()
		want := []seen{
			{id, 0, OutcomeTask}, {id, 0, OutcomeInputRequired}, {id, 1, OutcomeCancelled},
			{declined, 0, OutcomeTask}, {declined, 0, OutcomeInputRequired}, {declined, 1, OutcomeDeclined},
		}
		// The call's round is reported once its response is built, which
		// may be after the task's first run was: order within a round
		// does not count.
		order := func(a, b seen) int {
			return cmp.Or(cmp.Compare(a.task, b.task), cmp.Compare(a.round, b.round), cmp.Compare(a.outcome, b.outcome))
		}
		slices.SortFunc(got, order)
		slices.SortFunc(want, order)
		if !slices.Equal(got, want) {
			t.Fatalf("rounds:\n got %v\nwant %v", got, want)
		}
	})
}

// stallingStore is a TaskStore whose writes hang while stalled: what an
// instance that stalls (a long pause, a hung connection) without dying
// sees of its store.
type stallingStore struct {
	TaskStore
	mu    sync.Mutex
	stall chan struct{} // while set, writes wait until it is closed
}

func (s *stallingStore) UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	s.mu.Lock()
	stall := s.stall
	s.mu.Unlock()
	if stall != nil {
		<-stall
	}
	return s.TaskStore.UpdateTask(ctx, id, update)
}

func (s *stallingStore) set(stalled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stalled {
		s.stall = make(chan struct{})
	} else if s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
}

// leaseInstance is a server on st whose "work" tool runs as a task: a
// run waits until finish is closed and answers "done on <name>", or
// until its context ends, which ended counts; when say is closed first,
// it sets a status message and returns its error, if any. Its Observer
// keeps the outcome of each task run (runOutcomes).
type leaseInstance struct {
	*Server
	name   string
	finish chan struct{}
	say    chan struct{}
	runs   atomic.Int32
	ended  atomic.Int32
	said   chan error // what SetStatusMessage returned, once said

	mu       sync.Mutex
	outcomes []Outcome
}

// newLeaseInstance makes the instance; now is its clock (nil: time.Now).
func newLeaseInstance(name string, st TaskStore, lease time.Duration, now func() time.Time) *leaseInstance {
	in := &leaseInstance{name: name, finish: make(chan struct{}), say: make(chan struct{}), said: make(chan error, 1)}
	in.Server = New(mcp.Implementation{Name: name, Version: "1"}, &Options{Observer: func(_ context.Context, r *Round) {
		if r.TaskID != "" && r.Outcome != OutcomeTask {
			in.mu.Lock()
			defer in.mu.Unlock()
			in.outcomes = append(in.outcomes, r.Outcome)
		}
	}})
	in.EnableTasks(&TaskOptions{Store: st, TTL: 24 * time.Hour, Lease: lease, Now: now})
	in.AddToolWith(&mcp.Tool{Name: "work"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		in.runs.Add(1)
		select {
		case <-ctx.Done():
			in.ended.Add(1)
			return nil, ctx.Err()
		case <-in.say:
			err := r.SetStatusMessage("Halfway")
			in.said <- err
			if err != nil {
				return nil, err
			}
			<-in.finish
			return Text("done on " + in.name), nil
		case <-in.finish:
			return Text("done on " + in.name), nil
		}
	}, &HandlerOptions{Tasks: TaskOptional})
	return in
}

// runOutcomes returns the outcomes of the task runs observed so far.
func (in *leaseInstance) runOutcomes() []Outcome {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.outcomes)
}

// TestTaskLeaseLost: instance A runs a task and stalls (its store writes
// hang) past the lease; B takes the task over and runs it. When A comes
// back, its run learns it lost the lease: its renewal ends its context
// ("renewal"; "other run finished" when B has completed the task by
// then), or, when its handler had already returned, its outcome is not
// stored ("late outcome"); either way the task ends with B's result, and
// A's run is observed as lease_lost, not cancelled: no one cancelled it.
func TestTaskLeaseLost(t *testing.T) {
	for _, tt := range []struct {
		name             string
		late, bFinishing bool
	}{
		{name: "renewal"},
		{name: "late outcome", late: true},
		{name: "other run finished", bFinishing: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				shared := NewMemoryTaskStore()
				const lease = 3 * time.Second
				aStore := &stallingStore{TaskStore: shared}
				a, b := newLeaseInstance("a", aStore, lease, nil), newLeaseInstance("b", shared, lease, nil)
				id := startTask(t, rpc{a.Server, "alice"}, "work", `{}`)
				synctest.Wait()
				aStore.set(true)
				time.Sleep(lease + time.Second)
				if g := getTask(t, rpc{b.Server, "alice"}, id); g["status"] != "working" { // B takes it over
					t.Fatalf("tasks/get on B: %v", g)
				}
				synctest.Wait()
				if tt.late {
					close(a.finish) // A's handler returns; storing its outcome hangs
					synctest.Wait()
				}
				if tt.bFinishing {
					close(b.finish)
					b.WaitTasks()
				}
				aStore.set(false)
				synctest.Wait()
				if a.runs.Load() != 1 || b.runs.Load() != 1 {
					t.Fatalf("runs: A %d, B %d", a.runs.Load(), b.runs.Load())
				}
				if !tt.late && a.ended.Load() != 1 {
					t.Fatal("A's run was not told it lost the lease")
				}
				if g := getTask(t, rpc{b.Server, "alice"}, id); !tt.bFinishing && g["status"] != "working" {
					t.Fatalf("A's late outcome was stored: %v", g)
				}
				if !tt.bFinishing {
					close(b.finish)
				}
				a.WaitTasks()
				b.WaitTasks()
				g := getTask(t, rpc{a.Server, "alice"}, id)
				res, _ := g["result"].(map[string]any)
				if content, _ := res["content"].([]any); g["status"] != "completed" || len(content) != 1 ||
					content[0].(map[string]any)["text"] != "done on b" {
					t.Fatalf("the task ended with %v", g)
				}
				if got := a.runOutcomes(); !slices.Equal(got, []Outcome{OutcomeLeaseLost}) {
					t.Errorf("A's run observed as %v, want [lease_lost]", got)
				}
				if got := b.runOutcomes(); !slices.Equal(got, []Outcome{OutcomeCompleted}) {
					t.Errorf("B's run observed as %v, want [completed]", got)
				}
			})
		})
	}
}

// TestTaskLeaseLostStatusMessage: a run that learns it lost the lease
// when it sets a status message (its clock stood still, so its renewals
// kept a lease B's clock finds run out) returns context.Canceled from
// SetStatusMessage and is observed as lease_lost.
func TestTaskLeaseLostStatusMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		const lease = time.Hour // no renewal during the test
		t0 := time.Now()
		a := newLeaseInstance("a", st, lease, func() time.Time { return t0 })
		b := newLeaseInstance("b", st, lease, func() time.Time { return t0.Add(2 * lease) })
		id := startTask(t, rpc{a.Server, "alice"}, "work", `{}`)
		synctest.Wait()
		getTask(t, rpc{b.Server, "alice"}, id) // B takes it over
		synctest.Wait()
		close(a.say)
		if err := <-a.said; !errors.Is(err, context.Canceled) {
			t.Fatalf("A's SetStatusMessage after the takeover: %v, want context.Canceled", err)
		}
		a.WaitTasks()
		if got := a.runOutcomes(); !slices.Equal(got, []Outcome{OutcomeLeaseLost}) {
			t.Errorf("A's run observed as %v, want [lease_lost]", got)
		}
		close(b.finish)
		b.WaitTasks()
		if g := getTask(t, rpc{b.Server, "alice"}, id); g["status"] != "completed" || g["statusMessage"] != nil {
			t.Fatalf("the task ended as %v", g)
		}
	})
}

// TestTaskSweptWhileRunning: a task whose TTL passes while its handler
// runs, and which Server.SweepTasks deletes, stops its run at the next
// lease renewal; the run is observed as expired, not cancelled.
func TestTaskSweptWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease, ttl = 3 * time.Second, 2 * time.Second
		var ended atomic.Int32
		var mu sync.Mutex
		var outcomes []Outcome
		s := New(mcp.Implementation{Name: "s", Version: "1"}, &Options{Observer: func(_ context.Context, r *Round) {
			if r.TaskID != "" && r.Outcome != OutcomeTask {
				mu.Lock()
				defer mu.Unlock()
				outcomes = append(outcomes, r.Outcome)
			}
		}})
		s.EnableTasks(&TaskOptions{TTL: ttl, Lease: lease})
		s.AddToolWith(&mcp.Tool{Name: "work"}, func(ctx context.Context, r *Request) (Reply, error) {
			if r.TaskAllowed() {
				return RunAsTask(), nil
			}
			<-ctx.Done()
			ended.Add(1)
			return nil, ctx.Err()
		}, &HandlerOptions{Tasks: TaskOptional})
		startTask(t, rpc{s, "alice"}, "work", `{}`)
		time.Sleep(ttl + time.Millisecond)
		if n, err := s.SweepTasks(context.Background()); n != 1 || err != nil {
			t.Fatalf("SweepTasks: %d, %v", n, err)
		}
		time.Sleep(lease / 3)
		s.WaitTasks()
		mu.Lock()
		defer mu.Unlock()
		if ended.Load() != 1 || !slices.Equal(outcomes, []Outcome{OutcomeExpired}) {
			t.Fatalf("run ended %d times, observed as %v; want once, [expired]", ended.Load(), outcomes)
		}
	})
}

// TestTaskCancelReachesNextRun: the run that asked may still be on its
// way out (here held in the Observer) when tasks/update starts the next
// run of the task; its exit leaves the next run reachable, so
// tasks/cancel ends that run at once, not a lease renewal later.
func TestTaskCancelReachesNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		s := New(mcp.Implementation{Name: "s", Version: "1"}, &Options{Observer: func(_ context.Context, r *Round) {
			if r.TaskID != "" && r.Outcome == OutcomeInputRequired {
				<-hold
			}
		}})
		s.EnableTasks(nil)
		var ended atomic.Int32
		s.AddToolWith(&mcp.Tool{Name: "ask"}, func(ctx context.Context, r *Request) (Reply, error) {
			if r.TaskAllowed() {
				return RunAsTask(), nil
			}
			if r.Elicitation("ok").Outcome == elicit.Missing {
				return Ask().ElicitForm("ok", "OK?", json.RawMessage(confirmForm)), nil
			}
			<-ctx.Done()
			ended.Add(1)
			return nil, ctx.Err()
		}, &HandlerOptions{Tasks: TaskOptional})
		c := rpc{s, "alice"}
		id := startTask(t, c, "ask", `{}`)
		synctest.Wait() // the first run asked, and its goroutine is held
		mustCall(t, c, taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{"ok":{"action":"accept","content":{"confirm":true}}}`))
		synctest.Wait() // the next run works
		close(hold)
		synctest.Wait() // the first run's goroutine has returned
		mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, ""))
		synctest.Wait()
		if ended.Load() != 1 {
			t.Fatal("tasks/cancel did not reach the run on this instance")
		}
		s.WaitTasks()
	})
}
