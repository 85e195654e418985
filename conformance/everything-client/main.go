// Command everything-client is the MCP 2026-07-28 client under test for
// the official conformance suite (@modelcontextprotocol/conformance): one
// binary for every client scenario, built on package mcpclient.
//
// The harness runs it with the scenario's server URL as the last argument
// and the scenario in the environment:
//
//	MCP_CONFORMANCE_SCENARIO          scenario name, e.g. tools_call
//	MCP_CONFORMANCE_PROTOCOL_VERSION  2026-07-28 (the only wire spoken)
//	MCP_CONFORMANCE_CONTEXT           JSON for some scenarios (http-custom-headers,
//	                                  the pre-registered client of auth/pre-registration)
//
//	go build -o /tmp/everything-client ./conformance/everything-client
//	scripts/conformance client --command /tmp/everything-client --requirements 2026-07-28 -o results
//
// It exits 0 when the scenario's steps succeeded, 1 otherwise; the steps go
// to stderr. Authorization scenarios (auth/*) list the tools and call
// test-tool with package mcpclient/oauth as the Authorizer, signing in
// without a user (the suite's authorization servers redirect at once).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// scenarioTimeout stays under the harness's 30 s per scenario.
const scenarioTimeout = 25 * time.Second

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: everything-client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	err := run(ctx, config{
		url:      os.Args[len(os.Args)-1],
		scenario: os.Getenv("MCP_CONFORMANCE_SCENARIO"),
		version:  os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"),
		context:  os.Getenv("MCP_CONFORMANCE_CONTEXT"),
		log:      os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything-client:", err)
		os.Exit(1)
	}
}

// config is one run's input.
type config struct {
	url, scenario, version, context string
	log                             io.Writer
}

// scenario runs the steps of one conformance scenario.
type scenario func(ctx context.Context, c *mcpclient.Client, cfg config) error

var scenarios = map[string]scenario{
	"tools_call":                       toolsCall,
	"request-metadata":                 requestMetadata,
	"sep-2322-client-request-state":    requestState,
	"http-standard-headers":            standardHeaders,
	"http-custom-headers":              customHeaders,
	"http-invalid-tool-headers":        invalidToolHeaders,
	"json-schema-ref-no-deref":         listOnly,
	"json-schema-2020-12-preservation": schemaEcho,
}

func run(ctx context.Context, cfg config) error {
	fn, ok := scenarios[cfg.scenario]
	auth := strings.HasPrefix(cfg.scenario, "auth/")
	if auth {
		fn, ok = authFlow, true
	}
	if !ok {
		return fmt.Errorf("unknown scenario %q", cfg.scenario)
	}
	if cfg.version != "" && cfg.version != mcp.ProtocolVersion {
		return fmt.Errorf("protocol version %s asked; this client speaks only the %s stateless wire", cfg.version, mcp.ProtocolVersion)
	}
	logger := slog.New(slog.NewTextHandler(cfg.log, nil))
	opts := &mcpclient.Options{
		ClientInfo: mcp.Implementation{Name: "elicit-everything-client", Version: "0.1.0"},
		Handlers:   handlers(cfg.log),
		Logger:     logger,
	}
	if auth {
		a, err := authorizer(cfg, logger)
		if err != nil {
			return err
		}
		opts.Authorizer = a
	}
	c := mcpclient.New(cfg.url, opts)
	fmt.Fprintf(cfg.log, "scenario %s against %s\n", cfg.scenario, cfg.url)
	return fn(ctx, c, cfg)
}

// handlers answer every kind of input request without a user: forms are
// filled from their schema and accepted, URLs are accepted (never opened),
// sampling answers a fixed text, roots are empty. Declaring all four makes
// every capability visible to the request-metadata checks.
func handlers(log io.Writer) *mcpclient.Handlers {
	return &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			content := fill(p.RequestedSchema)
			fmt.Fprintf(log, "form %q: %q → accept %v\n", key, p.Message, content)
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
		},
		ElicitURL: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Fprintf(log, "url %q: %q → accept (not opened)\n", key, p.URL)
			return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		},
		Sampling: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "everything-client",
				Content: json.RawMessage(`{"type":"text","text":"sampled"}`), StopReason: "endTurn"}, nil
		},
		Roots: func(ctx context.Context, who mcpclient.Asker, key string) (*mcp.ListRootsResult, error) {
			return &mcp.ListRootsResult{Roots: []mcp.Root{}}, nil
		},
	}
}

// fill answers a flat form schema: each property's default, else a value
// of its type (true, the first choice, the minimum or 0, "").
func fill(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type    string          `json:"type"`
			Default json.RawMessage `json:"default"`
			Enum    []string        `json:"enum"`
			OneOf   []struct {
				Const string `json:"const"`
			} `json:"oneOf"`
			Minimum *float64 `json:"minimum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	for name, p := range s.Properties {
		var def any
		if len(p.Default) > 0 && json.Unmarshal(p.Default, &def) == nil && def != nil {
			out[name] = def
			continue
		}
		switch {
		case p.Type == "boolean":
			out[name] = true
		case len(p.Enum) > 0:
			out[name] = p.Enum[0]
		case len(p.OneOf) > 0:
			out[name] = p.OneOf[0].Const
		case p.Type == "number" || p.Type == "integer":
			v := 0.0
			if p.Minimum != nil {
				v = *p.Minimum
			}
			out[name] = v
		case p.Type == "array":
			out[name] = []string{}
		default:
			out[name] = ""
		}
	}
	return out
}

// toolsCall: list, then add_numbers(2, 3).
func toolsCall(ctx context.Context, c *mcpclient.Client, cfg config) error {
	if _, err := c.ListTools(ctx); err != nil {
		return err
	}
	r, err := c.CallTool(ctx, "add_numbers", map[string]any{"a": 2, "b": 3})
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.log, "add_numbers: %s\n", text(r))
	return nil
}

// requestMetadata: discover (answered -32022 first, then retried with a
// supported version), then list tools.
func requestMetadata(ctx context.Context, c *mcpclient.Client, cfg config) error {
	if _, err := c.Discover(ctx); err != nil {
		return err
	}
	fmt.Fprintf(cfg.log, "discover ok at version %s\n", c.Version())
	_, err := c.ListTools(ctx)
	return err
}

// requestState: the MRTR sequence of sep-2322-client-request-state. The
// echo-state call is driven by hand so that an unrelated call can run
// between its first round and its retry (MRTR-C-04).
func requestState(ctx context.Context, c *mcpclient.Client, cfg config) error {
	if _, err := c.ListTools(ctx); err != nil {
		return err
	}
	_, ir, err := c.CallToolOnce(ctx, "test_mrtr_echo_state", nil, nil)
	if err != nil {
		return err
	}
	if ir == nil {
		return errors.New("test_mrtr_echo_state did not ask for input")
	}
	if _, err := c.CallTool(ctx, "test_mrtr_unrelated", nil); err != nil {
		return err
	}
	answers, err := c.Answer(ctx, ir)
	if err != nil {
		return err
	}
	r, ir2, err := c.CallToolOnce(ctx, "test_mrtr_echo_state", nil, ir.Retry(answers))
	if err != nil {
		return err
	}
	if ir2 != nil {
		return errors.New("test_mrtr_echo_state asked again after the retry")
	}
	fmt.Fprintf(cfg.log, "test_mrtr_echo_state: %s\n", text(r))
	for _, name := range []string{"test_mrtr_no_state", "test_mrtr_no_result_type"} {
		r, err := c.CallTool(ctx, name, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(cfg.log, "%s: %s\n", name, text(r))
	}
	return nil
}

// standardHeaders exercises every method that carries Mcp-Method and
// Mcp-Name: list and call every tool, read every resource, get every prompt.
func standardHeaders(ctx context.Context, c *mcpclient.Client, cfg config) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if _, err := c.CallTool(ctx, t.Name, nil); err != nil {
			return err
		}
	}
	resources, err := c.ListResources(ctx)
	if err != nil {
		return err
	}
	for _, r := range resources {
		if _, err := c.ReadResource(ctx, r.URI); err != nil {
			return err
		}
	}
	prompts, err := c.ListPrompts(ctx)
	if err != nil {
		return err
	}
	for _, p := range prompts {
		if _, err := c.GetPrompt(ctx, p.Name, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(cfg.log, "%d tools, %d resources, %d prompts exercised\n", len(tools), len(resources), len(prompts))
	return nil
}

// customHeaders makes the tool calls of MCP_CONFORMANCE_CONTEXT, whose
// x-mcp-header arguments become Mcp-Param-* headers.
func customHeaders(ctx context.Context, c *mcpclient.Client, cfg config) error {
	var sc struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(cfg.context), &sc); err != nil {
		return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	if len(sc.ToolCalls) == 0 {
		return errors.New("MCP_CONFORMANCE_CONTEXT has no toolCalls")
	}
	if _, err := c.ListTools(ctx); err != nil {
		return err
	}
	for _, call := range sc.ToolCalls {
		var args any
		if len(call.Arguments) > 0 {
			args = call.Arguments // verbatim: 42 stays 42, 3.14159 stays 3.14159
		}
		if _, err := c.CallTool(ctx, call.Name, args); err != nil {
			return err
		}
	}
	return nil
}

// invalidToolHeaders lists (dropping the tools with invalid x-mcp-header
// annotations) and calls every tool that is left.
func invalidToolHeaders(ctx context.Context, c *mcpclient.Client, cfg config) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if _, err := c.CallTool(ctx, t.Name, arguments(t.InputSchema)); err != nil {
			return err
		}
		fmt.Fprintf(cfg.log, "called %s\n", t.Name)
	}
	return nil
}

// arguments makes a value for each required property of an input schema.
func arguments(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	for _, name := range s.Required {
		switch s.Properties[name].Type {
		case "integer", "number":
			out[name] = 1
		case "boolean":
			out[name] = true
		default:
			out[name] = "us-west1"
		}
	}
	return out
}

// listOnly lists the tools and nothing more; no $ref is ever fetched.
func listOnly(ctx context.Context, c *mcpclient.Client, cfg config) error {
	tools, err := c.ListTools(ctx)
	if err == nil {
		fmt.Fprintf(cfg.log, "%d tools listed\n", len(tools))
	}
	return err
}

// schemaEcho sends the focal tool's inputSchema, verbatim, back through
// json_schema_echo.
func schemaEcho(ctx context.Context, c *mcpclient.Client, cfg config) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name != "json_schema_2020_12_tool" {
			continue
		}
		args := json.RawMessage(`{"schema":` + string(t.InputSchema) + `}`)
		_, err := c.CallTool(ctx, "json_schema_echo", args)
		return err
	}
	return errors.New("json_schema_2020_12_tool not listed")
}

func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return "(no content)"
	}
	return r.Content[0].Text
}
