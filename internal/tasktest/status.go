package tasktest

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// StatusMessage checks that a task's statusMessage lives in the store: a
// run on one instance sets it (mcpserver.Request.SetStatusMessage, then
// Progress), and tasks/get on another instance sharing st shows it. The
// first message holds what a store may refuse (NUL, bytes that are not
// UTF-8) among terminal escapes: it is stored made valid, escapes kept.
// Once the task has completed it shows no message: the work is over.
func StatusMessage(t *testing.T, st mcpserver.TaskStore) {
	t.Helper()
	set, release := make(chan error), make(chan struct{})
	tool := func(s *mcpserver.Server, run bool) *mcpserver.Server {
		s.EnableTasks(&mcpserver.TaskOptions{Store: st})
		s.AddToolWith(&mcp.Tool{Name: "report"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			if r.TaskAllowed() {
				return mcpserver.RunAsTask(), nil
			}
			if !run {
				t.Error("the task ran on the instance that did not start it")
				return nil, ctx.Err()
			}
			set <- r.SetStatusMessage("Step 1\x00\xff \x1b]0;title\x07\u202e")
			<-release
			set <- r.Progress(2, 3, "Step 2")
			<-release
			return mcpserver.Text("reported"), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired})
		return s
	}
	a := tool(mcpserver.New(mcp.Implementation{Name: "a", Version: "1"}, nil), true)
	b := tool(mcpserver.New(mcp.Implementation{Name: "b", Version: "1"}, nil), false)
	created := serve(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"report","arguments":{},`+tasksMeta+`}}`)
	id, _ := created["taskId"].(string)
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + tasksMeta + `}}`
	for _, want := range []string{"Step 1\uFFFD\uFFFD \x1b]0;title\x07\u202e", "Step 2 (2/3)"} {
		if err := <-set; err != nil {
			t.Fatalf("setting %q: %v", want, err)
		}
		g := serve(t, b, get)
		if msg, _ := g["statusMessage"].(string); msg != want || !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) {
			t.Errorf("tasks/get on the other instance: statusMessage %q, want %q", msg, want)
		}
		release <- struct{}{}
	}
	a.WaitTasks()
	if g := serve(t, b, get); g["status"] != "completed" || g["statusMessage"] != nil {
		t.Fatalf("the task did not complete, or kept the message of its work: %v", g)
	}
}
