package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// Fixtures that only the 2025-11-25 suite calls (the suite's
// tools-call-with-logging, tools-call-sampling,
// tools-call-elicitation, elicitation-sep1034-defaults and
// elicitation-sep1330-enums scenarios). They are ordinary MRTR handlers:
// for a 2025 client the legacy bridge turns their input requests into
// server-to-client requests on the session; a 2026 client gets them as
// input_required results.
var legacyTools = []fixtureTool{
	{"test_tool_with_logging", "Logs three info messages, about 50 ms apart, then returns.", nil, loggingTool2025},
	{"test_sampling", "Asks the client's model the given prompt (sampling), then returns its answer.",
		json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the model"}},"required":["prompt"]}`), samplingTool2025},
	{"test_elicitation", "Asks the user for a username and an email address with the given message.",
		json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`), elicitationTool2025},
	{"test_elicitation_sep1034_defaults", "Asks for a form whose fields all have defaults (SEP-1034).", nil, defaultsTool},
	{"test_elicitation_sep1330_enums", "Asks for a form with the five enum variants (SEP-1330).", nil, enumsTool},
}

// logStep is the pause between two log messages of test_tool_with_logging.
var logStep = 50 * time.Millisecond

func loggingTool2025(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	for i, text := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(logStep):
			}
		}
		if err := req.Log("info", text); err != nil {
			return nil, err
		}
	}
	return mcpserver.Text("Tool with logging completed."), nil
}

func samplingTool2025(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if res, ok := req.Sampling("llm"); ok {
		return mcpserver.Text("LLM response: " + samplingText(res)), nil
	}
	return mcpserver.Ask().Sample("llm", &mcp.CreateMessageRequestParams{
		Messages:  []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent(args.Prompt)}},
		MaxTokens: 100,
	}), nil
}

var schemaUserInfo = json.RawMessage(`{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)

func elicitationTool2025(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		Message string `json:"message"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	a := req.Elicitation("user_info")
	if a.Outcome == elicit.Missing || a.Outcome == elicit.Invalid {
		msg := args.Message
		if msg == "" {
			msg = "Please provide your information"
		}
		return mcpserver.Ask().ElicitForm("user_info", msg, schemaUserInfo), nil
	}
	return mcpserver.Text(fmt.Sprintf("User response: action=%s, content=%s", a.Outcome, mustJSON(a.Content))), nil
}

var schemaDefaults = json.RawMessage(`{"type":"object","properties":{
  "name":{"type":"string","default":"John Doe"},
  "age":{"type":"integer","default":30},
  "score":{"type":"number","default":95.5},
  "status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
  "verified":{"type":"boolean","default":true}}}`)

var schemaEnums = json.RawMessage(`{"type":"object","properties":{
  "untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
  "titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
  "legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
  "untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
  "titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`)

func defaultsTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	return formOnce(req, "defaults", "Please review these values (each has a default).", schemaDefaults)
}

func enumsTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	return formOnce(req, "enums", "Please choose from each list.", schemaEnums)
}

// formOnce asks one form and reports the answer as the suite expects.
func formOnce(req *mcpserver.Request, key, message string, schema json.RawMessage) (mcpserver.Reply, error) {
	a := req.Elicitation(key)
	if a.Outcome == elicit.Missing || a.Outcome == elicit.Invalid {
		return mcpserver.Ask().ElicitForm(key, message, schema), nil
	}
	return mcpserver.Text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", a.Outcome, mustJSON(a.Content))), nil
}
