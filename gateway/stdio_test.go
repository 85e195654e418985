package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/pagetest"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/stdio"
)

// stdioChildEnv makes the test binary a stdio MCP server (TestMain): the
// upstream process of the tests below.
const stdioChildEnv = "GATEWAY_TEST_STDIO_CHILD"

// stdioChild serves, on its standard streams, for the user of
// EnvUpstreamUser: personal (a question naming the user), whoami (the
// user, the token it was given and its process id), block (until
// cancelled) and crash (the process exits at once).
func stdioChild() int {
	s := mcpserver.New(mcp.Implementation{Name: "stdio-child", Version: "1"}, &mcpserver.Options{Logger: quietLog()})
	personal(s)
	s.AddTool(&mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text(fmt.Sprintf("%s token=%s pid=%d", req.Principal, os.Getenv(EnvUpstreamToken), os.Getpid())), nil
	})
	s.AddTool(&mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcpserver.Request) (mcpserver.Reply, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(&mcp.Tool{Name: "crash"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		os.Exit(3)
		return nil, nil
	})
	if err := stdio.ServeProcess(context.Background(), s, &stdio.Options{Principal: os.Getenv(EnvUpstreamUser), Logger: quietLog()}); err != nil {
		return 1
	}
	return 0
}

// childCommand runs this test binary as stdioChild.
func childCommand() func(principal, token string) *exec.Cmd {
	line := CommandLine(os.Args[0], []string{"-test.run=^$"}, nil)
	return func(principal, token string) *exec.Cmd {
		cmd := line(principal, token)
		cmd.Env = append(cmd.Env, stdioChildEnv+"=1")
		return cmd
	}
}

// stdioTokens are each user's credential at the child upstream.
var stdioTokens = Tokens{CatalogPrincipal: "gateway-token", "alice": "alice-token", "bob": "bob-token", "carol": "carol-token"}

// whoamiOf calls whoami as user and returns its text and the process id
// in it.
func whoamiOf(ctx context.Context, gw, user string) (string, int, error) {
	res, err := mcpclient.New(gw, &mcpclient.Options{Token: user}).CallTool(ctx, "whoami", nil)
	if err != nil {
		return "", 0, fmt.Errorf("%s: whoami: %w", user, err)
	}
	text := res.Content[0].Text
	var who, tok string
	var pid int
	if _, err := fmt.Sscanf(text, "%s token=%s pid=%d", &who, &tok, &pid); err != nil {
		return "", 0, fmt.Errorf("whoami %q: %w", text, err)
	}
	return text, pid, nil
}

// pidOf calls whoami as user and returns the process id it ran in.
func pidOf(ctx context.Context, t *testing.T, gw, user string) int {
	t.Helper()
	_, pid, err := whoamiOf(ctx, gw, user)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestStdioUpstreamPerUser: a stdio upstream runs one process per user,
// each started with that user's identity and token; two users calling at
// once, several calls each, only ever see their own questions and
// results, each user's calls reach their own process, and a user without
// a credential gets an error and no process.
func TestStdioUpstreamPerUser(t *testing.T) {
	g, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "local", Command: childCommand(), Credentials: stdioTokens}}})
	ctx := t.Context()
	pids := map[string]int{}
	for _, user := range []string{"alice", "bob"} {
		text, pid, err := whoamiOf(ctx, gw, user)
		if err != nil {
			t.Fatal(err)
		}
		pids[user] = pid
		if want := fmt.Sprintf("%s token=%s-token pid=%d", user, user, pids[user]); text != want {
			t.Errorf("whoami: %q, want %q", text, want)
		}
	}
	if pids["alice"] == pids["bob"] || pids["alice"] == os.Getpid() {
		t.Errorf("alice and bob share a process: %v", pids)
	}
	const calls = 6
	var wg sync.WaitGroup
	errs := make(chan error, 4*calls)
	for _, user := range []string{"alice", "bob"} {
		for i := range calls {
			wg.Go(func() {
				nonce := fmt.Sprintf("%s-%d", user, i)
				c := formClient(gw, user, func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
					if p.Message != "Question for "+user {
						errs <- fmt.Errorf("%s saw the question %q", user, p.Message)
					}
					return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": nonce}}
				})
				res, err := c.CallTool(ctx, "personal", nil)
				if err != nil {
					errs <- fmt.Errorf("%s: %v", user, err)
					return
				}
				if want := user + ":" + nonce; res.IsError || res.Content[0].Text != want {
					errs <- fmt.Errorf("%s got %+v, want %q", user, res.Content, want)
				}
				if _, pid, err := whoamiOf(ctx, gw, user); err != nil || pid != pids[user] {
					errs <- fmt.Errorf("%s reached process %d (%v), not their own %d", user, pid, err, pids[user])
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, err := mcpclient.New(gw, &mcpclient.Options{Token: "mallory"}).CallTool(ctx, "whoami", nil)
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError {
		t.Errorf("mallory: %v, want -32603 no credentials", err)
	}
	if n := g.byName["local"].procs.count(); n != 3 {
		t.Errorf("%d processes, want 3 (the gateway's, alice's, bob's)", n)
	}
}

// TestStdioProcessCrash: a process that exits in the middle of a call
// fails that call with a retryable -32603 (no hang), and the user's next
// call starts a new process.
func TestStdioProcessCrash(t *testing.T) {
	_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "local", Command: childCommand(), Credentials: stdioTokens}}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang fails, not blocks
	defer cancel()
	before := pidOf(ctx, t, gw, "alice")
	_, err := mcpclient.New(gw, &mcpclient.Options{Token: "alice"}).CallTool(ctx, "crash", nil)
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError || rpc.HTTPStatus != 503 {
		t.Fatalf("crash: %v, want a retryable -32603 (HTTP 503)", err)
	}
	if after := pidOf(ctx, t, gw, "alice"); after == before {
		t.Errorf("still process %d after it exited", after)
	}
}

// TestStdioProcessDiedIdle: a process killed while idle is found exited
// by the user's next request, which starts a new process and succeeds
// (no retryable error first).
func TestStdioProcessDiedIdle(t *testing.T) {
	g, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "local", Command: childCommand(), Credentials: stdioTokens}}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	before := pidOf(ctx, t, gw, "alice")
	pool := g.byName["local"].procs
	pool.mu.Lock()
	pr := pool.procs["alice"]
	pool.mu.Unlock()
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-pr.c.Exited()
	text, after, err := whoamiOf(ctx, gw, "alice")
	if err != nil {
		t.Fatalf("the request after the process died: %v, want a new process", err)
	}
	if after == before || !strings.HasPrefix(text, "alice token=alice-token ") {
		t.Errorf("after the kill: %q (process %d before)", text, before)
	}
	if n := pool.count(); n != 2 {
		t.Errorf("%d processes, want 2 (the gateway's, alice's new one)", n)
	}
}

// TestStdioProcessBounds: at MaxProcesses, a new user's process replaces
// the one idle the longest; when every process is busy a new user is
// refused with a retryable error; processes idle for ProcessIdle are
// closed; Close stops every process.
func TestStdioProcessBounds(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Unix(1_800_000_000, 0).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	tick := func() { clock.Add(int64(time.Second)) }
	g, gw := startGateway(t, Options{Now: now, Upstreams: []Upstream{{Name: "local", Command: childCommand(), Credentials: stdioTokens,
		MaxProcesses: 2, ProcessIdle: time.Hour}}})
	pool := g.byName["local"].procs
	ctx := t.Context()
	// The gateway's own process and alice's; bob's replaces the
	// gateway's (idle the longest), carol's alice's.
	pids := map[string]int{}
	for _, user := range []string{"alice", "bob", "carol"} {
		tick()
		pids[user] = pidOf(ctx, t, gw, user)
		if n := pool.count(); n != 2 {
			t.Fatalf("after %s: %d processes, want 2", user, n)
		}
	}
	pool.stopping.Wait()
	if !exited(pids["alice"]) || exited(pids["bob"]) || exited(pids["carol"]) {
		t.Errorf("processes alive: alice %v, bob %v, carol %v; want only bob's and carol's", !exited(pids["alice"]), !exited(pids["bob"]), !exited(pids["carol"]))
	}

	// bob's and carol's processes both busy (a request of each in
	// progress): alice is refused, retryably, and no process closed.
	var busy []*process
	for _, user := range []string{"bob", "carol"} {
		pr, err := pool.acquire(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, pr)
	}
	_, err := mcpclient.New(gw, &mcpclient.Options{Token: "alice"}).CallTool(ctx, "whoami", nil)
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError || rpc.HTTPStatus != 503 {
		t.Errorf("alice with every process busy: %v, want a retryable -32603", err)
	}
	for _, pr := range busy {
		pool.release(pr, nil)
	}
	pool.stopping.Wait()
	if exited(pids["bob"]) || exited(pids["carol"]) {
		t.Errorf("a busy process was closed")
	}

	// An hour idle: both closed.
	clock.Add(int64(time.Hour))
	g.sweepProcesses()
	pool.stopping.Wait()
	if n := pool.count(); n != 0 || !exited(pids["bob"]) || !exited(pids["carol"]) {
		t.Errorf("after an idle hour: %d processes, bob's exited %v, carol's %v", n, exited(pids["bob"]), exited(pids["carol"]))
	}

	// Close stops the ones running.
	pid := pidOf(ctx, t, gw, "alice")
	_ = g.Close()
	if !exited(pid) {
		t.Errorf("alice's process %d still runs after Close", pid)
	}
}

// TestCommandLineUser: {user} in a stdio upstream's arguments is one
// path element per user, never "", ".", ".." or one with a "/", and
// never the gateway's own; ELICIT_UPSTREAM_USER is the id as is.
func TestCommandLineUser(t *testing.T) {
	line := CommandLine("prog", []string{"--data", "/st/" + UserPlaceholder}, nil)
	tests := []struct{ principal, elem string }{
		{"alice", "alice"},
		{"Bob_2-x", "Bob_2-x"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{"a/b", "a%2Fb"},
		{"https://idp.example#u/../x", "https%3A%2F%2Fidp%2Eexample%23u%2F%2E%2E%2Fx"},
		{"%2E", "%252E"},
		{"@gateway", "%40gateway"},
		{"é", "%C3%A9"},
		{CatalogPrincipal, "@gateway"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		cmd := line(tt.principal, "")
		dir := cmd.Args[2]
		if want := "/st/" + tt.elem; dir != want {
			t.Errorf("%q: --data %q, want %q", tt.principal, dir, want)
		}
		if filepath.Dir(dir) != "/st" || filepath.Base(dir) != tt.elem || filepath.Clean(dir) != dir {
			t.Errorf("%q: %q is not one element under /st", tt.principal, dir)
		}
		if other, ok := seen[tt.elem]; ok {
			t.Errorf("%q and %q share %q", tt.principal, other, tt.elem)
		}
		seen[tt.elem] = tt.principal
		if got := cmd.Env[len(cmd.Env)-1]; got != EnvUpstreamUser+"="+tt.principal {
			t.Errorf("%q: last env %q, want the raw id", tt.principal, got)
		}
	}
}

// exited reports whether process pid is gone (waited for by its parent).
func exited(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestElicitdStdioBehindGateway: elicitd --stdio as a stdio upstream,
// one process per user started as that user (--stdio-user {user}). Alice
// and Bob at once prepare a draft (a form) and connect billing (the URL
// page of their own process, signed in as themselves), and each one's
// list of drafts holds their own draft only.
func TestElicitdStdioBehindGateway(t *testing.T) {
	bin, data := elicitdBin(t), t.TempDir()
	line := CommandLine(bin, []string{"--stdio", "--data", filepath.Join(data, "u-"+UserPlaceholder),
		"--demo-oauth-addr", "off", "--log-level", "warn"}, nil)
	command := func(principal, token string) *exec.Cmd {
		cmd := line(principal, token)
		// Only the settings given here: none of the test run's ELICIT_*.
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
			return strings.HasPrefix(kv, "ELICIT_") && !strings.HasPrefix(kv, "ELICIT_UPSTREAM_")
		})
		return cmd
	}
	_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "elicitd", Command: command}}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, who := range []string{"alice", "bob"} {
		wg.Go(func() {
			label := who + "'s draft"
			u := user{action: mcp.ActionAccept, who: who, args: map[string]any{"period": "2026-Q1", "dataset": "sales"},
				content: map[string]any{"detail": "summary", "label": label},
				page:    func(link string) error { return pagetest.New().FinishKey(link, who, "sk_test_"+who) }}
			if got, err := callOurs(ctx, gw, reports.ToolExport, u); err != nil || !strings.Contains(got, label) {
				errs <- fmt.Errorf("%s: export_report: %q, %v", who, got, err)
			}
			u.args = nil
			if got, err := callOurs(ctx, gw, billing.ToolName, u); err != nil || got != billing.TextConnected {
				errs <- fmt.Errorf("%s: connect_billing: %q, %v", who, got, err)
			}
			got, err := callOurs(ctx, gw, reports.ToolList, u)
			if err != nil || !strings.Contains(got, label) || strings.Count(got, "'s draft") != 1 {
				errs <- fmt.Errorf("%s: list_drafts: %q, %v", who, got, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
