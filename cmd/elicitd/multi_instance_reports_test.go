package main

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/store/postgres/pgtest"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/store/postgres"
)

// newPGCluster starts one elicitd per entry of stateKeys (that instance's
// ELICIT_STATE_KEYS; "" = derived from the master key), all sharing the
// PostgreSQL database dsn and one ELICIT_MASTER_KEY, behind a round-robin
// proxy whose address is every instance's public URL. It returns a
// reportsEnv talking to the proxy (st and db are nil: the store is
// PostgreSQL) and the proxy, whose backends are named A, B, C, ...
func newPGCluster(t *testing.T, dsn string, stateKeys ...string) (*reportsEnv, *roundRobin) {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	keyB64 := base64.StdEncoding.EncodeToString(key)
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + pln.Addr().String()
	logs := &syncBuffer{}
	proxy := &roundRobin{}
	for i, sk := range stateKeys {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config{addr: ln.Addr().String(), dataDir: t.TempDir(), storeURL: dsn, masterKeyB64: keyB64, stateKeys: sk, publicURL: public}
		a, err := newApp(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		if err != nil {
			t.Fatal(err)
		}
		ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: a}}
		ts.Start()
		t.Cleanup(func() { ts.Close(); a.Close() })
		u, _ := url.Parse(ts.URL)
		proxy.backends = append(proxy.backends, httputil.NewSingleHostReverseProxy(u))
		proxy.names = append(proxy.names, string(rune('A'+i)))
		proxy.apps = append(proxy.apps, a)
	}
	ps := &httptest.Server{Listener: pln, Config: &http.Server{Handler: proxy}}
	ps.Start()
	t.Cleanup(ps.Close)
	return &reportsEnv{env: &env{t: t, url: public, logs: logs, rec: &recorder{}}}, proxy
}

// pgDrafts lists user's drafts straight from the shared database.
func pgDrafts(t *testing.T, dsn, user string) []string {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := st.ListRecords(t.Context(), reports.KindDraft, user)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.ID+" "+r.Status)
	}
	return out
}

// TestMultiInstanceReportsPostgres: export_report starts on A, its form
// answer (the retry) goes through B and prepares the draft; the same
// completed retry replayed through A gets the recorded result, and there
// is still one draft.
func TestMultiInstanceReportsPostgres(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	e, proxy := newPGCluster(t, dsn, "", "")

	proxy.force(0) // A
	r1 := e.export(1, "alice", "2026-Q2", "sales", "", metaURL)
	r1.input(t, reports.KeyOptions)
	resume := retryWith(reports.KeyOptions, accepted, r1.state())

	proxy.force(1) // B
	first := e.export(2, "alice", "2026-Q2", "sales", resume, metaURL)
	first.wantComplete(t, false, "")
	sc := first.structured()
	id, _ := sc["draft_id"].(string)
	if id == "" || sc["status"] != "prepared" || sc["sent"] != false {
		t.Fatalf("retry through B: %s", first.Raw)
	}

	proxy.force(0) // A
	replay := e.export(3, "alice", "2026-Q2", "sales", resume, metaURL)
	if replay.resultType() != "complete" || !reflect.DeepEqual(replay.Result["content"], first.Result["content"]) ||
		!reflect.DeepEqual(replay.structured(), first.structured()) {
		t.Fatalf("replay through A differs from the recorded result:\n%s\n%s", replay.Raw, first.Raw)
	}
	if !strings.Contains(e.logs.String(), "replayed retry answered from the ledger") {
		t.Fatal("replay through A not answered from the ledger")
	}
	if got := pgDrafts(t, dsn, "alice"); len(got) != 1 || got[0] != id+" "+reports.StatusPrepared {
		t.Fatalf("drafts in the store = %q, want one prepared %s", got, id)
	}
	for i := range 2 { // list_drafts through each instance
		proxy.force(i)
		l := e.list(4+i, "alice")
		l.wantComplete(t, false, "")
		if strings.Count(l.text(), ": prepared,") != 1 || !strings.Contains(l.text(), id+": prepared") {
			t.Fatalf("list_drafts through %s: %q", proxy.names[i], l.text())
		}
	}
	proxy.mu.Lock()
	served := strings.Join(proxy.served, ",")
	proxy.mu.Unlock()
	if want := "A POST /mcp,B POST /mcp,A POST /mcp,A POST /mcp,B POST /mcp"; served != want {
		t.Fatalf("routing = %q, want %q", served, want)
	}
}
