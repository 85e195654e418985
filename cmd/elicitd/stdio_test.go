package main

// elicitd --stdio, a real process (test build): go-sdk v1.8.0's
// CommandTransport client and the TypeScript SDK v2's stdio client launch
// it and complete export_report (form) and connect_billing (URL, the page
// done over HTTP with a cookie jar) on 2026-07-28 and, through the bridge,
// 2025-11-25; bad input on stdin; closing stdin mid-call.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/internal/npmtest"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// builtBinary is elicitd built once per test binary (TestMain removes it).
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// testBinary has the test hooks (testhooks.go); plainBinary is the
// release build.
var testBinary, plainBinary builtBinary

// get builds elicitd with the go build flags args the first time and
// returns its path.
func (b *builtBinary) get(t testing.TB, args ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "elicitd-test-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "elicitd")
		args = append(append([]string{"build"}, args...), "-o", b.path, ".")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// testElicitd builds elicitd with the test hooks once per test binary and
// returns its path.
func testElicitd(t testing.TB) string {
	t.Helper()
	if testing.Short() && !npmtest.Required() {
		t.Skip("builds and runs an elicitd process; skipped in -short")
	}
	return testBinary.get(t, "-tags", "elicitd_testhooks")
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []*builtBinary{&testBinary, &plainBinary} {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
	os.Exit(code)
}

// stdioArgs are the flags of a --stdio elicitd with its data in dir,
// serving alice.
func stdioArgs(dir string) []string {
	return []string{"--stdio", "--data", dir, "--stdio-user", "alice", "--demo-oauth-addr", "off", "--log-level", "debug"}
}

// pageStep signs alice in at the URL-mode link and types the key, as a
// browser with a cookie jar would.
func pageStep(t *testing.T, link string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	base := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	status, page := b.login(base, link, "alice")
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("key page: %d\n%s", status, page)
	}
	if status, page = b.fillKey(base, page, link, testKey); status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("key POST: %d\n%s", status, page)
	}
}

// TestStdioGoSDK: go-sdk's CommandTransport launches elicitd --stdio; on
// 2026-07-28 (server/discover, MRTR) and on 2025-11-25 (initialize, the
// bridge sending elicitation/create) it completes export_report and
// connect_billing, the page done over HTTP; a tool that prints to stdout
// three ways does not break the stream.
func TestStdioGoSDK(t *testing.T) {
	bin := testElicitd(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			stderr := &syncBuffer{}
			cmd := exec.Command(bin, stdioArgs(t.TempDir())...)
			cmd.Env = environWithoutElicit()
			cmd.Stderr = stderr
			var forms []string
			client := sdk.NewClient(&sdk.Implementation{Name: "gosdk-stdio", Version: "v1.8.0"}, &sdk.ClientOptions{
				Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					if req.Params.Mode == "url" {
						pageStep(t, req.Params.URL)
						return &sdk.ElicitResult{Action: "accept"}, nil
					}
					forms = append(forms, req.Params.Message)
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"detail": "summary", "label": "Go label"}}, nil
				},
			})
			cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s", got)
			}
			call := func(tool string, args map[string]any) string {
				t.Helper()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %+v\nstderr:\n%s", tool, err, res, stderr)
				}
				return toolText(t, res)
			}
			if got := call("export_report", map[string]any{"period": "2026-Q2", "dataset": "sales"}); !strings.Contains(got, `"Go label"`) || !strings.HasPrefix(got, "Draft d_") {
				t.Fatalf("export_report: %q", got)
			}
			if len(forms) != 1 {
				t.Fatalf("forms asked: %q", forms)
			}
			if got := call(billing.ToolName, map[string]any{}); got != billing.TextConnected {
				t.Fatalf("connect_billing: %q", got)
			}
			if got := call("test_stray", map[string]any{}); got != "clean" {
				t.Fatalf("test_stray: %q", got)
			}
			if got := call(billing.StatusToolName, map[string]any{}); !strings.Contains(strings.ToLower(got), "connected") {
				t.Fatalf("after the stray prints: %q", got)
			}
			if err := cs.Close(); err != nil {
				t.Fatalf("close: %v\nstderr:\n%s", err, stderr)
			}
			log := stderr.String()
			for _, want := range []string{"stray fmt.Println", "stray os.Stdout", "stray fd 1", "principal=alice", "input ended"} {
				if !strings.Contains(log, want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			if strings.Contains(log, testKey) {
				t.Fatal("the key is in the log")
			}
		})
	}
}

// TestStdioTypeScriptSDK: the TypeScript SDK v2's stdio client (npm, at
// test time) launches elicitd --stdio and completes both flows, pinned
// to 2026-07-28 and in its default 2025-11-25 mode.
func TestStdioTypeScriptSDK(t *testing.T) {
	script := npmtest.Script(t, filepath.Join("testdata", "ts_stdio_client.mjs"), "@modelcontextprotocol/client@2.4.0")
	bin := testElicitd(t)
	for _, mode := range []struct{ arg, version string }{{"2026-07-28", "2026-07-28"}, {"legacy", "2025-11-25"}} {
		t.Run(mode.version, func(t *testing.T) {
			run := runTSClient(t, script, mode.arg, bin)
			if run.version != mode.version || run.forms != 1 {
				t.Fatalf("version %q, forms %d", run.version, run.forms)
			}
			if got := run.text(t, "export_report"); !strings.Contains(got, `"TS label"`) {
				t.Fatalf("export_report: %q", got)
			}
			if got := run.text(t, billing.ToolName); got != billing.TextConnected {
				t.Fatalf("connect_billing: %q", got)
			}
		})
	}
}

// tsClientRun is what testdata/ts_stdio_client.mjs reported, one line
// each: the protocol version, each form it answered, each tool's result
// (JSON), and its failure, if any.
type tsClientRun struct {
	version, failure string
	forms            int
	results          map[string]string
}

// runTSClient runs the TypeScript client script in mode against the
// elicitd binary bin, finishing each URL step's page when it asks, and
// returns what it reported once it exited, without failing.
func runTSClient(t *testing.T, script, mode, bin string) *tsClientRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script, mode, bin}, stdioArgs(t.TempDir())...)...)
	cmd.Env = environWithoutElicit()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := &tsClientRun{results: map[string]string{}}
	run.read(t, out, in)
	if err := cmd.Wait(); err != nil || run.failure != "" {
		t.Fatalf("node: %v %s\nstderr:\n%s", err, run.failure, stderr)
	}
	return run
}

// read reads the script's report lines from out; it answers "done" on in
// once it has finished the page of an ELICIT line.
func (run *tsClientRun) read(t *testing.T, out io.Reader, in io.Writer) {
	t.Helper()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "VERSION":
			run.version = rest
		case "FORM":
			run.forms++
		case "ELICIT":
			pageStep(t, rest)
			if _, err := io.WriteString(in, "done\n"); err != nil {
				t.Fatal(err)
			}
		case "RESULT":
			tool, res, _ := strings.Cut(rest, " ")
			run.results[tool] = res
		case "ERROR":
			run.failure = rest
		}
	}
}

// text is the first text block of tool's result, which must be a
// successful one.
func (run *tsClientRun) text(t *testing.T, tool string) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal([]byte(run.results[tool]), &r); err != nil || len(r.Content) == 0 || r.IsError {
		t.Fatalf("%s: %q", tool, run.results[tool])
	}
	return r.Content[0].Text
}

// stdioProc is an elicitd --stdio driven line by line.
type stdioProc struct {
	*process // cmd, done, err
	t        testing.TB
	in       io.WriteCloser
	rd       *bufio.Reader // the process's stdout
	stderr   *syncBuffer
	dir      string
}

func startStdio(t testing.TB) *stdioProc {
	t.Helper()
	bin := testElicitd(t)
	p := &stdioProc{t: t, stderr: &syncBuffer{}, dir: t.TempDir()}
	p.process = &process{cmd: exec.Command(bin, stdioArgs(p.dir)...)}
	p.cmd.Env = environWithoutElicit()
	p.cmd.Stderr = p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.rd = bufio.NewReaderSize(out, 1<<20)
	p.start(t)
	return p
}

func (p *stdioProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads one line: a JSON-RPC message, whatever else happens.
func (p *stdioProc) recv() map[string]any {
	p.t.Helper()
	line, err := p.rd.ReadString('\n')
	if err != nil {
		p.t.Fatalf("reading stdout: %v\nstderr:\n%s", err, p.stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
		p.t.Fatalf("stdout line is not a JSON-RPC message: %q", line)
	}
	return m
}

func wantCode(t *testing.T, m map[string]any, id any, code float64) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != code || m["id"] != id {
		t.Fatalf("want error %v for id %v, got %v", code, id, m)
	}
}

const stdioMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}}`

// TestStdioBadInput: the elicitd process answers every kind of bad line
// with the spec's error and keeps serving: not JSON, a batch, a response,
// a server-to-client request, a request before initialize that is not a
// 2026 one, a 100 MB line; then it exits 0 when stdin closes.
func TestStdioBadInput(t *testing.T) {
	p := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`) // neither era: before initialize, no _meta
	wantCode(t, p.recv(), float64(1), -32602)
	p.send(`not json`)
	wantCode(t, p.recv(), nil, -32700)
	p.send(`[{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + stdioMeta + `}}]`)
	wantCode(t, p.recv(), nil, -32600)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{` + stdioMeta + `}}`)
	wantCode(t, p.recv(), float64(3), -32601)
	p.send(`{"jsonrpc":"2.0","id":4,"result":{"action":"accept"}}`)
	wantCode(t, p.recv(), nil, -32600)
	errc := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(p.in, 1<<20)
		chunk := strings.Repeat("x", 1<<20)
		for range 100 {
			if _, err := w.WriteString(chunk); err != nil {
				errc <- err
				return
			}
		}
		_, err := w.WriteString("\n")
		if err == nil {
			err = w.Flush()
		}
		errc <- err
	}()
	wantCode(t, p.recv(), nil, -32600)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + stdioMeta + `}}`)
	if m := p.recv(); m["id"] != float64(5) || m["result"] == nil {
		t.Fatalf("after the bad lines: %v", m)
	}
	p.in.Close()
	<-p.done
	if p.err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", p.err, p.stderr)
	}
}

// TestStdioCloseMidCall: stdin closes while a call is inside a store
// transaction; the process cancels it (the transaction rolls back) and
// exits 0, in this order, and the store holds nothing of it.
func TestStdioCloseMidCall(t *testing.T) {
	p := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_effect","arguments":{},` + stdioMeta + `}}`)
	waitFor(t, "the call inside its transaction", func() bool {
		return strings.Contains(p.stderr.String(), "EVENT test_effect inside the transaction")
	})
	start := time.Now()
	p.in.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second): // a hang guard, not the measure
		t.Fatalf("still running 30s after stdin closed:\n%s", p.stderr)
	}
	took := time.Since(start)
	t.Logf("exited %v after stdin closed", took.Round(time.Millisecond))
	if p.err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", p.err, p.stderr)
	}
	log := p.stderr.String()
	order := []string{"EVENT test_effect inside the transaction", "input ended", "EVENT test_effect cancelled", "shutting down"}
	last := -1
	for _, e := range order {
		i := strings.Index(log, e)
		if i <= last {
			t.Fatalf("%q missing or out of order:\n%s", e, log)
		}
		last = i
	}
	if rest, _ := io.ReadAll(p.rd); len(rest) != 0 {
		t.Fatalf("an answer was written for the cancelled call: %q", rest)
	}
	st, err := sqlite.Open(filepath.Join(p.dir, "elicitd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.GetOperation(ctx, "test-effect"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the operation: %v", err)
	}
	if _, err := st.GetRecord(ctx, "test", "effect"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the record: %v", err)
	}
}

// BenchmarkStdioCloseMidCall measures the acceptance figure "closing
// stdin mid-call ends the process within a second": from stdin closed,
// with a call inside its store transaction, to the process's exit
// (ms/exit; TestStdioCloseMidCall checks the order and the store).
func BenchmarkStdioCloseMidCall(b *testing.B) {
	var total time.Duration
	for range b.N {
		p := startStdio(b)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_effect","arguments":{},` + stdioMeta + `}}`)
		waitFor(b, "the call inside its transaction", func() bool {
			return strings.Contains(p.stderr.String(), "EVENT test_effect inside the transaction")
		})
		start := time.Now()
		p.in.Close()
		<-p.done
		total += time.Since(start)
		if p.err != nil {
			b.Fatalf("exit: %v\nstderr:\n%s", p.err, p.stderr)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/exit")
	b.ReportMetric(0, "ns/op")
}

// TestStdioConfig: --stdio's defaults apply only to what was not given,
// and the user it serves is checked.
func TestStdioConfig(t *testing.T) {
	osUser := func() string {
		t.Helper()
		cfg, err := loadConfig([]string{"--stdio"}, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Skipf("this OS user cannot be the default: %v", err)
		}
		return cfg.stdioUser
	}()
	configDir, _ := os.UserConfigDir()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*config) bool
		wantErr string
	}{
		{"defaults", []string{"--stdio"}, nil, func(c *config) bool {
			return c.addr == "127.0.0.1:0" && c.dataDir == filepath.Join(configDir, "elicitd") && c.metricsAddr == "off" &&
				c.stdioUser == osUser && c.publicURLFromListener
		}, ""},
		{"given addr and data kept", []string{"--stdio", "--addr", "127.0.0.1:4555", "--data", "/srv/d", "--stdio-user", "bob"}, nil, func(c *config) bool {
			return c.addr == "127.0.0.1:4555" && c.dataDir == "/srv/d" && c.stdioUser == "bob" && c.publicURL == "http://127.0.0.1:4555"
		}, ""},
		{"from the environment", nil, map[string]string{"ELICIT_STDIO": "true", "ELICIT_STDIO_USER": "carol", "ELICIT_DATA": "/e"}, func(c *config) bool {
			return c.stdio && c.stdioUser == "carol" && c.dataDir == "/e" && c.addr == "127.0.0.1:0"
		}, ""},
		{"without --stdio", []string{}, nil, func(c *config) bool { return !c.stdio && c.addr == "127.0.0.1:3000" }, ""},
		{"user without --stdio", []string{"--stdio-user", "bob"}, nil, nil, "--stdio-user is only for --stdio"},
		{"bad user", []string{"--stdio", "--stdio-user", "bob smith"}, nil, nil, "want a user name"},
		{"issuer form without jwt", []string{"--stdio", "--stdio-user", "https://id.example.com#u1"}, nil, nil, "needs --auth jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(cfg) {
				t.Fatalf("err %v, cfg %+v", err, cfg)
			}
		})
	}
}

// TestStdioSignal: SIGTERM stops elicitd --stdio cleanly (exit 0), the
// pages' listener closed, while its input is still open.
func TestStdioSignal(t *testing.T) {
	p := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + stdioMeta + `}}`)
	if m := p.recv(); m["result"] == nil {
		t.Fatalf("discover: %v", m)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if p.err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", p.err, p.stderr)
	}
	log := p.stderr.String()
	if i, j := strings.Index(log, "stdio: stopping"), strings.Index(log, "shutting down"); i < 0 || j < i {
		t.Fatalf("stderr:\n%s", log)
	}
}

// TestStdioPagesSameUser: elicitd --stdio serving alice; the URL-mode
// link of connect_billing asks for the browser sign-in, and a browser
// signed in as bob is refused (403, no key form, nothing stored) while
// alice's completes the page, and the retry is connected.
func TestStdioPagesSameUser(t *testing.T) {
	p := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + billing.ToolName + `","arguments":{},` + stdioMeta + `}}`)
	m := p.recv()
	res, _ := m["result"].(map[string]any)
	if res == nil || res["resultType"] != "input_required" {
		t.Fatalf("want input_required: %v", m)
	}
	var link, key string
	reqs, _ := res["inputRequests"].(map[string]any)
	for k, v := range reqs {
		params, _ := v.(map[string]any)["params"].(map[string]any)
		if params["mode"] == "url" {
			link, key = params["url"].(string), k
		}
	}
	if link == "" {
		t.Fatalf("no URL-mode request: %v", res)
	}
	u, err := url.Parse(link)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the page is not on loopback: %q", link)
	}
	base := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	bob := &browser{t: t, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	status, page := bob.login(base, link, "bob")
	if status != http.StatusForbidden || strings.Contains(page, `id="key-form"`) {
		t.Fatalf("bob on alice's page: %d\n%s", status, page)
	}
	if status, _ = bob.fillKey(base, page, link, "sk_bob_attempt"); status != http.StatusForbidden {
		t.Fatalf("bob's POST: %d", status)
	}
	pageStep(t, link)
	state, _ := json.Marshal(res["requestState"])
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + billing.ToolName + `","arguments":{},"inputResponses":{"` + key + `":{"action":"accept"}},"requestState":` + string(state) + `,` + stdioMeta + `}}`)
	m = p.recv()
	res, _ = m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 || content[0].(map[string]any)["text"] != billing.TextConnected {
		t.Fatalf("retry: %v", m)
	}
	if strings.Contains(p.stderr.String(), "sk_bob_attempt") || strings.Contains(p.stderr.String(), testKey) {
		t.Fatal("a key is in the log")
	}
}
