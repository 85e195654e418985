package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "a.tokens")
	if err := os.WriteFile(tokens, []byte("@gateway g\nalice a1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose.tokens")
	if err := os.WriteFile(loose, []byte("alice a1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "gw.json")
	if err := os.WriteFile(cfgFile, []byte(`{"upstream":["a=http://127.0.0.1:1/mcp","b=http://127.0.0.1:2/mcp"],"prefix-all":true,"upstream-revision":"b=2025-11-25"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c *config)
	}{
		{name: "flags", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream-tokens", "a=" + tokens},
			check: func(t *testing.T, c *config) {
				if len(c.upstreams) != 1 || c.upstreams[0].Name != "a" || c.upstreams[0].Credentials == nil || c.addr != "127.0.0.1:3100" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "environment", env: map[string]string{"ELICIT_GATEWAY_UPSTREAM": "a=http://127.0.0.1:1/mcp,b=http://127.0.0.1:2/mcp", "ELICIT_GATEWAY_ADDR": "127.0.0.1:0"},
			check: func(t *testing.T, c *config) {
				if len(c.upstreams) != 2 || c.addr != "127.0.0.1:0" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "file", args: []string{"--config", cfgFile},
			check: func(t *testing.T, c *config) {
				if len(c.upstreams) != 2 || !c.prefixAll || c.upstreams[1].Revision != "2025-11-25" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "flag beats environment beats file", args: []string{"--config", cfgFile, "--prefix-all=false"}, env: map[string]string{"ELICIT_GATEWAY_LOG_LEVEL": "warn"},
			check: func(t *testing.T, c *config) {
				if len(c.upstreams) != 2 || c.prefixAll || c.logLevel != slog.LevelWarn {
					t.Errorf("%+v", c)
				}
			}},
		{name: "no upstream", wantErr: "no --upstream"},
		{name: "not NAME=URL", args: []string{"--upstream", "http://x"}, wantErr: "want NAME=URL"},
		{name: "tokens for an unknown upstream", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream-tokens", "b=" + tokens}, wantErr: "for a NAME given with --upstream"},
		{name: "token file others may read", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream-tokens", "a=" + loose}, wantErr: "readable by others"},
		{name: "demo auth off loopback", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--addr", "0.0.0.0:3100"}, wantErr: "only on a loopback"},
		{name: "jwt without issuer", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--auth", "jwt"}, wantErr: "needs --jwt-issuer"},
		{name: "peer URL without secret", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--peer-url", "http://10.0.0.5:3100/mcp"}, wantErr: "ELICIT_GATEWAY_PEER_SECRET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(tc.args, env(tc.env), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "a1") {
					t.Errorf("the error shows a token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// syncBuffer collects a stream written by several goroutines.
type syncBuffer = mcptest.SyncBuffer

// The command serves an upstream's tool with its question relayed, the
// upstream sees the user's own token from the token file (never the
// client's), and the audit line names both sides.
func TestRunServes(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := mcpserver.New(mcp.Implementation{Name: "up", Version: "1"}, &mcpserver.Options{Logger: quiet})
	type who struct {
		Name string `json:"name"`
	}
	mcpserver.AddTool(srv, &mcp.Tool{Name: "greet"}, func(_ context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
		if a := elicit.Decode[who](req.Elicitation("who")); a.Outcome == elicit.Accepted {
			return mcpserver.Text("Hello " + a.Value.Name + " as " + req.Principal), nil, nil
		}
		return mcpserver.Ask().ElicitFormSchema("who", "Name?", elicit.MustFormFor[who]()), nil, nil
	})
	h := legacy.NewHandler(srv, streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{}, Logger: quiet}), &legacy.Options{Logger: quiet})
	up := httptest.NewServer(h)
	defer up.Close()
	defer h.Close()

	dir := t.TempDir()
	tokens := filepath.Join(dir, "up.tokens")
	if err := os.WriteFile(tokens, []byte("@gateway gw\nalice alice-at-upstream\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	audit := &syncBuffer{}
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--data", dir, "--upstream", "up=" + up.URL, "--upstream-tokens", "up=" + tokens, "--log-level", "error"},
			env(nil), audit, io.Discard, func(a string) { addr <- a })
	}()
	var gw string
	select {
	case a := <-addr:
		gw = "http://" + a + "/mcp"
	case err := <-done:
		t.Fatal(err)
	}
	c := mcpclient.New(gw, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{
		ElicitForm: func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
		}}})
	res, err := c.CallTool(ctx, "greet", nil)
	if err != nil || res.Content[0].Text != "Hello Ada as alice-at-upstream" {
		t.Fatalf("%+v, %v", res, err)
	}
	// A user without a token at the upstream gets an error, not a call.
	_, err = mcpclient.New(gw, &mcpclient.Options{Token: "bob"}).CallTool(ctx, "greet", nil)
	if err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Errorf("bob: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var lines []auditLine
	for _, l := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var a auditLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		lines = append(lines, a)
	}
	if len(lines) != 3 || lines[0].Outcome != "input_required" || lines[1].Outcome != "complete" || lines[0].Call != lines[1].Call ||
		lines[1].UpstreamRevision != "2026-07-28" || lines[1].ClientRevision != "2026-07-28" || lines[2].Principal != "bob" || lines[2].Outcome != "error" {
		t.Errorf("audit: %s", audit.String())
	}
	if strings.Contains(audit.String(), "Ada") || strings.Contains(audit.String(), "alice-at-upstream") {
		t.Errorf("the audit shows an answer or a token: %s", audit.String())
	}
}
