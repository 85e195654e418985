package gateway

import (
	"context"
	"errors"
	"fmt"
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
	checkServed(t, "tools", want, func() ([]string, error) {
		tools, err := c.ListTools(ctx)
		return namesOf(tools, func(x *mcp.Tool) string { return x.Name }), err
	}, func(name string) (string, error) {
		res, err := c.CallTool(ctx, name, nil)
		if err != nil {
			return "", err
		}
		return res.Content[0].Text, nil
	})
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
	checkServed(t, "prompts", want, func() ([]string, error) {
		prompts, err := c.ListPrompts(ctx)
		return namesOf(prompts, func(x *mcp.Prompt) string { return x.Name }), err
	}, func(name string) (string, error) {
		res, err := c.GetPrompt(ctx, name, nil)
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.Text, nil
	})
}

func checkResources(ctx context.Context, t *testing.T, c *mcpclient.Client, want map[string]string) {
	t.Helper()
	checkServed(t, "resources", want, func() ([]string, error) {
		resources, err := c.ListResources(ctx)
		return namesOf(resources, func(x *mcp.Resource) string { return x.URI }), err
	}, func(uri string) (string, error) {
		res, err := c.ReadResource(ctx, uri)
		if err != nil {
			return "", err
		}
		if res.Contents[0].URI != uri {
			return "", fmt.Errorf("contents for %q", res.Contents[0].URI)
		}
		return res.Contents[0].Text, nil
	})
}

// checkServed checks that list gives exactly want's names, each once,
// and that get of each answers what want says.
func checkServed(t *testing.T, kind string, want map[string]string, list func() ([]string, error), get func(name string) (string, error)) {
	t.Helper()
	names, err := list()
	if err != nil {
		t.Fatalf("%s/list: %v", kind, err)
	}
	if !sameSet(names, want) {
		t.Errorf("%s/list: %q, want the names of %v", kind, names, want)
	}
	for name, answer := range want {
		if got, err := get(name); err != nil || got != answer {
			t.Errorf("%s %s: %q, %v; want %q", kind, name, got, err, answer)
		}
	}
}

func namesOf[T any](items []T, name func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
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
