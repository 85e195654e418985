package tasktest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// Interrupted checks a shutdown on st: instance A runs a task whose
// handler works until its context ends, and B, on the same clock, finds
// A's lease (an hour) held and leaves the task alone. A shuts down
// (StopTasks): its run is stopped, observed as interrupted, and its lease
// released, so B's next tasks/get takes the task over at once, an hour
// before the lease would have ended, and B's run completes it. The work
// is done once.
func Interrupted(t *testing.T, st mcpserver.TaskStore) {
	t.Helper()
	now := time.Date(2026, 7, 28, 9, 30, 15, 123456789, time.UTC)
	var effects atomic.Int32
	observed := map[string]chan mcpserver.Outcome{"a": make(chan mcpserver.Outcome, 4), "b": make(chan mcpserver.Outcome, 4)}
	started := make(chan string, 2)
	instance := func(name string) *mcpserver.Server {
		s := mcpserver.New(mcp.Implementation{Name: name, Version: "1"}, &mcpserver.Options{Observer: func(_ context.Context, r *mcpserver.Round) {
			if r.TaskID != "" && r.Outcome != mcpserver.OutcomeTask {
				observed[name] <- r.Outcome
			}
		}})
		s.EnableTasks(&mcpserver.TaskOptions{Store: st, TTL: 24 * time.Hour, Lease: time.Hour, Now: func() time.Time { return now }})
		s.AddToolWith(&mcp.Tool{Name: "work"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			if r.TaskAllowed() {
				return mcpserver.RunAsTask(), nil
			}
			started <- name
			if name == "a" { // works until its instance stops it
				<-ctx.Done()
				return nil, ctx.Err()
			}
			effects.Add(1)
			return mcpserver.Text("done on " + name), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired})
		return s
	}
	a, b := instance("a"), instance("b")
	created := serve(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},`+tasksMeta+`}}`)
	id, _ := created["taskId"].(string)
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + tasksMeta + `}}`
	if name := <-started; name != "a" {
		t.Fatalf("the task started on %s", name)
	}
	waitStatus(t, b, id, "working") // A's lease holds: B leaves the task alone
	if effects.Load() != 0 {
		t.Fatal("B ran the task while A held its lease")
	}

	if err := a.StopTasks(t.Context()); err != nil {
		t.Fatalf("StopTasks: %v", err)
	}
	if o := <-observed["a"]; o != mcpserver.OutcomeInterrupted {
		t.Fatalf("A's run was observed as %s, want %s", o, mcpserver.OutcomeInterrupted)
	}
	serve(t, b, get) // the lease was released: B takes the task over now
	g := waitStatus(t, b, id, "completed")
	res, _ := g["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != "done on b" || effects.Load() != 1 {
		t.Fatalf("the task ended as %v with %d effects; want completed by B, once", g, effects.Load())
	}
	if o := <-observed["b"]; o != mcpserver.OutcomeCompleted {
		t.Fatalf("B's run was observed as %s, want %s", o, mcpserver.OutcomeCompleted)
	}
}
