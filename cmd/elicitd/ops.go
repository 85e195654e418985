package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// auditRecord is one audit line. It is built only from mcpserver.Round,
// connect.IdentityMismatch and connect.CookieConflict, which carry no
// arguments, answers, form content, secrets, cookie values or URL queries,
// and it has no field that could hold them: what is not here cannot leak.
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
	taskID      string // the round's task (tasks extension), if any
}

// auditor writes audit records to their own JSON sink, apart from the
// operational log. A record that cannot be written (disk full, closed
// pipe) is counted in elicitd_audit_write_errors_total, makes /readyz
// fail until a write works again, and is reported on the operational log
// at most once per auditErrorLogEvery, with the number of records lost
// since the last report.
type auditor struct {
	h slog.Handler // nil = off

	// Set by newObserver; all optional.
	errs   prometheus.Counter
	logger *slog.Logger
	now    func() time.Time

	failing atomic.Bool // the last write failed
	full    atomic.Bool // ... with ENOSPC
	mu      sync.Mutex
	lastLog time.Time // when a failure was last logged
	lost    int       // failed records not yet reported
}

// auditErrorLogEvery bounds how often audit write failures are logged.
const auditErrorLogEvery = time.Minute

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
	return &auditor{h: slog.NewJSONHandler(w, nil)}, closer, nil
}

// probe, while writes fail, tries to write an audit_log_writable record
// and reports whether it was written. A probe that fails is not a lost
// record: it is neither counted nor logged.
func (a *auditor) probe(ctx context.Context) bool {
	if err := a.emit(ctx, &auditRecord{event: "audit_log_writable", round: -1, outcome: "resumed"}); err != nil {
		a.full.Store(errors.Is(err, syscall.ENOSPC))
		return false
	}
	a.succeeded()
	return true
}

// failed accounts for one record that could not be written.
func (a *auditor) failed(err error) {
	a.failing.Store(true)
	a.full.Store(errors.Is(err, syscall.ENOSPC))
	if a.errs != nil {
		a.errs.Inc()
	}
	if a.logger == nil {
		return
	}
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	a.mu.Lock()
	a.lost++
	t := now()
	if !a.lastLog.IsZero() && t.Sub(a.lastLog) < auditErrorLogEvery {
		a.mu.Unlock()
		return
	}
	lost := a.lost
	a.lost, a.lastLog = 0, t
	a.mu.Unlock()
	a.logger.Error("audit log write failed; records are being lost", "err", err, "lost_records", lost)
}

// succeeded clears the failing state after a write that worked.
func (a *auditor) succeeded() {
	if !a.failing.Swap(false) || a.logger == nil {
		return
	}
	a.mu.Lock()
	lost := a.lost
	a.lost, a.lastLog = 0, time.Time{}
	a.mu.Unlock()
	a.logger.Warn("audit log writable again", "lost_records_not_yet_reported", lost)
}

func (a *auditor) write(ctx context.Context, r *auditRecord) {
	if a.h == nil {
		return
	}
	if err := a.emit(ctx, r); err != nil {
		a.failed(err)
	} else {
		a.succeeded()
	}
}

// emit writes r to the sink.
func (a *auditor) emit(ctx context.Context, r *auditRecord) error {
	attrs := []slog.Attr{slog.String("outcome", string(r.outcome))}
	add := func(key, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(key, v))
		}
	}
	add("operation_id", r.operationID)
	add("task_id", r.taskID)
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
	// The handler, not a slog.Logger, which would drop the write error.
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, r.event, 0)
	rec.AddAttrs(attrs...)
	return a.h.Handle(ctx, rec)
}

// metrics is elicitd's Prometheus registry (its own, not the global one,
// so nothing else in the process adds to it).
type metrics struct {
	reg         *prometheus.Registry
	auditErrors prometheus.Counter
	swept       *prometheus.CounterVec
	sweepErrors prometheus.Counter
	outcomes    *prometheus.CounterVec
	faults      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
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
	m.auditErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "elicitd_audit_write_errors_total",
		Help: "Audit records that could not be written to --audit-log (each one is lost).",
	})
	m.swept = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "elicitd_swept_rows_total",
		Help: "Rows the sweeper removed from the store (--sweep-interval, --retain-*), by kind: flows, sessions, operations, or a record kind.",
	}, []string{"kind"})
	for _, k := range sweepKinds {
		m.swept.WithLabelValues(k)
	}
	m.sweepErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "elicitd_sweep_errors_total",
		Help: "Sweeps that stopped on a store error (the rest is removed by the next one).",
	})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "elicitd_build_info", Help: "Always 1; labels say which build runs."},
		[]string{"version", "goversion", "revision"})
	build.WithLabelValues(version, runtime.Version(), vcsRevision()).Set(1)
	m.reg.MustRegister(m.auditErrors, m.swept, m.sweepErrors, m.outcomes, m.faults, m.latency, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every (method, outcome) pair is shown from the start, at 0.
	for _, method := range []string{mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead} {
		for _, o := range mcpserver.Outcomes() {
			if o != mcpserver.OutcomeFault && o != mcpserver.OutcomeIdentityMismatch {
				m.outcomes.WithLabelValues(method, string(o))
			}
		}
	}
	m.outcomes.WithLabelValues("ui", string(mcpserver.OutcomeIdentityMismatch))
	m.outcomes.WithLabelValues("ui", string(outcomeCookieConflict))
	// The fault family is shown from the start too (a family without a
	// series has no HELP/TYPE lines): 0 per method for the two codes
	// every server can send, invalid params and internal error.
	for _, method := range []string{mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead} {
		for _, code := range []int{jsonrpc.CodeInvalidParams, jsonrpc.CodeInternalError} {
			m.faults.WithLabelValues(method, strconv.Itoa(code))
		}
	}
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
			if v := r.Header.Get(mcp.HeaderMethod); knownMethods[v] {
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
// --audit-log) and the metrics; the closer closes an audit file. Audit
// write failures go to logger.
func newObserver(cfg *config, logger *slog.Logger) (*observer, func() error, error) {
	var (
		sink   = &auditor{}
		closer = func() error { return nil }
		err    error
	)
	if cfg.auditOut != nil {
		sink.h = slog.NewJSONHandler(cfg.auditOut, nil)
	} else if sink, closer, err = newAuditor(cfg.auditLog, os.Stdout); err != nil {
		return nil, nil, fmt.Errorf("--audit-log: %w", err)
	}
	m := newMetrics()
	sink.errs, sink.logger, sink.now = m.auditErrors, logger, cfg.now
	return &observer{audit: sink, metrics: m}, closer, nil
}

func (o *observer) round(ctx context.Context, r *mcpserver.Round) {
	o.record(ctx, &auditRecord{event: "mcp_round", operationID: r.OperationID, principal: r.Principal, method: r.Method,
		name: r.Name, round: r.Round, outcome: r.Outcome, code: r.Code, latency: r.Latency, restart: r.Restart, taskID: r.TaskID})
}

func (o *observer) identityMismatch(ctx context.Context, m *connect.IdentityMismatch) {
	o.record(ctx, &auditRecord{event: "page_refused", principal: m.SessionPrincipal, method: "ui", name: m.Purpose,
		round: -1, outcome: mcpserver.OutcomeIdentityMismatch, flowID: m.FlowID, flowOwner: m.FlowPrincipal})
}

// outcomeCookieConflict is the outcome of a page request refused because
// it carried a sign-in cookie twice (connect.Options.OnCookieConflict):
// another origin of the same site may have planted one.
const outcomeCookieConflict mcpserver.Outcome = "cookie_conflict"

func (o *observer) cookieConflict(ctx context.Context, c *connect.CookieConflict) {
	o.record(ctx, &auditRecord{event: "page_refused", method: "ui", name: c.Path, round: -1, outcome: outcomeCookieConflict})
}

func (o *observer) record(ctx context.Context, r *auditRecord) {
	o.audit.write(ctx, r)
	o.metrics.count(r)
}

// readiness answers /readyz: 200 when the server is not draining after
// SIGTERM, the store is healthy within timeout (store.Health: it reads,
// and after a write failed for lack of space it also writes, so a full
// disk keeps the server not ready until writes work again), the
// requestState key ring loaded and the last audit record was written
// (while it was not, each call tries to write one again); else 503 with
// the failing check (details go to the log, not the response).
func readiness(draining *atomic.Bool, st store.Store, keys *stateKeys, audit *auditor, timeout time.Duration, logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		notReady := func(why string) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready: "+why+"\n")
		}
		if draining.Load() {
			notReady("shutting down")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := st.Health(ctx); err != nil {
			logger.Warn("readyz: store not healthy", "err", err)
			if errors.Is(err, store.ErrStorageFull) {
				notReady("store storage full")
			} else {
				notReady("store unreachable")
			}
			return
		}
		if msg := *keys.lastErr.Load(); msg != "" {
			notReady("requestState keys did not load")
			return
		}
		if audit.failing.Load() && !audit.probe(ctx) {
			if audit.full.Load() {
				notReady("audit log storage full")
			} else {
				notReady("the last audit record could not be written")
			}
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

// routeMux is a ServeMux that remembers its patterns, so that a test can
// walk every route.
type routeMux struct {
	*http.ServeMux
	patterns []string
}

func newRouteMux() *routeMux { return &routeMux{ServeMux: http.NewServeMux()} }

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, h)
	m.patterns = append(m.patterns, pattern)
}

// opsRoutes serves /metrics, /healthz and /readyz.
func (a *app) opsRoutes() *routeMux {
	mux := newRouteMux()
	mux.Handle("GET /metrics", a.metricsHandler)
	mux.Handle("GET /healthz", http.HandlerFunc(healthz))
	mux.Handle("GET /readyz", a.readyz)
	return mux
}

// opsMux is the --metrics-addr listener's handler: opsRoutes behind the
// same Host check as --addr (guardHosts), with a.metricsHosts.
func (a *app) opsMux() http.Handler { return guardHosts(a.metricsHosts, a.opsRoutes()) }
