package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// freezeProxy forwards TCP connections to target until frozen: then it
// still accepts connections and reads what arrives, but forwards nothing
// either way until thawed, like a database that stalls without refusing.
type freezeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	conns  []net.Conn
}

func newFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.thaw()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *freezeProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go p.pump(s, c)
	p.pump(c, s)
}

// pump copies src to dst, holding each chunk while frozen.
func (p *freezeProxy) pump(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.frozen {
			p.cond.Wait()
		}
		p.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *freezeProxy) freeze() { p.mu.Lock(); p.frozen = true; p.mu.Unlock() }

func (p *freezeProxy) thaw() { p.mu.Lock(); p.frozen = false; p.cond.Broadcast(); p.mu.Unlock() }

// checkFrozenStore runs elicitd on dsn with a one-second --store-timeout:
// with the database frozen, an accept leg and /readyz each answer 503
// within the deadline (not when the stall ends) and nothing is written;
// thawed, the same accept leg completes once.
func checkFrozenStore(t *testing.T, dsn string, freeze, thaw func()) {
	const timeout = time.Second
	e := &reportsEnv{env: newEnvWith(t, func(c *config) { c.storeURL, c.storeTimeout = dsn, timeout })}
	st := e.app.sweeper.st
	r := e.export(1, "alice", "2026-Q2", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	leg := exportBody(2, retryWith(reports.KeyOptions, accepted, r.state()))
	client := callClient

	freeze()
	start := time.Now()
	status, retryAfter, raw, err := rawCall(e.url, "alice", reports.ToolExport, leg)
	took := time.Since(start)
	t.Logf("accept leg with the database frozen: HTTP %d after %v (--store-timeout %v)", status, took.Round(time.Millisecond), timeout)
	if err != nil || status != http.StatusServiceUnavailable || retryAfter == "" || !strings.Contains(raw, `"code":-32603`) || !strings.Contains(raw, `"retryable":true`) {
		t.Fatalf("accept leg with the database frozen: HTTP %d, Retry-After %q, %v: %s", status, retryAfter, err, raw)
	}
	if took > timeout+3*time.Second {
		t.Fatalf("the 503 took %v, far past --store-timeout %v", took, timeout)
	}
	start = time.Now()
	resp, err := client.Get(e.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("/readyz with the database frozen: %d %q after %v", resp.StatusCode, body, time.Since(start).Round(time.Millisecond))
	if resp.StatusCode != 503 || string(body) != "not ready: store unreachable\n" {
		t.Fatalf("/readyz with the database frozen: %d %q", resp.StatusCode, body)
	}

	thaw()
	waitFor(t, "/readyz once the database answers again", func() bool {
		resp, err := client.Get(e.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	status, _, raw, err = rawCall(e.url, "alice", reports.ToolExport, leg)
	if err != nil || status != 200 || !strings.Contains(raw, `"resultType":"complete"`) {
		t.Fatalf("accept leg after the stall: HTTP %d %v: %s", status, err, raw)
	}
	if drafts, err := st.ListRecords(t.Context(), reports.KindDraft, "alice"); err != nil || len(drafts) != 1 {
		t.Fatalf("drafts after the stall: %d, %v; want exactly 1", len(drafts), err)
	}
}

// TestPostgresFrozenProxy: PostgreSQL behind a proxy that stops
// forwarding (the shared test database is never stopped).
func TestPostgresFrozenProxy(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newFreezeProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	checkFrozenStore(t, u.String(), p.freeze, p.thaw)
}

// TestPostgresSIGSTOP freezes a throwaway cluster of the test's own
// (initdb in a temporary directory) with SIGSTOP: the postmaster and
// every backend, continued at the end whatever happens.
func TestPostgresSIGSTOP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster; skipped in -short")
	}
	c := newPGClusterOwn(t)
	var stopped []int
	signalAll := func(sig syscall.Signal) {
		for _, pid := range stopped {
			syscall.Kill(pid, sig)
		}
	}
	freeze := func() {
		pids, err := clusterPIDs(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		stopped = pids
		signalAll(syscall.SIGSTOP)
	}
	thaw := func() { signalAll(syscall.SIGCONT) }
	t.Cleanup(thaw) // before the cluster's own cleanup stops it
	checkFrozenStore(t, c.dsn(), freeze, thaw)
}

// clusterPIDs returns the postmaster of the cluster in dataDir and its
// children (the backends and background workers).
func clusterPIDs(dataDir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, err
	}
	pids := []int{pm}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pm) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
