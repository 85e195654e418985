package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
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
