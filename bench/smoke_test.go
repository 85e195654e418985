package bench_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/bench/internal/impl/ceiling"
	"github.com/mcp-elicit/elicit/bench/internal/impl/elicitsrv"
	"github.com/mcp-elicit/elicit/bench/internal/impl/gosdksrv"
	"github.com/mcp-elicit/elicit/bench/internal/impl/storeceiling"
	"github.com/mcp-elicit/elicit/bench/internal/load"
	"github.com/mcp-elicit/elicit/bench/internal/micro"
	"github.com/mcp-elicit/elicit/bench/internal/wire"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store/sqlite"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// TestServersAnswerEveryScenario sends one unit of every scenario to each
// benchmark server, with the load generator's own response checks. It is
// a functional test (a few requests), not a timed one.
func TestServersAnswerEveryScenario(t *testing.T) {
	servers := map[string]http.Handler{
		"ceiling": ceiling.Handler(),
		"gosdk":   gosdksrv.Handler(),
		"elicit":  elicitsrv.Handler(),
	}
	for name, h := range servers {
		mux := http.NewServeMux()
		mux.Handle("/mcp", h)
		srv := httptest.NewServer(mux)
		for _, sc := range wire.Scenarios {
			if err := load.Once(t.Context(), srv.URL+"/mcp", sc, ""); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		srv.Close()
	}
}

// TestPendingFirstLegs checks the unit bound of the load generator on the
// pending-flows path: exactly MaxUnits first legs, no retries.
func TestPendingFirstLegs(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", elicitsrv.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := load.Run(t.Context(), load.Config{URL: srv.URL + "/mcp", Scenario: wire.ScenarioMRTR, Connections: 4,
		Duration: 10 * time.Second, MaxUnits: 50, FirstLegOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Flows != 0 || res.Errors != 0 {
		t.Fatalf("requests %d flows %d errors %d (%s), want 50 0 0", res.Requests, res.Flows, res.Errors, res.FirstErr)
	}
}

func TestStateSizes(t *testing.T) {
	billing, form, err := micro.StateSizes()
	if err != nil {
		t.Fatal(err)
	}
	if billing <= 0 || form <= 0 {
		t.Fatalf("billing %d form %d", billing, form)
	}
	t.Logf("sealed requestState: billing flow %d bytes, form flow %d bytes", billing, form)
}

func TestHistogramQuantiles(t *testing.T) {
	var h load.Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, 1000 * time.Microsecond}} {
		got := h.Quantile(c.q)
		if d := float64(got-c.want) / float64(c.want); d > 0.04 || d < -0.04 {
			t.Errorf("q%.2f = %v, want %v ±4%%", c.q, got, c.want)
		}
	}
}

// TestFlowScenarios sends one unit of each real flow, as the load
// generator sends it to elicitd, to the same apps (examples/reports and
// examples/billing over connect, mcpserver and streamhttp with demo auth)
// on a SQLite store, and one insert to the bare store; and checks what
// each left in its store.
func TestFlowScenarios(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	flows, err := connect.New(connect.Options{Store: st, MasterKey: make([]byte, 32), BaseURL: "http://" + srv.Listener.Addr().String(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	s := mcpserver.New(mcp.Implementation{Name: "elicitd", Version: "bench"}, &mcpserver.Options{Logger: logger})
	billing.New(flows).Register(s)
	reports.New(flows, st, logger).Register(s)
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{}, Logger: logger}))
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()
	for _, sc := range wire.FlowScenarios {
		if err := load.Once(t.Context(), srv.URL+"/mcp", sc, "bench-"+sc); err != nil {
			t.Errorf("%s: %v", sc, err)
		}
	}
	// Worker 0 of each run is user <User>-0; connect's requests are
	// users of their own, <User>-0-<n>.
	if drafts, err := st.ListRecords(t.Context(), reports.KindDraft, "bench-export-0"); err != nil || len(drafts) != 1 {
		t.Errorf("export left %d drafts (%v), want 1", len(drafts), err)
	}
	if _, err := st.PendingFlow(t.Context(), "bench-connect-0-1", billing.Purpose, time.Now()); err != nil {
		t.Errorf("connect left no pending flow: %v", err)
	}

	h, closeStore, err := storeceiling.SQLite(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	mux = http.NewServeMux()
	mux.Handle("/mcp", h)
	bare := httptest.NewServer(mux)
	defer bare.Close()
	res, err := load.Run(t.Context(), load.Config{URL: bare.URL + "/mcp", Scenario: wire.ScenarioInsert, Connections: 4, Duration: 10 * time.Second, MaxUnits: 20})
	if err != nil || res.Requests != 20 || res.Errors != 0 {
		t.Fatalf("bare store: %d inserts, %d errors (%s), %v", res.Requests, res.Errors, res.FirstErr, err)
	}
}
