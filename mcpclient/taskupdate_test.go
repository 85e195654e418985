package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// TestOnTaskUpdate: the client tells OnTaskUpdate about the task a call
// became, once at creation (Polls 0), then on each tasks/get that shows
// another status or statusMessage, and not on the polls that show none;
// input_required is told before the question is asked, and the end
// before CallTool returns.
func TestOnTaskUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mcpserver.New(mcp.Implementation{Name: "tasks", Version: "1"}, nil)
		s.EnableTasks(&mcpserver.TaskOptions{PollInterval: time.Second})
		s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			if r.TaskAllowed() {
				return mcpserver.RunAsTask(), nil
			}
			if r.Elicitation("to").Outcome != elicit.Missing {
				return mcpserver.Text("sent"), nil
			}
			_ = r.SetStatusMessage("Reading")   // t = 0
			time.Sleep(2500 * time.Millisecond) // polls at 1 s and 2 s see "Reading"
			_ = r.Progress(1, 2, "Exporting")   // t = 2.5 s, seen at 3 s
			time.Sleep(2200 * time.Millisecond) // t = 4.7 s: the question, seen at 5 s
			return mcpserver.Ask().ElicitForm("to", "Who gets it?", json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`)), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
		var got []string
		asked := 0
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{
			HTTPClient: mcptest.PipeServer(t, streamhttp.NewHandler(s, nil)), Extensions: withTasks, Handlers: recipient(&asked),
			OnTaskUpdate: func(u mcpclient.TaskUpdate) {
				if u.Tool != "export" || len(u.TaskID) != 32 {
					t.Errorf("update %+v", u)
				}
				line := fmt.Sprintf("%d %s", u.Polls, u.Status)
				if u.Status == mcp.TaskWorking {
					line += " " + u.StatusMessage
				}
				if u.Status == mcp.TaskInputRequired && asked != 0 {
					t.Error("input_required was told after the question was asked")
				}
				got = append(got, line)
			}})
		r, err := c.CallTool(context.Background(), "export", nil)
		if err != nil || r.Content[0].Text != "sent" {
			t.Fatalf("%v %v", r, err)
		}
		want := []string{"0 working ", "1 working Reading", "3 working Exporting (1/2)", "5 input_required", "6 completed"}
		if !slices.Equal(got, want) {
			t.Fatalf("updates\n%q\nwant\n%q", got, want)
		}
	})
}

// TestOnTaskUpdateCancel: a host cancels the task by ending the call's
// context from OnTaskUpdate: the client sends tasks/cancel, the task's
// handler stops, and CallTool returns the context's error.
func TestOnTaskUpdateCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan struct{})
		hc := mcptest.PipeServer(t, streamhttp.NewHandler(taskTools(cancelled), nil))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var statuses []mcp.TaskStatus
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Extensions: withTasks,
			OnTaskUpdate: func(u mcpclient.TaskUpdate) {
				statuses = append(statuses, u.Status)
				cancel() // the user pressed Esc
			}})
		if _, err := c.CallTool(ctx, "stuck", nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		select {
		case <-cancelled:
		case <-time.After(time.Minute):
			t.Fatal("the task's handler was not cancelled")
		}
		if !slices.Equal(statuses, []mcp.TaskStatus{mcp.TaskWorking}) {
			t.Fatalf("updates %v", statuses)
		}
	})
}

// A host shows the task a call became while the client follows it:
// OnTaskUpdate hears of each new status or statusMessage (server text:
// a terminal host cleans it before printing, as cmd/elicit does).
func ExampleTaskUpdate() {
	seen := make(chan struct{})
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(nil)
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		_ = req.SetStatusMessage("Exporting the report")
		<-seen // the work: here it lasts until the host has shown the message
		return mcpserver.Text("Report exported."), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{
		Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil},
		OnTaskUpdate: func(u mcpclient.TaskUpdate) {
			if u.Status != mcp.TaskWorking || u.StatusMessage == "" {
				fmt.Println(u.Tool, u.Status)
				return
			}
			fmt.Printf("%s %s: %s\n", u.Tool, u.Status, u.StatusMessage)
			close(seen)
		},
	})
	r, err := c.CallTool(context.Background(), "export", nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Content[0].Text)
	// Output:
	// export working
	// export working: Exporting the report
	// export completed
	// Report exported.
}
