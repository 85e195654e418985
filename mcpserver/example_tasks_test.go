package mcpserver_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// A tool that runs as a task of the tasks extension and asks the user
// halfway; mcpclient, declaring the extension, follows the task and
// answers the question through its Handlers, as it does for MRTR.
func ExampleServer_EnableTasks() {
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(nil) // tasks in memory; store/sqlite or store/postgres for several instances
	s.AddToolWith(&mcp.Tool{Name: "export", Description: "Exports the report, then asks who gets it."},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			if req.TaskAllowed() {
				return mcpserver.RunAsTask(), nil // the client gets a task id at once
			}
			// In the task (req.TaskID is set), or in the call for a client
			// without the extension.
			switch to := req.Elicitation("to"); to.Outcome {
			case elicit.Accepted:
				return mcpserver.Text(fmt.Sprintf("Export sent to %v.", to.Content["email"])), nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("Export not sent."), nil
			}
			return mcpserver.Ask().ElicitForm("to", "Who gets the export?",
				json.RawMessage(`{"type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`)), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{
		Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil},
		Handlers: &mcpclient.Handlers{
			ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				fmt.Println("asked:", p.Message)
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"email": "ada@example.com"}}, nil
			},
		},
	})
	r, err := c.CallTool(context.Background(), "export", nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Content[0].Text)
	// Output:
	// asked: Who gets the export?
	// Export sent to ada@example.com.
}

// exportForm is what the export examples ask: who gets the export.
var exportForm = json.RawMessage(`{"type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`)

// callTask serves s over Streamable HTTP, calls tool with a client that
// declares the tasks extension and has o's handlers, and prints the
// result's text.
func callTask(s *mcpserver.Server, tool string, o mcpclient.Options) {
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()
	o.Extensions = map[string]json.RawMessage{mcp.ExtensionTasks: nil}
	o.Handlers = &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", p.Message)
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"email": "ada@example.com"}}, nil
		},
	}
	r, err := mcpclient.New(srv.URL, &o).CallTool(context.Background(), tool, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Content[0].Text)
}

// A task's run says what it is doing with SetStatusMessage, or with
// Progress, which in a task sets the message too; tasks/get shows it on
// any instance, and mcpclient tells OnTaskUpdate. The message describes
// the work in progress: once the task has completed it shows none.
func ExampleRequest_SetStatusMessage() {
	shown := make(chan struct{})
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(nil)
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		_ = req.SetStatusMessage("Reading the sales data") // an error here is the store's: the work goes on
		<-shown                                            // the work: here it lasts until the host has shown the message
		for part := range 2 {
			_ = req.Progress(float64(part+1), 2, "Exporting")
			<-shown
		}
		return mcpserver.Text("Exported."), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})

	callTask(s, "export", mcpclient.Options{OnTaskUpdate: func(u mcpclient.TaskUpdate) {
		fmt.Printf("%s %q\n", u.Status, u.StatusMessage)
		if u.Status == mcp.TaskWorking && u.StatusMessage != "" {
			shown <- struct{}{}
		}
	}})
	// Output:
	// working ""
	// working "Reading the sales data"
	// working "Exporting (1/2)"
	// working "Exporting (2/2)"
	// completed ""
	// Exported.
}

// A task waiting for the user says so with WithStatusMessage; without
// it, the task would show no message while it waits. When the answer
// puts the task back to working it has none until the run sets one.
func ExampleInputRequired_WithStatusMessage() {
	shown := make(chan struct{})
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(nil)
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		to := req.Elicitation("to")
		if to.Outcome == elicit.Missing {
			_ = req.SetStatusMessage("Exporting")
			<-shown // the export
			return mcpserver.Ask().WithStatusMessage("Exported; waiting for the recipient").
				ElicitForm("to", "Who gets the export?", exportForm), nil
		}
		_ = req.SetStatusMessage(fmt.Sprintf("Sending to %v", to.Content["email"]))
		<-shown // the send
		return mcpserver.Text("Sent."), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})

	callTask(s, "export", mcpclient.Options{OnTaskUpdate: func(u mcpclient.TaskUpdate) {
		if u.Status == mcp.TaskWorking && u.StatusMessage == "" {
			return // created, or the answer arrived: the run has not said anything yet
		}
		fmt.Printf("%s %q\n", u.Status, u.StatusMessage)
		if u.Status == mcp.TaskWorking {
			shown <- struct{}{}
		}
	}})
	// Output:
	// working "Exporting"
	// input_required "Exported; waiting for the recipient"
	// asked: Who gets the export?
	// working "Sending to ada@example.com"
	// completed ""
	// Sent.
}

// An Observer sees a call answered with a task (OutcomeTask, with
// Round.TaskID set) and then each run of the task's handler, in the
// background, as a round of the same task and operation: an audit of
// task runs.
func ExampleObserver_tasks() {
	var mu sync.Mutex
	var rounds []mcpserver.Round
	audit := func(_ context.Context, r *mcpserver.Round) {
		if r.TaskID == "" {
			return // not a task
		}
		mu.Lock()
		defer mu.Unlock()
		rounds = append(rounds, *r)
	}
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, &mcpserver.Options{Observer: audit})
	s.EnableTasks(nil)
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		if req.Elicitation("to").Outcome == elicit.Missing {
			return mcpserver.Ask().ElicitForm("to", "Who gets the export?", exportForm), nil
		}
		return mcpserver.Text("Sent."), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
	callTask(s, "export", mcpclient.Options{})
	s.WaitTasks()

	mu.Lock()
	defer mu.Unlock()
	// The call's round is reported when its answer is sent, which may be
	// after the task's first run has started: order by round, the call first.
	first := func(r mcpserver.Round) int {
		if r.Outcome == mcpserver.OutcomeTask {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(rounds, func(a, b mcpserver.Round) int {
		return cmp.Or(cmp.Compare(a.Round, b.Round), cmp.Compare(first(a), first(b)))
	})
	for _, r := range rounds {
		same := r.TaskID == rounds[0].TaskID && r.OperationID == rounds[0].OperationID
		fmt.Printf("%s %s round=%d outcome=%s same task: %v\n", r.Method, r.Name, r.Round, r.Outcome, same)
	}
	// Output:
	// asked: Who gets the export?
	// Sent.
	// tools/call export round=0 outcome=task same task: true
	// tools/call export round=0 outcome=input_required same task: true
	// tools/call export round=1 outcome=accepted same task: true
}

// TaskOptions.MaxTasksPerUser bounds how many tasks one user has working
// or waiting for input at a time (100 unless set). A call that would
// start one more gets a tool error that says so, and no task; when a
// task ends there is room again.
func ExampleTaskOptions_maxTasksPerUser() {
	started, finish := make(chan struct{}), make(chan struct{})
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(&mcpserver.TaskOptions{MaxTasksPerUser: 1})
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		started <- struct{}{}
		<-finish // the long work
		return mcpserver.Text("Exported."), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()
	c := mcpclient.New(srv.URL, &mcpclient.Options{Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil}})

	var wg sync.WaitGroup
	wg.Go(func() { // the first task, followed to its end
		if r, err := c.CallTool(context.Background(), "export", nil); err == nil {
			fmt.Println("first:", r.Content[0].Text)
		}
	})
	<-started
	if r, err := c.CallTool(context.Background(), "export", nil); err == nil && r.IsError {
		fmt.Println("second:", r.Content[0].Text)
	}
	close(finish)
	wg.Wait()
	// Output:
	// second: Not started: you have 1 task in progress (working or waiting for your input), and 1 is the most one user may have at a time. A task ends when it finishes, when the client following it cancels it, or at the latest 1 hour after it started; then make the call again.
	// first: Exported.
}
