package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// auditRecord is one audit line. It is built only from mcpserver.Round
// and connect.IdentityMismatch, which carry no arguments, answers, form
// content, secrets or URL queries, and it has no field that could hold
// them: what is not here cannot leak.
type auditRecord struct {
	event       string // "mcp_round" or "page_refused"
	operationID string
	principal   string
	method      string // MCP method, or the page's HTTP method
	name        string // tool or prompt name, resource URI without query, or the flow's purpose
	round       int    // -1 = unknown
	outcome     mcpserver.Outcome
	code        int
	latency     time.Duration
	restart     mcpserver.RestartReason
	flowID      string
	flowOwner   string
}

// auditor writes audit records to their own JSON sink, apart from the
// operational log.
type auditor struct{ log *slog.Logger }

// newAuditor returns the sink for dest: "-" = stdout, "off" or "" =
// nothing, else a file opened for appending (mode 0600). The returned
// closer closes the file.
func newAuditor(dest string, stdout io.Writer) (*auditor, func() error, error) {
	var w io.Writer
	closer := func() error { return nil }
	switch dest {
	case "", "off":
		return &auditor{}, closer, nil
	case "-":
		w = stdout
	default:
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, err
		}
		w, closer = f, f.Close
	}
	return &auditor{log: slog.New(slog.NewJSONHandler(w, nil))}, closer, nil
}

func (a *auditor) write(ctx context.Context, r *auditRecord) {
	if a.log == nil {
		return
	}
	attrs := []slog.Attr{slog.String("outcome", string(r.outcome))}
	add := func(key, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(key, v))
		}
	}
	add("operation_id", r.operationID)
	add("principal", r.principal)
	add("method", r.method)
	add("name", r.name)
	if r.round >= 0 {
		attrs = append(attrs, slog.Int("round", r.round))
	}
	if r.code != 0 {
		attrs = append(attrs, slog.Int("code", r.code))
	}
	if r.latency > 0 {
		attrs = append(attrs, slog.Float64("latency_ms", float64(r.latency.Microseconds())/1000))
	}
	add("restart", string(r.restart))
	add("flow_id", r.flowID)
	add("flow_principal", r.flowOwner)
	a.log.LogAttrs(ctx, slog.LevelInfo, r.event, attrs...)
}

// metrics is elicitd's Prometheus registry (its own, not the global one,
// so nothing else in the process adds to it).
type metrics struct {
	reg      *prometheus.Registry
	outcomes *prometheus.CounterVec
	faults   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "elicitd_outcomes_total",
		Help: "MCP rounds (tools/call, prompts/get, resources/read) and refused pages by outcome category; faults are counted apart, in elicitd_faults_total.",
	}, []string{"method", "outcome"})
	m.faults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "elicitd_faults_total",
		Help: "MCP rounds that ended in a JSON-RPC error other than capability_missing, expired or invalid_state, by error code.",
	}, []string{"method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "elicitd_request_duration_seconds",
		Help:    "HTTP request latency by MCP method (Mcp-Method header; other without a known one; ui for the pages).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5 ms .. 131 s
	}, []string{"method"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "elicitd_build_info", Help: "Always 1; labels say which build runs."},
		[]string{"version", "goversion", "revision"})
	build.WithLabelValues(version, runtime.Version(), vcsRevision()).Set(1)
	m.reg.MustRegister(m.outcomes, m.faults, m.latency, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every (method, outcome) pair is shown from the start, at 0.
	for _, method := range []string{mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead} {
		for _, o := range mcpserver.Outcomes {
			if o != mcpserver.OutcomeFault && o != mcpserver.OutcomeIdentityMismatch {
				m.outcomes.WithLabelValues(method, string(o))
			}
		}
	}
	m.outcomes.WithLabelValues("ui", string(mcpserver.OutcomeIdentityMismatch))
	return m
}

func vcsRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func (m *metrics) count(r *auditRecord) {
	if r.outcome == mcpserver.OutcomeFault {
		m.faults.WithLabelValues(r.method, strconv.Itoa(r.code)).Inc()
		return
	}
	m.outcomes.WithLabelValues(r.method, string(r.outcome)).Inc()
}

// knownMethods bounds the method label: anything else is "other".
var knownMethods = map[string]bool{
	mcp.MethodDiscover: true, mcp.MethodToolsList: true, mcp.MethodToolsCall: true, mcp.MethodPromptsList: true,
	mcp.MethodPromptsGet: true, mcp.MethodResourcesList: true, mcp.MethodResourcesRead: true,
	mcp.MethodResourceTemplatesList: true, mcp.MethodCompletionComplete: true, "ping": true,
}

// instrument times requests to /mcp (by Mcp-Method) and to the pages,
// /ui/ and /connect/ ("ui").
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		label := ""
		switch {
		case r.URL.Path == "/mcp":
			label = "other"
			if v := r.Header.Get(streamhttp.HeaderMethod); knownMethods[v] {
				label = v
			}
		case strings.HasPrefix(r.URL.Path, "/ui/") || strings.HasPrefix(r.URL.Path, "/connect/"):
			label = "ui"
		}
		if label == "" {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		next.ServeHTTP(w, r)
		m.latency.WithLabelValues(label).Observe(time.Since(start).Seconds())
	})
}

// observer is the one place rounds and refused pages become audit records
// and metrics.
type observer struct {
	audit   *auditor
	metrics *metrics
}

// newObserver builds the audit sink (cfg.auditOut if set, else
// --audit-log) and the metrics; the closer closes an audit file.
func newObserver(cfg *config) (*observer, func() error, error) {
	var (
		sink   = &auditor{}
		closer = func() error { return nil }
		err    error
	)
	if cfg.auditOut != nil {
		sink.log = slog.New(slog.NewJSONHandler(cfg.auditOut, nil))
	} else if sink, closer, err = newAuditor(cfg.auditLog, os.Stdout); err != nil {
		return nil, nil, fmt.Errorf("--audit-log: %w", err)
	}
	return &observer{audit: sink, metrics: newMetrics()}, closer, nil
}

func (o *observer) round(ctx context.Context, r *mcpserver.Round) {
	o.record(ctx, &auditRecord{event: "mcp_round", operationID: r.OperationID, principal: r.Principal, method: r.Method,
		name: r.Name, round: r.Round, outcome: r.Outcome, code: r.Code, latency: r.Latency, restart: r.Restart})
}

func (o *observer) identityMismatch(ctx context.Context, m *connect.IdentityMismatch) {
	o.record(ctx, &auditRecord{event: "page_refused", principal: m.SessionPrincipal, method: "ui", name: m.Purpose,
		round: -1, outcome: mcpserver.OutcomeIdentityMismatch, flowID: m.FlowID, flowOwner: m.FlowPrincipal})
}

func (o *observer) record(ctx context.Context, r *auditRecord) {
	o.audit.write(ctx, r)
	o.metrics.count(r)
}

// readiness answers /readyz: 200 when the store answers within timeout
// and the requestState key ring loaded; else 503 with the failing check
// (details go to the log, not the response).
func readiness(keys *stateKeys, timeout time.Duration, logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if _, err := keys.ring.StateKeys(ctx); err != nil {
			logger.Warn("readyz: store unreachable", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready: store unreachable\n")
			return
		}
		if msg := *keys.lastErr.Load(); msg != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready: requestState keys did not load\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	}
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "ok\n")
}

// opsMux serves /metrics, /healthz and /readyz (the --metrics-addr listener).
func (a *app) opsMux() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metricsHandler)
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", a.readyz)
	return mux
}
