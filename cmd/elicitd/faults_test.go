package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// callClient gives up after a minute: a hang guard, so a stalled server
// fails a test instead of hanging it.
var callClient = &http.Client{Timeout: time.Minute}

// rawCall POSTs one tools/call as user from any goroutine (no t.Fatal):
// the status, the Retry-After header and the body.
func rawCall(url, user, tool, body string) (int, string, string, error) {
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Authorization": "Bearer " + user, "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	resp, err := callClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b), err
}

func exportBody(id int, extra string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"export_report","arguments":{"period":"2026-Q2","dataset":"sales"},%s%s}}`,
		id, extra, metaURL)
}

// firstLegs runs n export_report first legs as user and returns the
// accept legs that answer them.
func (e *reportsEnv) firstLegs(t *testing.T, user string, n int) []string {
	t.Helper()
	var bodies []string
	for i := range n {
		r := e.export(i, user, "2026-Q2", "sales", "", metaURL)
		r.input(t, reports.KeyOptions)
		bodies = append(bodies, exportBody(1000+i, retryWith(reports.KeyOptions, accepted, r.state())))
	}
	return bodies
}

// burst sends every body at once and returns the statuses, and how many
// 503s lacked Retry-After or a retryable -32603.
func (e *reportsEnv) burst(t *testing.T, user string, bodies []string) (statuses []int, badRetry int) {
	t.Helper()
	statuses = make([]int, len(bodies))
	var wg sync.WaitGroup
	var bad atomic.Int64
	start := make(chan struct{})
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, retryAfter, raw, err := rawCall(e.url, user, reports.ToolExport, body)
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
			statuses[i] = status
			if status == http.StatusServiceUnavailable && (retryAfter == "" || !strings.Contains(raw, `"code":-32603`) || !strings.Contains(raw, `"retryable":true`)) {
				bad.Add(1)
			}
			if status == http.StatusInternalServerError {
				t.Errorf("writer %d: HTTP 500: %s", i, raw)
			}
		}()
	}
	close(start)
	wg.Wait()
	return statuses, int(bad.Load())
}

func countStatuses(statuses []int) map[int]int {
	m := map[int]int{}
	for _, s := range statuses {
		m[s]++
	}
	return m
}

// TestSQLiteWritersNeverInternalError: 128 concurrent SQLite writers (the
// accept legs of export_report) never get a non-retryable 500. With the
// write lock free they all commit; with it held elsewhere past
// --store-timeout they all get 503, Retry-After and a retryable -32603,
// having written nothing; retried once the lock is free, each commits
// exactly once. The pool stays at --store-max-conns (default 8).
func TestSQLiteWritersNeverInternalError(t *testing.T) {
	if testing.Short() {
		t.Skip("512 MCP requests; skipped in -short")
	}
	const writers = 128
	e := newReportsEnv(t) // --store-timeout 5s

	// Free lock: contention only.
	counts := e.burstUntilDone(t, "alice", e.firstLegs(t, "alice", writers))
	t.Logf("%d writers, lock free: first round %v", writers, counts)

	// The write lock held by another process's transaction.
	legs := e.firstLegs(t, "bob", writers)
	lock, err := sql.Open("sqlite", "file:"+e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	conn, err := lock.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	statuses, bad := e.burst(t, "bob", legs)
	counts = countStatuses(statuses)
	t.Logf("%d writers, lock held past --store-timeout: %v", writers, counts)
	if counts[http.StatusServiceUnavailable] != writers || bad != 0 {
		t.Fatalf("lock held: statuses %v, %d 503s without Retry-After or a retryable -32603", counts, bad)
	}
	if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if drafts, err := e.st.ListRecords(t.Context(), reports.KindDraft, "bob"); err != nil || len(drafts) != 0 {
		t.Fatalf("drafts written while the lock was held: %d, %v", len(drafts), err)
	}
	counts = e.burstUntilDone(t, "bob", legs)
	t.Logf("%d writers, retried once the lock is free: first round %v", writers, counts)
}

// burstUntilDone sends legs at once, then again those that got 503, until
// all commit (at most 20 rounds); no round may see a 500 or a 503 that is
// not retryable. It checks that user then has exactly one draft per leg
// and returns the first round's statuses.
func (e *reportsEnv) burstUntilDone(t *testing.T, user string, legs []string) map[int]int {
	t.Helper()
	var first map[int]int
	todo := legs
	for round := 0; len(todo) > 0; round++ {
		if round == 20 {
			t.Fatalf("%d of %d writers still not committed after 20 rounds", len(todo), len(legs))
		}
		statuses, bad := e.burst(t, user, todo)
		counts := countStatuses(statuses)
		if first == nil {
			first = counts
		}
		if counts[http.StatusOK]+counts[http.StatusServiceUnavailable] != len(todo) || bad != 0 {
			t.Fatalf("round %d: statuses %v, %d 503s without Retry-After or a retryable -32603", round, counts, bad)
		}
		var again []string
		for i, s := range statuses {
			if s != http.StatusOK {
				again = append(again, todo[i])
			}
		}
		todo = again
	}
	if drafts, err := e.st.ListRecords(t.Context(), reports.KindDraft, user); err != nil || len(drafts) != len(legs) {
		t.Fatalf("%s has %d drafts (%v), want %d: one per operation", user, len(drafts), err, len(legs))
	}
	return first
}

// faultStore injects a full disk: while full is set, writes fail with
// store.ErrStorageFull and Health says so, as a driver does until a probe
// write works.
type faultStore struct {
	store.Store
	full atomic.Bool
}

func (f *faultStore) fault() error {
	if f.full.Load() {
		return store.Unavailable(store.ErrStorageFull, errors.New("injected: database or disk is full"))
	}
	return nil
}

func (f *faultStore) CompleteOperation(ctx context.Context, op *store.Operation, effect func(context.Context, store.Effects) error) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.CompleteOperation(ctx, op, effect)
}

func (f *faultStore) CompleteFlow(ctx context.Context, id, principal string, secret []byte, now time.Time) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.CompleteFlow(ctx, id, principal, secret, now)
}

func (f *faultStore) Health(ctx context.Context) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Health(ctx)
}

// TestStorageFull: with the disk full, a write answers the documented
// error — HTTP 503, Retry-After, -32603 "…storage is full…" with data
// {"retryable":true,"retryAfterMs":1000,"reason":"storage_full"} — and
// the pages say so; /readyz is not ready until writes work again; then the
// same retry succeeds.
func TestStorageFull(t *testing.T) {
	fs := &faultStore{}
	e := newReportsEnv(t, func(c *config) { c.wrapStore = func(st store.Store) store.Store { fs.Store = st; return fs } })
	b := e.browser()
	readyz := func() (int, string) { code, _, body := b.get(e.url + "/readyz"); return code, body }

	r := e.export(1, "alice", "2026-Q2", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	resume := retryWith(reports.KeyOptions, accepted, r.state())
	_, _, link := e.connect(2, "alice", "").elicitation(t)
	status, keyPage := b.login(e.url, link, "alice")
	if status != 200 {
		t.Fatalf("key page: %d", status)
	}

	fs.full.Store(true)
	r = e.export(3, "alice", "2026-Q2", "sales", resume, metaURL)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || r.Error == nil || r.Error.Code != -32603 ||
		r.Error.Message != "Temporarily unavailable: the server's storage is full; retry later" ||
		string(r.Error.Data) != `{"retryable":true,"retryAfterMs":1000,"reason":"`+mcpserver.ReasonStorageFull+`"}` {
		t.Fatalf("accept leg on a full disk: HTTP %d Retry-After %q: %s", r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
	if code, body := readyz(); code != 503 || body != "not ready: store storage full\n" {
		t.Fatalf("/readyz on a full disk: %d %q", code, body)
	}
	if status, page := b.fillKey(e.url, keyPage, link, testKey); status != 503 || !strings.Contains(page, "storage is full") {
		t.Fatalf("key page on a full disk: %d\n%s", status, page)
	}

	fs.full.Store(false)
	if code, body := readyz(); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz once writes work: %d %q", code, body)
	}
	e.export(4, "alice", "2026-Q2", "sales", resume, metaURL).wantComplete(t, false, "")
	if drafts, err := e.st.ListRecords(t.Context(), reports.KindDraft, "alice"); err != nil || len(drafts) != 1 {
		t.Fatalf("drafts: %d, %v; want 1", len(drafts), err)
	}
}
