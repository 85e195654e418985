package main

import (
	"crypto/rand"
	"encoding/base64"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// elicitdProc is one running elicitd process.
type elicitdProc struct {
	name   string
	addr   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{} // closed when the process has been waited for
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

// process is an elicitd started by startProcess: done is closed once it
// has been waited for, and err is then Wait's result.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer // stdout and stderr
	done chan struct{}
	err  error
}

// startProcess starts bin with args and env, kills it at cleanup (however
// the test ends), and returns once it logs that it listens.
func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	waitFor(t, "elicitd to listen", func() bool { return strings.Contains(p.out.String(), "elicitd listening") })
	return p
}

// wait returns Wait's result once the process has exited.
func (p *process) wait() error { <-p.done; return p.err }

// buildElicitd skips in -short, else builds elicitd into a new temporary
// directory and returns the directory and the binary.
func buildElicitd(t *testing.T) (dir, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs an elicitd process; skipped in -short")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "elicitd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, bin
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
	if testing.Short() {
		t.Skip("builds and runs elicitd processes; skipped in -short")
	}
	if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable) to run the two-process PostgreSQL test")
	}
	dsn := pgtest.SchemaDSN(t)

	bin := filepath.Join(t.TempDir(), "elicitd")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	key := make([]byte, 32)
	rand.Read(key)
	keyB64 := base64.StdEncoding.EncodeToString(key)
	environ := environWithoutElicit()
	environ = append(environ, masterKeyEnv+"="+keyB64)

	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + pln.Addr().String()

	proxy := &liveRoundRobin{}
	var procs []*elicitdProc
	for _, name := range []string{"A", "B"} {
		p := &elicitdProc{name: name, addr: freeLoopbackAddr(t), stderr: &syncBuffer{}, done: make(chan struct{})}
		p.cmd = exec.Command(bin, "--addr", p.addr, "--data", t.TempDir(), "--store", dsn, "--public-url", public, "--log-level", "debug")
		p.cmd.Env = environ
		p.cmd.Stdout = p.stderr
		p.cmd.Stderr = p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			p.cmd.Process.Kill()
			<-p.done
		})
		procs = append(procs, p)
		u, _ := url.Parse("http://" + p.addr)
		proxy.backends = append(proxy.backends, httputil.NewSingleHostReverseProxy(u))
		proxy.names = append(proxy.names, name)
	}
	proxy.down = make([]atomic.Bool, len(proxy.backends))
	a, b := procs[0], procs[1]

	// Both must answer /healthz.
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range procs {
		for {
			select {
			case <-p.done:
				t.Fatalf("elicitd %s exited before answering /healthz: %v\n%s", p.name, p.cmd.ProcessState, p.stderr.String())
			default:
			}
			resp, err := http.Get("http://" + p.addr + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("elicitd %s did not answer /healthz: %v\n%s", p.name, err, p.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

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

	// SIGKILL A: no shutdown, nothing flushed.
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	if ws, ok := a.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("A did not die of SIGKILL: %v", a.cmd.ProcessState)
	}
	if resp, err := http.Get("http://" + a.addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("A still answers after SIGKILL")
	}
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
	if !strings.HasPrefix(billing.TextConnected, "Your billing account is connected") {
		t.Fatalf("billing.TextConnected = %q", billing.TextConnected)
	}

	proxy.mu.Lock()
	served := append([]string(nil), proxy.served...)
	proxy.mu.Unlock()
	if len(served) < 3 || served[0] != "A POST /mcp" {
		t.Fatalf("routing: %q, want the first call on A", served)
	}
	for _, s := range served[1:] {
		if !strings.HasPrefix(s, "B ") {
			t.Fatalf("routing: %q, want everything after the kill on B", served)
		}
	}
	if served[len(served)-1] != "B POST /mcp" {
		t.Fatalf("routing: %q, want the retry on B", served)
	}

	// The key is in neither process's log, nor in any URL, Location or body.
	for _, p := range procs {
		logs := p.stderr.String()
		if !strings.Contains(logs, "elicitd listening") {
			t.Fatalf("elicitd %s's log lacks its start line: the leak check would prove nothing\n%s", p.name, logs)
		}
		if strings.Contains(logs, testKey) {
			t.Fatalf("the billing key appears in elicitd %s's log", p.name)
		}
		e.logs.Write([]byte(logs))
	}
	e.assertNoLeak(t)
	select {
	case <-b.done:
		t.Fatalf("B exited: %v", b.cmd.ProcessState)
	default:
	}
}
