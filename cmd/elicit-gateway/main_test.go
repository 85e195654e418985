package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/gateway"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/stdio"
	"github.com/mcp-elicit/elicit/streamhttp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// configSummary is what TestConfig checks of a resolved config.
type configSummary struct {
	upstreams string // name=URL,… (name=cmd for a command) with "+tokens" after one with credentials
	processes string // each command upstream's MaxProcesses/ProcessIdle

	revisions    string // each upstream's revision, comma-separated
	addr         string
	prefixAll    bool
	logLevel     slog.Level
	authMode     string
	shutdownSecs float64
}

func summarize(c *config) configSummary {
	var ups, revs, procs []string
	for _, u := range c.upstreams {
		s := u.Name + "=" + u.URL
		if u.Command != nil {
			s += "cmd"
			procs = append(procs, fmt.Sprintf("%d/%v", u.MaxProcesses, u.ProcessIdle))
		}
		if u.Credentials != nil {
			s += "+tokens"
		}
		ups, revs = append(ups, s), append(revs, u.Revision)
	}
	return configSummary{upstreams: strings.Join(ups, ","), processes: strings.Join(procs, ","), revisions: strings.Join(revs, ","), addr: c.addr, prefixAll: c.prefixAll,
		logLevel: c.logLevel, authMode: c.authMode, shutdownSecs: c.shutdownTimeout.Seconds()}
}

// defaults is the summary of a config that sets only its upstreams.
func defaults(upstreams, revisions string) configSummary {
	return configSummary{upstreams: upstreams, revisions: revisions, addr: "127.0.0.1:3100", authMode: "demo", shutdownSecs: 10}
}

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
	two := "a=http://127.0.0.1:1/mcp,b=http://127.0.0.1:2/mcp"
	fromFile := defaults(two, ",2025-11-25")
	fromFile.prefixAll = true
	beaten := defaults(two, ",2025-11-25")
	beaten.logLevel = slog.LevelWarn
	envAddr := defaults(two, ",")
	envAddr.addr = "127.0.0.1:0"
	stdioDefaults := defaults("a=http://127.0.0.1:1/mcp,local=cmd", ",")
	stdioDefaults.processes = "16/5m0s"
	stdioSet := defaults("local=cmd", "")
	stdioSet.processes = "3/1m0s"
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		want    configSummary
	}{
		{name: "flags", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream-tokens", "a=" + tokens},
			want: defaults("a=http://127.0.0.1:1/mcp+tokens", "")},
		{name: "environment", env: map[string]string{"ELICIT_GATEWAY_UPSTREAM": two, "ELICIT_GATEWAY_ADDR": "127.0.0.1:0"}, want: envAddr},
		{name: "file", args: []string{"--config", cfgFile}, want: fromFile},
		{name: "flag beats environment beats file", args: []string{"--config", cfgFile, "--prefix-all=false"},
			env: map[string]string{"ELICIT_GATEWAY_LOG_LEVEL": "warn"}, want: beaten},
		{name: "stdio upstream", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream", "local=cmd:/usr/bin/server --stdio --user {user}"}, want: stdioDefaults},
		{name: "stdio bounds", args: []string{"--upstream", "local=cmd:server", "--stdio-max-processes", "3", "--stdio-idle", "1m"}, want: stdioSet},
		{name: "stdio without a program", args: []string{"--upstream", "local=cmd: "}, wantErr: "names no program"},
		{name: "stdio idle zero", args: []string{"--upstream", "local=cmd:server", "--stdio-idle", "0s"}, wantErr: "--stdio-idle"},
		{name: "no process allowed", args: []string{"--upstream", "local=cmd:server", "--stdio-max-processes", "0"}, wantErr: "--stdio-max-processes"},
		{name: "no upstream", wantErr: "no --upstream"},
		{name: "not NAME=URL", args: []string{"--upstream", "http://x"}, wantErr: "want NAME=URL"},
		{name: "tokens for an unknown upstream", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream-tokens", "b=" + tokens}, wantErr: "for a NAME given with --upstream"},
		{name: "token file others may read", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--upstream-tokens", "a=" + loose}, wantErr: "readable by others"},
		{name: "demo auth off loopback", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--addr", "0.0.0.0:3100"}, wantErr: "only on a loopback"},
		{name: "jwt without issuer", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--auth", "jwt"}, wantErr: "needs --jwt-issuer"},
		{name: "peer URL without secret", args: []string{"--upstream", "a=http://127.0.0.1:1/mcp", "--peer-url", "http://10.0.0.5:3100/mcp"}, wantErr: "ELICIT_GATEWAY_PEER_SECRET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(tc.args, env(tc.env), io.Discard, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "a1") {
					t.Fatalf("err %v, want %q (and never the token)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := summarize(c); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// syncBuffer collects a stream written by several goroutines.
type syncBuffer = mcptest.SyncBuffer

// greetUpstream serves a tool that asks a name and answers with it and
// the principal the upstream saw, on both eras, until t ends.
func greetUpstream(t *testing.T) string {
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
	t.Cleanup(func() { up.Close(); _ = h.Close() })
	return up.URL
}

// runCommand runs the command with args until stop, and returns its MCP
// endpoint, its standard output (the audit records) and stop, which
// returns run's error.
func runCommand(t *testing.T, args ...string) (gw string, stdout *syncBuffer, stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr := make(chan string, 1)
	done := make(chan error, 1)
	stdout = &syncBuffer{}
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0", "--log-level", "error"}, args...), env(nil), stdout, io.Discard, func(a string) { addr <- a })
	}()
	select {
	case a := <-addr:
		gw = "http://" + a + "/mcp"
	case err := <-done:
		t.Fatal(err)
	}
	return gw, stdout, func() error { cancel(); return <-done }
}

// auditLines reads the audit records the command wrote.
func auditLines(t *testing.T, out string) []auditLine {
	var lines []auditLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var a auditLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		lines = append(lines, a)
	}
	return lines
}

// The command serves an upstream's tool with its question relayed, the
// upstream sees the user's own token from the token file (never the
// client's), and the audit line names both sides.
func TestRunServes(t *testing.T) {
	up := greetUpstream(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "up.tokens")
	if err := os.WriteFile(tokens, []byte("@gateway gw\nalice alice-at-upstream\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, audit, stop := runCommand(t, "--data", dir, "--upstream", "up="+up, "--upstream-tokens", "up="+tokens)
	ctx := t.Context()
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
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	type seen struct{ principal, outcome, call, clientRev, upstreamRev string }
	var got []seen
	for _, a := range auditLines(t, audit.String()) {
		got = append(got, seen{a.Principal, a.Outcome, a.Call, a.ClientRevision, a.UpstreamRevision})
	}
	if len(got) != 3 || got[0].call == "" || got[1].call != got[0].call ||
		got[0] != (seen{"alice", "input_required", got[0].call, "2026-07-28", "2026-07-28"}) ||
		got[1] != (seen{"alice", "complete", got[0].call, "2026-07-28", "2026-07-28"}) ||
		got[2].principal != "bob" || got[2].outcome != "error" {
		t.Errorf("audit: %s", audit.String())
	}
	if strings.Contains(audit.String(), "Ada") || strings.Contains(audit.String(), "alice-at-upstream") {
		t.Errorf("the audit shows an answer or a token: %s", audit.String())
	}
}

// childEnv makes the test binary a stdio MCP server (TestMain) for
// TestRunStdioUpstream.
const childEnv = "GATEWAY_CMD_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(stdioChild())
	}
	os.Exit(m.Run())
}

// stdioChild serves whoami: the user it runs for, the token it was
// given, whether any of the gateway's own settings reached it, and its
// last argument.
func stdioChild() int {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := mcpserver.New(mcp.Implementation{Name: "child", Version: "1"}, &mcpserver.Options{Logger: quiet})
	s.AddTool(&mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		leaked := slices.ContainsFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ELICIT_GATEWAY_") })
		return mcpserver.Text(fmt.Sprintf("%s token=%s leaked=%v arg=%s", req.Principal, os.Getenv(gateway.EnvUpstreamToken), leaked, os.Args[len(os.Args)-1])), nil
	})
	if err := stdio.ServeProcess(context.Background(), s, &stdio.Options{Principal: os.Getenv(gateway.EnvUpstreamUser), Logger: quiet}); err != nil {
		return 1
	}
	return 0
}

// The command runs a cmd: upstream as one process per user, with the
// user ({user} in the arguments, and the environment) and their token
// from the token file, and none of the gateway's own settings or secrets
// in the process's environment.
func TestRunStdioUpstream(t *testing.T) {
	t.Setenv(childEnv, "1")
	t.Setenv("ELICIT_GATEWAY_PEER_SECRET", strings.Repeat("s", 32))
	dir := t.TempDir()
	tokens := filepath.Join(dir, "local.tokens")
	if err := os.WriteFile(tokens, []byte("@gateway gw\nalice alice-token\nbob bob-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, _, stop := runCommand(t, "--data", dir, "--upstream", "local=cmd:"+os.Args[0]+" -test.run=^$ {user}", "--upstream-tokens", "local="+tokens)
	for _, user := range []string{"alice", "bob"} {
		res, err := mcpclient.New(gw, &mcpclient.Options{Token: user}).CallTool(t.Context(), "whoami", nil)
		if want := user + " token=" + user + "-token leaked=false arg=" + user; err != nil || res.Content[0].Text != want {
			t.Errorf("%s: %+v, %v; want %q", user, res, err, want)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
