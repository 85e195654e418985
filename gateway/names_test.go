package gateway

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// offering registers tools, prompts and resources that answer with their
// upstream's name and their own ("a:echo").
func offering(up string, tools, prompts, resources []string) func(*mcpserver.Server) {
	return func(s *mcpserver.Server) {
		for _, name := range tools {
			s.AddTool(&mcp.Tool{Name: name}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
				return mcpserver.Text(up + ":" + name), nil
			})
		}
		for _, name := range prompts {
			s.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
				return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(up + ":" + name)}}}), nil
			})
		}
		for _, uri := range resources {
			s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
				return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: up + ":" + uri}}}), nil
			})
		}
	}
}

// TestNames: with one upstream, names pass unchanged; with several, a
// tool or prompt name two upstreams share becomes NAME_name for each, the
// others stay as they are (unless a prefixed name would meet one), and
// PrefixAll prefixes every tool and prompt; resource URIs are never
// renamed, and a URI two upstreams list is served by the first. Every
// listed name calls the upstream it came from; the shared plain name is
// unknown.
func TestNames(t *testing.T) {
	a := serveElicit(t, offering("a", []string{"echo", "only_a"}, []string{"greet"}, []string{"file:///shared", "file:///a"}))
	b := serveElicit(t, offering("b", []string{"echo", "only_b"}, []string{"greet"}, []string{"file:///shared", "file:///b"}))
	// c's tool a_echo is what a's echo becomes when prefixed.
	c := serveElicit(t, offering("c", []string{"echo", "a_echo"}, nil, nil))
	ups := func(urls ...string) []Upstream {
		var out []Upstream
		for i, u := range urls {
			out = append(out, Upstream{Name: string(rune('a' + i)), URL: u, Credentials: demoTokens("alice")})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		upstreams []Upstream
		prefixAll bool
		tools     map[string]string // front name → what calling it answers
		prompts   map[string]string
		resources map[string]string // URI → what reading it answers
		unknown   []string          // tool names that must not be served
	}{
		{name: "one upstream", upstreams: ups(a),
			tools: map[string]string{"echo": "a:echo", "only_a": "a:only_a"}, prompts: map[string]string{"greet": "a:greet"},
			resources: map[string]string{"file:///shared": "a:file:///shared", "file:///a": "a:file:///a"},
			unknown:   []string{"a_echo"}},
		{name: "one upstream, prefix all", upstreams: ups(a), prefixAll: true,
			tools: map[string]string{"a_echo": "a:echo", "a_only_a": "a:only_a"}, prompts: map[string]string{"a_greet": "a:greet"},
			resources: map[string]string{"file:///shared": "a:file:///shared", "file:///a": "a:file:///a"},
			unknown:   []string{"echo", "only_a"}},
		{name: "two upstreams", upstreams: ups(a, b),
			tools:   map[string]string{"a_echo": "a:echo", "b_echo": "b:echo", "only_a": "a:only_a", "only_b": "b:only_b"},
			prompts: map[string]string{"a_greet": "a:greet", "b_greet": "b:greet"},
			resources: map[string]string{"file:///shared": "a:file:///shared", "file:///a": "a:file:///a",
				"file:///b": "b:file:///b"},
			unknown: []string{"echo", "greet", "a_only_a"}},
		{name: "two upstreams, the second at 2025-11-25", upstreams: at2025(ups(a, b), "b"),
			tools:   map[string]string{"a_echo": "a:echo", "b_echo": "b:echo", "only_a": "a:only_a", "only_b": "b:only_b"},
			prompts: map[string]string{"a_greet": "a:greet", "b_greet": "b:greet"},
			resources: map[string]string{"file:///shared": "a:file:///shared", "file:///a": "a:file:///a",
				"file:///b": "b:file:///b"},
			unknown: []string{"echo", "greet"}},
		{name: "two upstreams, prefix all", upstreams: ups(a, b), prefixAll: true,
			tools:   map[string]string{"a_echo": "a:echo", "b_echo": "b:echo", "a_only_a": "a:only_a", "b_only_b": "b:only_b"},
			prompts: map[string]string{"a_greet": "a:greet", "b_greet": "b:greet"},
			resources: map[string]string{"file:///shared": "a:file:///shared", "file:///a": "a:file:///a",
				"file:///b": "b:file:///b"},
			unknown: []string{"echo", "only_a", "only_b"}},
		{name: "a prefixed name meets a plain one", upstreams: ups(a, b, c),
			tools: map[string]string{"a_echo": "a:echo", "b_echo": "b:echo", "c_echo": "c:echo", "c_a_echo": "c:a_echo",
				"only_a": "a:only_a", "only_b": "b:only_b"},
			prompts: map[string]string{"a_greet": "a:greet", "b_greet": "b:greet"},
			resources: map[string]string{"file:///shared": "a:file:///shared", "file:///a": "a:file:///a",
				"file:///b": "b:file:///b"},
			unknown: []string{"echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, gw := startGateway(t, Options{Upstreams: tc.upstreams, PrefixAll: tc.prefixAll})
			ctx := t.Context()
			c := mcpclient.New(gw, &mcpclient.Options{Token: "alice"})
			checkTools(ctx, t, c, tc.tools, tc.unknown)
			checkPrompts(ctx, t, c, tc.prompts)
			checkResources(ctx, t, c, tc.resources)
		})
	}
}

func checkTools(ctx context.Context, t *testing.T, c *mcpclient.Client, want map[string]string, unknown []string) {
	t.Helper()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if !sameSet(names, want) {
		t.Errorf("tools/list: %q, want the names of %v", names, want)
	}
	for name, answer := range want {
		res, err := c.CallTool(ctx, name, nil)
		if err != nil || res.Content[0].Text != answer {
			t.Errorf("tools/call %s: %+v, %v; want %q", name, res, err, answer)
		}
	}
	for _, name := range unknown {
		_, err := c.CallTool(ctx, name, nil)
		var rpc *mcpclient.RPCError
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("tools/call %s: %v, want -32602 unknown tool", name, err)
		}
	}
}

func checkPrompts(ctx context.Context, t *testing.T, c *mcpclient.Client, want map[string]string) {
	t.Helper()
	prompts, err := c.ListPrompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts {
		names = append(names, p.Name)
	}
	if !sameSet(names, want) {
		t.Errorf("prompts/list: %q, want the names of %v", names, want)
	}
	for name, answer := range want {
		res, err := c.GetPrompt(ctx, name, nil)
		if err != nil || res.Messages[0].Content.Text != answer {
			t.Errorf("prompts/get %s: %+v, %v; want %q", name, res, err, answer)
		}
	}
}

func checkResources(ctx context.Context, t *testing.T, c *mcpclient.Client, want map[string]string) {
	t.Helper()
	resources, err := c.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources {
		uris = append(uris, r.URI)
	}
	if !sameSet(uris, want) {
		t.Errorf("resources/list: %q, want the URIs of %v", uris, want)
	}
	for uri, answer := range want {
		res, err := c.ReadResource(ctx, uri)
		if err != nil || res.Contents[0].URI != uri || res.Contents[0].Text != answer {
			t.Errorf("resources/read %s: %+v, %v; want %q", uri, res, err, answer)
		}
	}
}

// at2025 has the named upstream spoken to at 2025-11-25.
func at2025(ups []Upstream, name string) []Upstream {
	for i := range ups {
		if ups[i].Name == name {
			ups[i].Revision = Revision2025
		}
	}
	return ups
}

// sameSet reports whether names are exactly want's keys, each once.
func sameSet(names []string, want map[string]string) bool {
	if len(names) != len(want) {
		return false
	}
	slices.Sort(names)
	for i, n := range names {
		if _, ok := want[n]; !ok || (i > 0 && names[i-1] == n) {
			return false
		}
	}
	return true
}
