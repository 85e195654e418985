package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/examples/billing"
)

// pgSchemaDSN returns ELICIT_TEST_POSTGRES_DSN pointed (search_path) at a
// new empty schema that is dropped when the test ends, or skips the test.
func pgSchemaDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("ELICIT_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable) to run the PostgreSQL tests")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "elicitd_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("connect: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil || !isPostgresURL(dsn) {
		t.Fatalf("ELICIT_TEST_POSTGRES_DSN must be a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// roundRobin is a reverse proxy that sends each request to the next
// backend in turn; force sets which one serves the next request.
type roundRobin struct {
	backends []*httputil.ReverseProxy
	names    []string
	next     atomic.Int64
	mu       sync.Mutex
	served   []string // backend name per request, in order
}

func (p *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(p.next.Add(1)-1) % len(p.backends)
	p.mu.Lock()
	p.served = append(p.served, p.names[i]+" "+r.Method+" "+r.URL.Path)
	p.mu.Unlock()
	p.backends[i].ServeHTTP(w, r)
}

func (p *roundRobin) force(i int) { p.next.Store(int64(i)) }

// TestMultiInstancePostgres runs two elicitd apps on different loopback
// ports that share one PostgreSQL database and one ELICIT_MASTER_KEY (each
// has its own data directory, so neither key file is used), behind a
// round-robin reverse proxy: connect_billing starts through A, the page is
// completed through B, and the retry through A succeeds.
func TestMultiInstancePostgres(t *testing.T) {
	dsn := pgSchemaDSN(t)
	key := make([]byte, 32)
	rand.Read(key)
	keyB64 := base64.StdEncoding.EncodeToString(key)

	// The proxy's address is the public URL of both instances.
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + pln.Addr().String()
	logs := &syncBuffer{}
	proxy := &roundRobin{names: []string{"A", "B"}}
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config{addr: ln.Addr().String(), dataDir: t.TempDir(), storeURL: dsn, masterKeyB64: keyB64, publicURL: public}
		a, err := newApp(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		if err != nil {
			t.Fatal(err)
		}
		ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: a}}
		ts.Start()
		t.Cleanup(func() { ts.Close(); a.Close() })
		u, _ := url.Parse(ts.URL)
		proxy.backends = append(proxy.backends, httputil.NewSingleHostReverseProxy(u))
	}
	ps := &httptest.Server{Listener: pln, Config: &http.Server{Handler: proxy}}
	ps.Start()
	t.Cleanup(ps.Close)

	e := &env{t: t, url: public, logs: logs, rec: &recorder{}}

	proxy.force(0) // A
	r := e.connect(1, "alice", "")
	if r.Status != 200 || r.resultType() != "input_required" || r.state() == "" {
		t.Fatalf("start through A: %s", r.Raw)
	}
	_, _, link := r.elicitation(t)
	if !strings.HasPrefix(link, public+"/ui/set_api_key?flow=") {
		t.Fatalf("elicitation URL %q is not on the proxy", link)
	}
	state := r.state()

	// Login alternates between the instances (round robin): the session
	// one creates, the other must find.
	alice := e.browser()
	status, page := alice.login(public, link, "alice")
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("key page: %d\n%s", status, page)
	}
	proxy.force(1) // B
	status, page = alice.fillKey(public, page, link, testKey)
	if status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("key POST through B: %d\n%s", status, page)
	}

	proxy.force(0) // A
	r = e.connect(2, "alice", answer("accept", state))
	if r.resultType() != "complete" || r.isError() || r.text() != billing.TextConnected {
		t.Fatalf("retry through A: %s", r.Raw)
	}

	proxy.mu.Lock()
	served := append([]string(nil), proxy.served...)
	proxy.mu.Unlock()
	want := []string{"A POST /mcp", "B POST /ui/set_api_key", "A POST /mcp"}
	var got []string
	for _, s := range served {
		if strings.HasSuffix(s, " /mcp") || strings.HasSuffix(s, "/ui/set_api_key") && strings.Contains(s, "POST") {
			got = append(got, s)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("routing = %q, want %q (all: %q)", got, want, served)
	}
	seen := map[byte]bool{}
	for _, s := range served {
		seen[s[0]] = true
	}
	if !seen['A'] || !seen['B'] {
		t.Fatalf("one instance served nothing: %q", served)
	}
	e.assertNoLeak(t)
}

func TestMasterKeyFromEnv(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	dir := t.TempDir()
	got, err := masterKey(&config{dataDir: dir, masterKeyB64: base64.StdEncoding.EncodeToString(key)})
	if err != nil || string(got) != string(key) {
		t.Fatalf("masterKey from env = %x, %v", got, err)
	}
	if _, err := os.Stat(dir + "/master.key"); err == nil {
		t.Fatal("a key file was created although ELICIT_MASTER_KEY is set")
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(key[:16])} {
		if _, err := masterKey(&config{dataDir: dir, masterKeyB64: bad}); err == nil || !strings.Contains(err.Error(), "ELICIT_MASTER_KEY") {
			t.Errorf("masterKey(%q) err = %v, want one naming ELICIT_MASTER_KEY", bad, err)
		}
	}
}

func TestStoreFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"--store", "postgres://u@h/db"}, &syncBuffer{})
	if err != nil || cfg.storeURL != "postgres://u@h/db" {
		t.Fatalf("parseFlags --store postgres: %+v, %v", cfg, err)
	}
	if _, err := parseFlags([]string{"--store", "mysql://u@h/db"}, &syncBuffer{}); err == nil {
		t.Fatal("--store mysql:// accepted")
	}
}
