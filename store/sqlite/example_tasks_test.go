package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store/sqlite"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// A Store keeps tasks (store.Tasks, as every store does), so one
// database serves the tasks of several server instances
// (mcpserver.TaskOptions.Store): a task started on one is read, answered
// and finished through another. Here a load balancer sends tools/call to
// instance a and everything else to b: the run that asks is a's, the run
// with the answer b's.
func ExampleStore_tasks() {
	dir, err := os.MkdirTemp("", "tasks-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(filepath.Join(dir, "elicit.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	instance := func(name string) *mcpserver.Server {
		s := mcpserver.New(mcp.Implementation{Name: "exporter-" + name, Version: "1.0.0"}, nil)
		s.EnableTasks(&mcpserver.TaskOptions{Store: st})
		s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			if req.TaskAllowed() {
				return mcpserver.RunAsTask(), nil
			}
			to := req.Elicitation("to")
			if to.Outcome == elicit.Missing {
				fmt.Println(name + ": exported; asking who gets it")
				return mcpserver.Ask().ElicitForm("to", "Who gets the export?",
					json.RawMessage(`{"type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`)), nil
			}
			fmt.Printf("%s: sending to %v\n", name, to.Content["email"])
			return mcpserver.Text("Sent."), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
		return s
	}
	a, b := instance("a"), instance("b")
	ha, hb := streamhttp.NewHandler(a, nil), streamhttp.NewHandler(b, nil)
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == mcp.MethodToolsCall {
			ha.ServeHTTP(w, r)
			return
		}
		hb.ServeHTTP(w, r)
	}))
	defer lb.Close()

	c := mcpclient.New(lb.URL, &mcpclient.Options{
		Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil},
		Handlers: &mcpclient.Handlers{
			ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"email": "ada@example.com"}}, nil
			},
		},
	})
	r, err := c.CallTool(context.Background(), "export", nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	a.WaitTasks()
	b.WaitTasks()
	fmt.Println(r.Content[0].Text)
	// Output:
	// a: exported; asking who gets it
	// b: sending to ada@example.com
	// Sent.
}
