package tasktest

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// LeaseLost checks that a task's lease fences its runs on st: instance A
// runs a task and stalls (its clock stands still, so it renews nothing
// that counts) until B, whose clock is past A's lease, takes the task
// over. A's run then finishes, and its outcome is not stored; B's run,
// holding the lease through st's round trip (the lease's end is its
// token, compared exactly), sets its status message and completes the
// task. A's run is observed as lease_lost, B's as completed. Clocks are
// injected; the lease is long enough that no real renewal happens
// during the test.
func LeaseLost(t *testing.T, st mcpserver.TaskStore) {
	t.Helper()
	const lease = time.Hour
	t0 := time.Date(2026, 7, 28, 9, 30, 15, 123456789, time.UTC)
	started, said, finish := make(chan string, 2), make(chan error, 1), make(chan struct{})
	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	// What each instance's Observer saw of the task's runs.
	observed := map[string]chan mcpserver.Outcome{"a": make(chan mcpserver.Outcome, 4), "b": make(chan mcpserver.Outcome, 4)}
	instance := func(name string, now time.Time) *mcpserver.Server {
		s := mcpserver.New(mcp.Implementation{Name: name, Version: "1"}, &mcpserver.Options{Observer: func(_ context.Context, r *mcpserver.Round) {
			if r.TaskID != "" && r.Outcome != mcpserver.OutcomeTask {
				observed[name] <- r.Outcome
			}
		}})
		s.EnableTasks(&mcpserver.TaskOptions{Store: st, TTL: 24 * time.Hour, Lease: lease, Now: func() time.Time { return now }})
		s.AddToolWith(&mcp.Tool{Name: "work"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			if r.TaskAllowed() {
				return mcpserver.RunAsTask(), nil
			}
			started <- name
			<-release[name]
			if name == "b" {
				said <- r.SetStatusMessage("Finishing")
				<-finish
			}
			return mcpserver.Text("done on " + name), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired})
		return s
	}
	a, b := instance("a", t0), instance("b", t0.Add(2*lease))
	created := serve(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},`+tasksMeta+`}}`)
	id, _ := created["taskId"].(string)
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + tasksMeta + `}}`
	if name := <-started; name != "a" {
		t.Fatalf("the task started on %s", name)
	}
	serve(t, b, get) // B finds A's lease over and takes the task over
	if name := <-started; name != "b" {
		t.Fatalf("the takeover ran on %s", name)
	}

	close(release["a"])
	a.WaitTasks()
	if g := serve(t, b, get); g["status"] != "working" {
		t.Fatalf("A's outcome was stored although B runs the task: %v", g)
	}
	if o := <-observed["a"]; o != mcpserver.OutcomeLeaseLost {
		t.Fatalf("A's run was observed as %s, want %s: no one cancelled it", o, mcpserver.OutcomeLeaseLost)
	}
	close(release["b"])
	if err := <-said; err != nil {
		t.Fatalf("B's status message: %v", err)
	}
	if g := serve(t, a, get); g["status"] != "working" || g["statusMessage"] != "Finishing" {
		t.Fatalf("B's status message is not stored: %v", g)
	}
	close(finish)
	b.WaitTasks()
	g := serve(t, a, get)
	res, _ := g["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if g["status"] != "completed" || len(content) != 1 || content[0].(map[string]any)["text"] != "done on b" || g["statusMessage"] != nil {
		t.Fatalf("the task ended as %v; want completed by B, no status message", g)
	}
	if o := <-observed["b"]; o != mcpserver.OutcomeCompleted {
		t.Fatalf("B's run was observed as %s, want %s", o, mcpserver.OutcomeCompleted)
	}
}
