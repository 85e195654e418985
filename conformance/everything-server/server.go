package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// serverInfo is the identity sent in every result's _meta.
var serverInfo = mcp.Implementation{Name: "elicit-everything-server", Version: "0.1.0"}

// progressStep is the pause between two progress notifications of
// test_tool_with_progress.
var progressStep = 50 * time.Millisecond

type fixtureTool struct {
	name, desc string
	schema     json.RawMessage // nil means {"type":"object"}
	h          mcpserver.Handler
}

// tools lists every tool fixture in tools/list order: test_simple_text
// comes first because the pending header scenario calls tools[0] with
// empty arguments.
var tools = []fixtureTool{
	{"test_simple_text", "Returns a single text block.", nil, simpleTextTool},
	{"test_image_content", "Returns a 1x1 PNG image.", nil, imageTool},
	{"test_audio_content", "Returns a short WAV audio clip.", nil, audioTool},
	{"test_embedded_resource", "Returns an embedded text resource.", nil, embeddedResourceTool},
	{"test_multiple_content_types", "Returns text, image and embedded resource content together.", nil, mixedContentTool},
	{"test_error_handling", "Always fails with a tool error (isError: true).", nil, errorTool},
	{"test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 before returning.", nil, progressTool},
	{"test_missing_capability", "Requires the client to declare the sampling capability.", nil, missingCapabilityTool},
	{"test_streaming_elicitation", "Asks for a confirmation through an InputRequiredResult, never a request on the stream.", nil, streamingElicitationTool},
	{"test_logging_tool", "Logs while running; log notifications are only sent when the request sets a log level.", nil, loggingTool},
	{"test_input_required_result_elicitation", "Asks for the user's name (elicitation under key user_name), then greets them.", nil, elicitationTool},
	{"test_input_required_result_sampling", "Asks the client's model a question (sampling), then returns its answer.", nil, samplingTool},
	{"test_input_required_result_list_roots", "Asks for the client's roots, then reports them.", nil, listRootsTool},
	{"test_input_required_result_request_state", "Asks for a confirmation with application state carried in requestState.", nil, requestStateTool},
	{"test_input_required_result_multiple_inputs", "Asks for elicitation, sampling and roots at once.", nil, multipleInputsTool},
	{"test_input_required_result_multi_round", "Asks for a name, then a favourite colour, over three rounds.", nil, multiRoundTool},
	{"test_input_required_result_tampered_state", "Asks for a confirmation; a modified requestState is refused.", nil, tamperedStateTool},
	{"test_input_required_result_capabilities", "Asks only for the inputs the request's client capabilities allow.", nil, capabilitiesTool},
	{"json_schema_2020_12_tool", "Takes a JSON Schema 2020-12 input schema ($defs, $ref, allOf, if/then/else).", schema2020, jsonSchemaTool},
	{"test_custom_header", "Echoes its region argument, which is mirrored into the Mcp-Param-Region header.", schemaCustomHeader, customHeaderTool},
}

// newServer returns the conformance "everything" server with every
// fixture registered.
func newServer(logger *slog.Logger) *mcpserver.Server {
	s := mcpserver.New(serverInfo, &mcpserver.Options{
		Instructions: "Conformance fixture server: every tool, prompt and resource the MCP conformance suite exercises.",
		Logger:       logger,
	})
	for _, t := range append(tools[:len(tools):len(tools)], legacyTools...) {
		s.AddTool(&mcp.Tool{Name: t.name, Description: t.desc, InputSchema: t.schema}, t.h)
	}
	addTaskTools(s)

	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt with one text message."}, simplePrompt)
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt that quotes its two arguments.",
		Arguments: []mcp.PromptArgument{
			{Name: "arg1", Description: "First argument", Required: true},
			{Name: "arg2", Description: "Second argument", Required: true},
		}}, argumentsPrompt)
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds the resource it is given.",
		Arguments: []mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		embeddedResourcePrompt)
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."}, imagePrompt)
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt",
		Description: "A prompt that first asks the user for context (elicitation under key user_context)."}, inputRequiredPrompt)

	// static-text first: the caching scenario reads the first listed resource.
	s.AddResource(&mcp.Resource{URI: uriStaticText, Name: "static-text", Description: "A static text resource.", MimeType: "text/plain"}, staticTextResource)
	s.AddResource(&mcp.Resource{URI: uriStaticBinary, Name: "static-binary", Description: "A static binary resource (PNG).", MimeType: "image/png"}, staticBinaryResource)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriTemplate, Name: "template-data",
		Description: "JSON data for any id.", MimeType: "application/json"}, templateResource)

	s.SetCompletionHandler(complete)
	return s
}

// ---- content tools ----

func simpleTextTool(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.Text(simpleText), nil
}

func imageTool(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ToolResult(&mcp.CallToolResult{Content: []mcp.Content{mcp.ImageContent(pngBase64, "image/png")}}), nil
}

func audioTool(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ToolResult(&mcp.CallToolResult{Content: []mcp.Content{mcp.AudioContent(wavBase64, "audio/wav")}}), nil
}

func embeddedResourceTool(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ToolResult(&mcp.CallToolResult{Content: []mcp.Content{
		mcp.EmbeddedResource(mcp.ResourceContents{URI: uriEmbedded, MimeType: "text/plain", Text: embeddedResourceText}),
	}}), nil
}

func mixedContentTool(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ToolResult(&mcp.CallToolResult{Content: []mcp.Content{
		mcp.TextContent(mixedIntroText),
		mcp.ImageContent(pngBase64, "image/png"),
		mcp.EmbeddedResource(mcp.ResourceContents{URI: uriMixed, MimeType: "application/json", Text: mixedResourceJSON}),
	}}), nil
}

func errorTool(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ToolError(errorToolText), nil
}

// progressTool sends progress 0, 50, 100 of 100, progressStep apart, then
// the result. Without a progressToken req.Progress sends nothing.
func progressTool(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(progressStep):
			}
		}
		if err := req.Progress(p, 100, fmt.Sprintf("Step %d of 3", i+1)); err != nil {
			return nil, err
		}
	}
	return mcpserver.Text("Progress tool completed."), nil
}

// missingCapabilityTool checks the sampling capability before doing
// anything: without it the client gets -32021 with
// data.requiredCapabilities = {"sampling":{}}.
func missingCapabilityTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := req.Require(mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}); err != nil {
		return nil, err
	}
	return mcpserver.Text("The client declared the sampling capability."), nil
}

// streamingElicitationTool never sends a request on the response stream:
// when form elicitation is declared it asks through an InputRequiredResult.
func streamingElicitationTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if !req.Capabilities().ElicitationForm() {
		return mcpserver.Text("The client did not declare elicitation; nothing to ask."), nil
	}
	a := req.Elicitation("confirm")
	if a.Outcome == elicit.Missing || a.Outcome == elicit.Invalid {
		return mcpserver.Ask().ElicitForm("confirm", "Do you want to continue?", schemaOK), nil
	}
	return mcpserver.Text("Elicitation answered: " + a.Outcome.String() + "."), nil
}

func loggingTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	for _, m := range []struct{ level, text string }{
		{"debug", "Logging tool started"},
		{"info", "Logging tool is working"},
		{"warning", "Logging tool is about to finish"},
	} {
		if err := req.Log(m.level, m.text); err != nil {
			return nil, err
		}
	}
	return mcpserver.Text("Logging tool completed."), nil
}

// ---- MRTR tools (the suite's input-required-result-* scenarios) ----

func askName() *mcpserver.InputRequired {
	return mcpserver.Ask().ElicitForm("user_name", "What is your name?", schemaName)
}

var capitalQuestion = &mcp.CreateMessageRequestParams{
	Messages:  []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("What is the capital of France?")}},
	MaxTokens: 100,
}

var greetingRequest = &mcp.CreateMessageRequestParams{
	Messages:  []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("Generate a greeting")}},
	MaxTokens: 50,
}

// elicitationTool asks for user_name and greets; a missing or invalid
// answer (wrong key, wrong shape, no requestState) is asked again.
func elicitationTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	a := req.Elicitation("user_name")
	switch a.Outcome {
	case elicit.Accepted:
		return mcpserver.Text(fmt.Sprintf("Hello, %s!", a.Content["name"])), nil
	case elicit.Declined, elicit.Cancelled:
		return mcpserver.Text("No name given (" + a.Outcome.String() + ")."), nil
	}
	return askName(), nil
}

func samplingTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	res, ok := req.Sampling("capital_question")
	if !ok {
		return mcpserver.Ask().Sample("capital_question", capitalQuestion), nil
	}
	return mcpserver.Text("The model answered: " + samplingText(res)), nil
}

func listRootsTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	res, ok := req.Roots("client_roots")
	if !ok {
		return mcpserver.Ask().ListRoots("client_roots"), nil
	}
	return mcpserver.Text(describeRoots(res)), nil
}

// requestStateValue is the application state that
// test_input_required_result_request_state expects back.
const requestStateValue = "request-state-fixture/v1"

func requestStateTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	ask := mcpserver.Ask().ElicitForm("confirm", "Please confirm", schemaOK).WithState([]byte(requestStateValue))
	if req.Round == 0 {
		return ask, nil
	}
	if string(req.State) != requestStateValue {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "requestState does not carry the expected state")
	}
	a := req.Elicitation("confirm")
	if a.Outcome == elicit.Missing || a.Outcome == elicit.Invalid {
		return ask, nil
	}
	return mcpserver.Text(fmt.Sprintf("state-ok: requestState verified, confirmation %s (ok=%v).", a.Outcome, a.Content["ok"])), nil
}

func multipleInputsTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	ask := askName().Sample("greeting", greetingRequest).ListRoots("client_roots").WithState([]byte("multiple-inputs"))
	name := req.Elicitation("user_name")
	if name.Outcome == elicit.Declined || name.Outcome == elicit.Cancelled {
		return mcpserver.Text("No name given (" + name.Outcome.String() + ")."), nil // never asked again
	}
	greeting, okG := req.Sampling("greeting")
	roots, okR := req.Roots("client_roots")
	if name.Outcome != elicit.Accepted || !okG || !okR {
		return ask, nil
	}
	return mcpserver.Text(fmt.Sprintf("Hello, %s! Greeting: %s %s", name.Content["name"], samplingText(greeting), describeRoots(roots))), nil
}

// multiRoundState is the application state of the multi-round tool.
type multiRoundState struct {
	Step int    `json:"step"`
	Name string `json:"name,omitempty"`
}

// multiRoundTool goes step1 (name) → step2 (colour) → complete; each
// interim result carries a new requestState.
func multiRoundTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var st multiRoundState
	if req.State != nil {
		if err := json.Unmarshal(req.State, &st); err != nil {
			return nil, fmt.Errorf("multi-round state: %w", err)
		}
	}
	askStep1 := func() (mcpserver.Reply, error) {
		return mcpserver.Ask().ElicitForm("step1", "Step 1: What is your name?", schemaName).
			WithState(mustJSON(multiRoundState{Step: 1})), nil
	}
	askStep2 := func(name string) (mcpserver.Reply, error) {
		return mcpserver.Ask().ElicitForm("step2", "Step 2: What is your favorite color?", schemaColor).
			WithState(mustJSON(multiRoundState{Step: 2, Name: name})), nil
	}
	switch st.Step {
	case 1:
		switch a := req.Elicitation("step1"); a.Outcome {
		case elicit.Accepted:
			return askStep2(fmt.Sprint(a.Content["name"]))
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.Text("No name given (" + a.Outcome.String() + ")."), nil // never asked again
		}
		return askStep1()
	case 2:
		switch a := req.Elicitation("step2"); a.Outcome {
		case elicit.Accepted:
			return mcpserver.Text(fmt.Sprintf("%s's favorite color is %s (completed in round %d).", st.Name, a.Content["color"], req.Round)), nil
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.Text("No colour given (" + a.Outcome.String() + ")."), nil
		}
		return askStep2(st.Name)
	}
	return askStep1()
}

// tamperedStateTool relies on the library's sealed requestState: a
// modified state never reaches the handler (-32602).
func tamperedStateTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	ask := mcpserver.Ask().ElicitForm("confirm", "Please confirm", schemaOK).WithState([]byte("tamper-check"))
	if req.Round == 0 {
		return ask, nil
	}
	if a := req.Elicitation("confirm"); a.Outcome == elicit.Missing || a.Outcome == elicit.Invalid {
		return ask, nil
	}
	return mcpserver.Text("state-ok: requestState integrity verified."), nil
}

// capabilitiesTool asks only for what this request's capabilities declare.
func capabilitiesTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	caps := req.Capabilities()
	var got []string
	if res, ok := req.Sampling("capital_question"); ok {
		got = append(got, "sampling: "+samplingText(res))
	}
	switch a := req.Elicitation("user_name"); a.Outcome {
	case elicit.Accepted:
		got = append(got, fmt.Sprintf("elicitation: %v", a.Content["name"]))
	case elicit.Declined, elicit.Cancelled:
		got = append(got, "elicitation: "+a.Outcome.String()) // never asked again
	}
	if res, ok := req.Roots("client_roots"); ok {
		got = append(got, "roots: "+describeRoots(res))
	}
	if len(got) > 0 {
		return mcpserver.Text("Received " + strings.Join(got, "; ")), nil
	}
	ask, n := mcpserver.Ask(), 0
	if caps.HasSampling() {
		ask, n = ask.Sample("capital_question", capitalQuestion), n+1
	}
	if caps.ElicitationForm() {
		ask, n = ask.ElicitForm("user_name", "What is your name?", schemaName), n+1
	}
	if caps.HasRoots() {
		ask, n = ask.ListRoots("client_roots"), n+1
	}
	if n == 0 {
		return mcpserver.Text("The client declared none of sampling, elicitation or roots; nothing to ask."), nil
	}
	return ask, nil
}

// ---- pending-scenario tools ----

func jsonSchemaTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args map[string]any
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return mcpserver.Text("Received arguments: " + string(mustJSON(args))), nil
}

func customHeaderTool(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		Region string `json:"region"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return mcpserver.Text("Region: " + args.Region), nil
}

// ---- prompts ----

func userText(text string) mcp.PromptMessage {
	return mcp.PromptMessage{Role: "user", Content: mcp.TextContent(text)}
}

func simplePrompt(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{userText(simplePromptText)}}), nil
}

func argumentsPrompt(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		Arg1 string `json:"arg1"`
		Arg2 string `json:"arg2"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{
		userText(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args.Arg1, args.Arg2)),
	}}), nil
}

func embeddedResourcePrompt(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		ResourceURI string `json:"resourceUri"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{
		{Role: "user", Content: mcp.EmbeddedResource(mcp.ResourceContents{URI: args.ResourceURI, MimeType: "text/plain", Text: promptResourceText})},
		userText(promptResourceAsk),
	}}), nil
}

func imagePrompt(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{
		{Role: "user", Content: mcp.ImageContent(pngBase64, "image/png")},
		userText(promptImageAsk),
	}}), nil
}

func inputRequiredPrompt(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	a := req.Elicitation("user_context")
	if a.Outcome == elicit.Missing || a.Outcome == elicit.Invalid {
		return mcpserver.Ask().ElicitForm("user_context", "What context should the prompt use?", schemaContext), nil
	}
	text := "No context was given (" + a.Outcome.String() + ")."
	if a.Outcome == elicit.Accepted {
		text = fmt.Sprintf("Use this context: %v", a.Content["context"])
	}
	return mcpserver.PromptResult(&mcp.GetPromptResult{Description: "A prompt built from elicited context",
		Messages: []mcp.PromptMessage{userText(text)}}), nil
}

// ---- resources ----

func staticTextResource(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{
		{URI: uriStaticText, MimeType: "text/plain", Text: staticText},
	}}), nil
}

func staticBinaryResource(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
	return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{
		{URI: uriStaticBinary, MimeType: "image/png", Blob: pngBase64},
	}}), nil
}

func templateResource(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	id := req.TemplateVars["id"]
	data := mustJSON(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{
		{URI: req.Name, MimeType: "application/json", Text: string(data)},
	}}), nil
}

// ---- completion ----

// completionValues are the candidates offered per reference and argument.
var completionValues = map[string][]string{
	"ref/prompt test_prompt_with_arguments arg1": {"test", "testValue1", "test-default"},
	"ref/prompt test_prompt_with_arguments arg2": {"test", "testValue2", "test-default"},
	"ref/resource " + uriTemplate + " id":        {"1", "2", "3", "123"},
}

func complete(_ context.Context, ref json.RawMessage, argName, argValue string) ([]string, error) {
	var r struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if err := json.Unmarshal(ref, &r); err != nil || r.Type == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: ref must be an object with a type")
	}
	target := r.Name
	if r.Type == "ref/resource" {
		target = r.URI
	}
	values := []string{}
	for _, v := range completionValues[r.Type+" "+target+" "+argName] {
		if strings.HasPrefix(v, argValue) {
			values = append(values, v)
		}
	}
	return values, nil
}

// ---- helpers ----

// samplingText returns the text of a sampling answer whose content is one
// block or an array of blocks.
func samplingText(res *mcp.CreateMessageResult) string {
	var blocks []mcp.Content
	if err := json.Unmarshal(res.Content, &blocks); err != nil {
		var one mcp.Content
		if json.Unmarshal(res.Content, &one) == nil {
			blocks = []mcp.Content{one}
		}
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, " ")
}

func describeRoots(res *mcp.ListRootsResult) string {
	uris := make([]string, len(res.Roots))
	for i, r := range res.Roots {
		uris[i] = r.URI
	}
	return fmt.Sprintf("Found %d root(s): %s", len(res.Roots), strings.Join(uris, ", "))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
