package main

import (
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mcp-elicit/elicit/store/postgres/pgtest"

	"github.com/mcp-elicit/elicit/examples/billing"
)

// liveRoundRobin is a reverse proxy that sends each request to the next
// backend in turn, skipping backends marked down.
type liveRoundRobin struct {
	backends []*httputil.ReverseProxy
	names    []string
	down     []atomic.Bool
	next     atomic.Int64
	mu       sync.Mutex
	served   []string // backend name per request, in order
}

func (p *liveRoundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for range len(p.backends) {
		i := int(p.next.Add(1)-1) % len(p.backends)
		if p.down[i].Load() {
			continue
		}
		p.mu.Lock()
		p.served = append(p.served, p.names[i]+" "+r.Method+" "+r.URL.Path)
		p.mu.Unlock()
		p.backends[i].ServeHTTP(w, r)
		return
	}
	http.Error(w, "no live backend", http.StatusBadGateway)
}

// environWithoutElicit is the process environment without its ELICIT_*
// variables, so a child elicitd sees only the settings a test gives it.
func environWithoutElicit() []string {
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELICIT_") {
			environ = append(environ, kv)
		}
	}
	return environ
}

// process is an elicitd started by startProcess (or startStdio): done is
// closed once it has been waited for, and err is then Wait's result.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer // stdout and stderr (startProcess)
	done chan struct{}
	err  error
}

// startProcess starts bin with args and env, kills it at cleanup (however
// the test ends), and returns once it logs that it listens.
func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &syncBuffer{}}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.start(t)
	waitFor(t, "elicitd to listen", func() bool { return strings.Contains(p.out.String(), "elicitd listening") })
	return p
}

// start starts p.cmd, waits for it in the background (done is closed
// and err set when it exits) and kills it at cleanup, however the test ends.
func (p *process) start(t testing.TB) {
	t.Helper()
	p.done = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
}

// wait returns Wait's result once the process has exited.
func (p *process) wait() error { <-p.done; return p.err }

// buildElicitd skips in -short, else returns a new temporary directory
// and the release build of elicitd (built once per test binary).
func buildElicitd(t *testing.T) (dir, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs an elicitd process; skipped in -short")
	}
	return t.TempDir(), plainBinary.get(t)
}

// freeLoopbackAddr returns a loopback address nothing listens on right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestTwoProcessesSIGKILL runs two real elicitd processes on one
// PostgreSQL schema and one ELICIT_MASTER_KEY behind a round-robin proxy:
// connect_billing starts on A, A is SIGKILLed, and the page step and the
// retry with the same requestState complete on B.
func TestTwoProcessesSIGKILL(t *testing.T) {
	if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable) to run the two-process PostgreSQL test")
	}
	_, bin := buildElicitd(t)
	dsn := pgtest.SchemaDSN(t)
	key := make([]byte, 32)
	rand.Read(key)
	environ := append(environWithoutElicit(), masterKeyEnv+"="+base64.StdEncoding.EncodeToString(key))

	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + pln.Addr().String()
	proxy := &liveRoundRobin{}
	procs := map[string]*namedProcess{}
	for _, name := range []string{"A", "B"} {
		procs[name] = proxy.start(t, name, bin, environ, "--data", t.TempDir(), "--store", dsn, "--public-url", public, "--log-level", "debug")
	}
	proxy.down = make([]atomic.Bool, len(proxy.backends))
	ps := &httptest.Server{Listener: pln, Config: &http.Server{Handler: proxy}}
	ps.Start()
	t.Cleanup(ps.Close)
	e := &env{t: t, url: public, logs: &syncBuffer{}, rec: &recorder{}}

	// The first request through the proxy goes to A.
	r := e.connect(1, "alice", "")
	if r.Status != 200 || r.resultType() != "input_required" || r.state() == "" {
		t.Fatalf("start through A: %s", r.Raw)
	}
	_, _, link := r.elicitation(t)
	if !strings.HasPrefix(link, public+"/ui/set_api_key?flow=") {
		t.Fatalf("elicitation URL %q is not on the proxy", link)
	}
	state := r.state()

	procs["A"].killHard(t)
	proxy.down[0].Store(true)

	// The page step, then the retry with the same requestState, on B.
	alice := e.browser()
	status, page := alice.login(public, link, "alice")
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("key page through B: %d\n%s", status, page)
	}
	status, page = alice.fillKey(public, page, link, testKey)
	if status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("key POST through B: %d\n%s", status, page)
	}
	r = e.connect(2, "alice", answer("accept", state))
	if r.resultType() != "complete" || r.isError() || r.text() != billing.TextConnected {
		t.Fatalf("retry through B: %s", r.Raw)
	}
	proxy.checkFailover(t)

	// The key is in neither process's log, nor in any URL, Location or body.
	for _, p := range procs {
		logs := p.out.String()
		if strings.Contains(logs, testKey) {
			t.Fatalf("the billing key appears in elicitd %s's log", p.name)
		}
		e.logs.Write([]byte(logs))
	}
	e.assertNoLeak(t)
	select {
	case <-procs["B"].done:
		t.Fatalf("B exited: %v", procs["B"].cmd.ProcessState)
	default:
	}
}

// namedProcess is an elicitd behind a liveRoundRobin.
type namedProcess struct {
	*process
	name, addr string
}

// start starts an elicitd on a free loopback port (startProcess: it
// listens and logs that it does) and adds it as a backend.
func (p *liveRoundRobin) start(t *testing.T, name, bin string, environ []string, args ...string) *namedProcess {
	t.Helper()
	addr := freeLoopbackAddr(t)
	np := &namedProcess{process: startProcess(t, bin, environ, append([]string{"--addr", addr}, args...)...), name: name, addr: addr}
	u, _ := url.Parse("http://" + addr)
	p.backends = append(p.backends, httputil.NewSingleHostReverseProxy(u))
	p.names = append(p.names, name)
	return np
}

// killHard SIGKILLs the process (no shutdown, nothing flushed) and checks
// that it died of it and no longer answers.
func (p *namedProcess) killHard(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s did not die of SIGKILL: %v", p.name, p.cmd.ProcessState)
	}
	if resp, err := http.Get("http://" + p.addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("%s still answers after SIGKILL", p.name)
	}
}

// checkFailover checks the routing of the SIGKILL test: the first call on
// A, everything after the kill on B, the retry last.
func (p *liveRoundRobin) checkFailover(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	served := append([]string(nil), p.served...)
	p.mu.Unlock()
	if len(served) < 3 || served[0] != "A POST /mcp" || served[len(served)-1] != "B POST /mcp" {
		t.Fatalf("routing: %q, want the first call on A and the retry on B", served)
	}
	for _, s := range served[1:] {
		if !strings.HasPrefix(s, "B ") {
			t.Fatalf("routing: %q, want everything after the kill on B", served)
		}
	}
}
