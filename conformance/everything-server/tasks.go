package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// Fixtures of the suite's tasks-* scenarios (the tasks extension,
// SEP-2663): greet answers in the call; the others run as tasks when the
// request declares the extension.

var (
	schemaGreet       = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	schemaSlow        = json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":600},"label":{"type":"string"}}}`)
	schemaFilename    = json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`)
	schemaConfirm     = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)
	schemaPartialName = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
)

// failingJobDelay is how long failing_job works before its tool error.
var failingJobDelay = time.Second

func addTaskTools(s *mcpserver.Server) {
	s.EnableTasks(nil)
	optional := &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional}
	required := &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired}
	s.AddTool(&mcp.Tool{Name: "greet", Description: "Greets by name, in the call (never a task).", InputSchema: schemaGreet}, greetTool)
	s.AddToolWith(&mcp.Tool{Name: "slow_compute", Description: "Works for the given seconds, as a task when the client takes tasks.", InputSchema: schemaSlow}, slowComputeTool, optional)
	s.AddToolWith(&mcp.Tool{Name: "failing_job", Description: "Runs only as a task; ends with a tool error after about a second."}, failingJobTool, required)
	s.AddToolWith(&mcp.Tool{Name: "protocol_error_job", Description: "Runs as a task that fails with a protocol error."}, protocolErrorTool, optional)
	s.AddToolWith(&mcp.Tool{Name: "confirm_delete", Description: "Asks to confirm deleting a file, as a task.", InputSchema: schemaFilename}, confirmDeleteTool, optional)
	s.AddToolWith(&mcp.Tool{Name: "multi_input", Description: "Asks two questions at once, as a task."}, multiInputTool, optional)
	s.AddToolWith(&mcp.Tool{Name: "test_tool_with_task", Description: "Asks for a name in the call (user_name), then greets as a task."}, nameThenTaskTool, required)
}

func greetTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := req.BindArguments(&a); err != nil {
		return nil, err
	}
	return mcpserver.Text("Hello, " + a.Name + "!"), nil
}

func slowComputeTool(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if req.TaskAllowed() {
		return mcpserver.RunAsTask(), nil
	}
	var a struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	if err := req.BindArguments(&a); err != nil {
		return nil, err
	}
	if err := ctxtime.Sleep(ctx, time.Duration(a.Seconds*float64(time.Second))); err != nil {
		return nil, err
	}
	return mcpserver.Text(fmt.Sprintf("computed %q after %gs", a.Label, a.Seconds)), nil
}

func failingJobTool(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if req.TaskAllowed() {
		return mcpserver.RunAsTask(), nil
	}
	if err := ctxtime.Sleep(ctx, failingJobDelay); err != nil {
		return nil, err
	}
	return mcpserver.ToolError("The job failed: the tool reported an error."), nil
}

func protocolErrorTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if req.TaskAllowed() {
		return mcpserver.RunAsTask(), nil
	}
	panic("protocol_error_job: deliberate internal failure")
}

func confirmDeleteTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if req.TaskAllowed() {
		return mcpserver.RunAsTask(), nil
	}
	var a struct {
		Filename string `json:"filename"`
	}
	if err := req.BindArguments(&a); err != nil {
		return nil, err
	}
	ans := req.Elicitation("confirm")
	switch ans.Outcome {
	case elicit.Accepted:
		if ans.Content["confirm"] == true {
			return mcpserver.Text("Deleted " + a.Filename + "."), nil
		}
		return mcpserver.Text("Kept " + a.Filename + "."), nil
	case elicit.Declined, elicit.Cancelled:
		return mcpserver.Text("Kept " + a.Filename + ": not confirmed."), nil
	}
	return mcpserver.Ask().ElicitForm("confirm", "Delete "+a.Filename+"?", schemaConfirm), nil
}

func multiInputTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if req.TaskAllowed() {
		return mcpserver.RunAsTask(), nil
	}
	name, ok := req.Elicitation("name"), req.Elicitation("confirm")
	if name.Outcome == elicit.Missing || ok.Outcome == elicit.Missing {
		return mcpserver.Ask().
			ElicitForm("name", "What is your name?", schemaPartialName).
			ElicitForm("confirm", "Shall I go on?", schemaConfirm), nil
	}
	if name.Outcome != elicit.Accepted || ok.Outcome != elicit.Accepted {
		return mcpserver.Text("Stopped: not every question was accepted."), nil
	}
	return mcpserver.Text(fmt.Sprintf("name=%v confirm=%v", name.Content["name"], ok.Content["confirm"])), nil
}

func nameThenTaskTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	ans := req.Elicitation("user_name")
	switch {
	case ans.Outcome != elicit.Accepted:
		return mcpserver.Ask().ElicitForm("user_name", "What is your name?", schemaName), nil
	case req.TaskAllowed():
		return mcpserver.RunAsTask(), nil
	}
	return mcpserver.Text(fmt.Sprintf("Hello, %v! (answered before the task started)", ans.Content["name"])), nil
}
