package main

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httputil"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-elicit/elicit/store/postgres/pgtest"

	"github.com/mcp-elicit/elicit/examples/billing"
)

// roundRobin is a reverse proxy that sends each request to the next
// backend in turn; force sets which one serves the next request.
type roundRobin struct {
	backends []*httputil.ReverseProxy
	names    []string
	next     atomic.Int64
	mu       sync.Mutex
	served   []string // backend name per request, in order
	apps     []*app   // the instances, when newPGCluster made them
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
	// Both instances' public URL is the proxy's address.
	re, proxy := newPGCluster(t, pgtest.SchemaDSN(t), "", "")
	e, public := re.env, re.url

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
