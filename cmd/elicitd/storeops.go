package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// minRetainOperations is the shortest --retain-operations: a replayed
// retry can arrive as long as its requestState opens (its lifetime plus
// the clock skew reqstate allows), and must then find the recorded result.
const minRetainOperations = reqstate.DefaultTTL + time.Minute

func init() {
	addSettings(
		setting{name: "store-timeout", def: "5s", usage: "deadline of every store call (waiting for a connection or the write lock, the statements, the commit); past it the request gets 503, Retry-After and a retryable -32603",
			apply: durationSetter(func(c *config) *time.Duration { return &c.storeTimeout })},
		setting{name: "store-max-conns", def: "0", defDoc: "SQLite 8 (+1 writer), PostgreSQL max(16, 4 × CPUs)", usage: "most open store connections (SQLite: read connections; writes share one more); callers beyond it wait within --store-timeout",
			apply: intSetter(0, func(c *config) *int { return &c.storeMaxConns })},
		setting{name: "sweep-interval", def: "5m", usage: "how often expired and finished rows are removed from the store (each removal is logged and counted in elicitd_swept_rows_total)",
			apply: durationSetter(func(c *config) *time.Duration { return &c.sweepInterval })},
		setting{name: "retain-flows", def: "1h", usage: "how long a flow is kept after it expires, so its page can still say so",
			apply: minDurationSetter(0, "", func(c *config) *time.Duration { return &c.retainFlows })},
		setting{name: "retain-operations", def: "24h", usage: "how long a finished operation no record refers to (declined, cancelled, refused, superseded) is kept; at least 11m, the longest a replayed retry can arrive",
			apply: minDurationSetter(minRetainOperations, "a replayed retry must find its recorded result", func(c *config) *time.Duration { return &c.retainOperations })},
		setting{name: "retain-attempts", def: "1h", usage: "how long an OAuth sign-in attempt is kept after its last change; at least 10m, its lifetime",
			apply: minDurationSetter(connect.AttemptTTL, "an attempt lives that long", func(c *config) *time.Duration { return &c.retainAttempts })},
		setting{name: "retain-reports", def: "off", usage: "how long report drafts and sends are kept after their last change, or off (kept: they are the users' data)",
			apply: func(c *config, v string) error {
				if isOff(v) {
					c.retainReports = 0
					return nil
				}
				return durationSetter(func(c *config) *time.Duration { return &c.retainReports })(c, v)
			}},
		setting{name: "task-ttl", def: "1h", usage: "how long a task (tasks extension: export_and_send) stays readable after it starts, sent as ttlMs; then it reads as unknown and the next sweep deletes it",
			apply: minDurationSetter(time.Minute, "a client polls a task for at least that long", func(c *config) *time.Duration { return &c.taskTTL })},
		setting{name: "task-lease", def: "30s", usage: "how long the instance running a task vouches for it; it renews every third of it, which is also how soon a tasks/cancel served by another instance stops the run; past it, the instance a tasks/get reaches takes the task over, and a run whose instance only stalled stops at its next renewal",
			apply: minDurationSetter(time.Second, "renewals every third of it must reach the store", func(c *config) *time.Duration { return &c.taskLease })},
		setting{name: "max-tasks-per-user", def: "100", usage: "how many tasks one user may have working or waiting for input at once, on every instance sharing the store; a call that would start another gets a tool error saying so, and no task; off = no limit",
			apply: func(c *config, v string) error {
				if isOff(v) {
					c.maxTasksPerUser = -1
					return nil
				}
				return intSetter(1, func(c *config) *int { return &c.maxTasksPerUser })(c, v)
			}},
		setting{name: "export-time", def: "3s", usage: "how long export_and_send's simulated export runs (five parts, each announced in the task's status message) before it asks who receives the report; 0 = at once",
			apply: minDurationSetter(0, "", func(c *config) *time.Duration { return &c.exportTime })},
		setting{name: "max-oauth-attempts", def: "20", usage: "OAuth sign-ins one user may start within 10 minutes; past it the connect page answers 429 and stores nothing",
			apply: intSetter(1, func(c *config) *int { return &c.maxOAuthAttempts })},
		setting{name: "shutdown-grace", def: "5s", usage: "on SIGTERM, how long /readyz says not ready (and responses close their connections) while requests are still served, before the listeners close; 0 = none",
			apply: minDurationSetter(0, "", func(c *config) *time.Duration { return &c.shutdownGrace })},
	)
}

// openStore opens the PostgreSQL store named by cfg.storeURL, or the
// SQLite store in the data directory, with the --store-* settings.
func openStore(cfg *config) (st store.Store, err error) {
	if cfg.wrapStore != nil {
		defer func() {
			if err == nil {
				st = cfg.wrapStore(st)
			}
		}()
	}
	if cfg.storeURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := postgres.OpenWith(ctx, cfg.storeURL, &postgres.Options{Timeout: cfg.storeTimeout, MaxConns: int32(cfg.storeMaxConns)})
		if err != nil {
			return nil, fmt.Errorf("opening the store: %w", err)
		}
		return st, nil
	}
	if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
		return nil, err
	}
	return sqlite.OpenWith(sqlitePath(cfg), &sqlite.Options{Timeout: cfg.storeTimeout, MaxConns: cfg.storeMaxConns})
}

// retention is what the sweeper keeps, from the --retain-* settings.
func (cfg *config) retention() *store.Retention {
	r := &store.Retention{FlowGrace: cfg.retainFlows, Operations: cfg.retainOperations,
		Records: map[string]time.Duration{connect.AttemptKind: cfg.retainAttempts}}
	if cfg.retainReports > 0 {
		r.Records[reports.KindDraft] = cfg.retainReports
		r.Records[reports.KindSend] = cfg.retainReports
	}
	return r
}

// sweepKinds are the label values of elicitd_swept_rows_total.
var sweepKinds = []string{"flows", "sessions", "operations", connect.AttemptKind, reports.KindDraft, reports.KindSend, sweptTasks}

// sweptTasks is the elicitd_swept_rows_total kind of expired tasks.
const sweptTasks = "tasks"

// sweeper removes what the retention settings say has outlived its use,
// and reports it: one log line per sweep that removed something, and
// elicitd_swept_rows_total by kind.
type sweeper struct {
	st     store.Store
	r      *store.Retention
	now    func() time.Time
	logger *slog.Logger
	swept  *prometheus.CounterVec
	errs   prometheus.Counter
	// tasks deletes the tasks past their TTL (mcpserver.Server.SweepTasks);
	// nil: none.
	tasks func(context.Context) (int, error)
}

// sweep runs one sweep: the store's rows, then expired tasks.
func (s *sweeper) sweep(ctx context.Context) (*store.SweepResult, error) {
	res, err := s.st.Sweep(ctx, s.now(), s.r)
	counts := map[string]int64{}
	if res != nil {
		counts = map[string]int64{"flows": res.Flows, "sessions": res.Sessions, "operations": res.Operations}
		for k, n := range res.Records {
			counts[k] = n
		}
	}
	if s.tasks != nil {
		n, terr := s.tasks(ctx)
		counts[sweptTasks] = int64(n)
		err = errors.Join(err, terr)
	}
	s.report(counts)
	if err != nil {
		s.errs.Inc()
		s.logger.Error("sweeping the store", "err", err)
	}
	return res, err
}

// report counts and logs what a sweep removed.
func (s *sweeper) report(counts map[string]int64) {
	attrs := []any{}
	for _, k := range sweepKinds {
		if n := counts[k]; n > 0 {
			s.swept.WithLabelValues(k).Add(float64(n))
			attrs = append(attrs, k, n)
		}
	}
	if len(attrs) > 0 {
		s.logger.Info("swept the store", attrs...)
	}
}

// loop sweeps every interval until ctx ends.
func (s *sweeper) loop(ctx context.Context, interval time.Duration) {
	ctxtime.Every(ctx, interval, func(ctx context.Context) { _, _ = s.sweep(ctx) })
}
