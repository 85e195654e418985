package bench_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/bench/internal/impl/ceiling"
	"github.com/mcp-elicit/elicit/bench/internal/impl/elicitsrv"
	"github.com/mcp-elicit/elicit/bench/internal/impl/gosdksrv"
	"github.com/mcp-elicit/elicit/bench/internal/load"
	"github.com/mcp-elicit/elicit/bench/internal/micro"
	"github.com/mcp-elicit/elicit/bench/internal/wire"
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
			if err := load.Once(t.Context(), srv.URL+"/mcp", sc); err != nil {
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
