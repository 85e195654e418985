// Command elicitd is the elicit reference server: an MCP 2026-07-28
// server over stateless Streamable HTTP (and, on the same /mcp, 2025-11-25
// clients through package legacy) that serves the billing, reports and
// calendar flows with their web pages.
//
//	go run ./cmd/elicitd                      # http://127.0.0.1:3000/mcp, data in ./elicitd-data
//	go run ./cmd/elicitd --addr 127.0.0.1:8080 --data /var/lib/elicitd
//	ELICIT_MASTER_KEY=$(head -c32 /dev/urandom | base64) \
//	  go run ./cmd/elicitd --store 'postgres://elicit@db/elicit'
//
// The store is SQLite in --data unless --store names a PostgreSQL database
// (postgres:// or postgresql:// URL); several instances may share one. The
// vault master key, from which the requestState key is also derived, is
// ELICIT_MASTER_KEY (32 bytes, standard base64) when that is set, else the
// file master.key in --data (created on first use). Instances behind one
// load balancer must share the key, so give them all the same
// ELICIT_MASTER_KEY; the store keeps a check value of it and refuses
// another (masterkey.go). "elicitd keys rotate|list|retire" keeps a rotatable
// requestState key ring in the store instead (keys.go); ELICIT_STATE_KEYS
// (id:base64,... — the first seals) overrides both.
//
// Settings come from flags, ELICIT_* environment variables and an optional
// --config JSON file (config.go; elicitd --help lists them all). Each MCP
// round writes an audit record (--audit-log); /metrics, /healthz and
// /readyz serve operations (ops.go). SIGTERM drains in-flight requests.
//
// Authentication is the demo bearer scheme (the token is the user name) by
// default, which is only safe on loopback: a non-loopback --addr needs
// --insecure-demo-auth. --auth jwt accepts bearer JWTs from --jwt-issuer
// and signs the pages' users in there with OpenID Connect (jwtauth.go).
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/fakeoauth"
	"github.com/mcp-elicit/elicit/internal/serve"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/streamhttp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

// registerTestTools is set only in builds with the elicitd_testhooks tag
// (testhooks.go), which the process tests use; release builds have no
// test tools.
var registerTestTools func(*mcpserver.Server, store.Store)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "elicitd:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is elicitd's exit status for run's error: 2 for a usage error
// (usageError), 1 for any other.
func exitCode(err error) int {
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

// masterKeyEnv names the environment variable that supplies the vault
// master key (standard base64 of 32 bytes) instead of the data dir's file.
const masterKeyEnv = "ELICIT_MASTER_KEY"

// stateKeysEnv names the environment variable that supplies the
// requestState key ring instead of the store's (keys.go):
// comma-separated id:base64 entries (32-byte secrets, standard base64).
// The first seals; all open. Rotation: add the new key first on every
// instance, wait for the old key's states to expire (reqstate.DefaultTTL),
// then drop the old key.
const stateKeysEnv = "ELICIT_STATE_KEYS"

// parseStateKeys parses an ELICIT_STATE_KEYS value; "" gives no keys.
func parseStateKeys(s string) ([]reqstate.Key, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var keys []reqstate.Key
	seen := map[string]bool{}
	for i, entry := range strings.Split(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || id == "" || len(id) > 255 {
			return nil, fmt.Errorf("%s entry %d: want id:base64", stateKeysEnv, i+1)
		}
		if seen[id] {
			return nil, fmt.Errorf("%s: key id %q repeated", stateKeysEnv, id)
		}
		seen[id] = true
		secret, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(secret) != 32 {
			return nil, fmt.Errorf("%s key %q: secret must be 32 bytes in standard base64 (e.g. head -c32 /dev/urandom | base64)", stateKeysEnv, id)
		}
		keys = append(keys, reqstate.Key{ID: id, Secret: secret})
	}
	return keys, nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// masterKey returns the key from cfg.masterKeyB64 if set, else from (or
// created in) the data directory.
func masterKey(cfg *config) ([]byte, error) {
	if cfg.masterKeyB64 == "" {
		key, err := keyring.LoadOrCreateMasterKey(cfg.dataDir)
		if err != nil {
			// The prefix elicitd has always printed for these errors.
			return nil, fmt.Errorf("connect: %w", err)
		}
		return key, nil
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cfg.masterKeyB64))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s must be 32 bytes in standard base64 (e.g. head -c32 /dev/urandom | base64)", masterKeyEnv)
	}
	return key, checkMasterKeyFile(cfg, key)
}

// sqlitePath is the SQLite store's file in the data directory.
func sqlitePath(cfg *config) string { return filepath.Join(cfg.dataDir, "elicitd.db") }

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// run is elicitd: the keys command (which prints to stdout), or the server
// until SIGTERM/SIGINT (operational log on stderr; audit records on stdout
// with --audit-log -).
func run(args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		if errors.Is(err, flag.ErrHelp) {
			err = nil
		}
	}()
	if len(args) > 0 && args[0] == "keys" {
		return runKeys(args[1:], stdout, stderr)
	}
	cfg, err := parseFlags(args, stdout) // --help, asked for, goes to stdout
	if err != nil {
		return err
	}
	var mcpOut io.WriteCloser
	if cfg.stdio {
		// Before anything could print: stdout carries MCP messages only.
		if mcpOut, err = stdioOutput(stdout); err != nil {
			return err
		}
		defer mcpOut.Close()
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if cfg.publicURLFromListener {
		cfg.publicURL = canonicalOrigin(&url.URL{Scheme: "http", Host: ln.Addr().String()})
	}
	// Bound before newApp creates anything: a port --addr already holds
	// (localhost:P against 127.0.0.1:P, say) is refused with nothing written.
	var mln net.Listener
	if cfg.metricsAddr != "" && cfg.metricsAddr != "off" {
		if mln, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer mln.Close()
	}
	app, err := newApp(cfg, logger)
	if err != nil {
		return err
	}
	defer app.Close()
	srv := &http.Server{
		Handler:           app,
		ReadHeaderTimeout: cfg.readHeaderTimeout,
		ReadTimeout:       cfg.readTimeout,
		IdleTimeout:       cfg.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	for _, f := range app.onShutdown {
		srv.RegisterOnShutdown(f)
	}
	if cfg.stdio {
		return app.serveStdio(cfg, srv, ln, mcpOut, logger)
	}
	ctx, stop := app.drainOnSignal(cfg.shutdownGrace, logger)
	defer stop()
	go app.sweeper.loop(ctx, cfg.sweepInterval)
	go app.keys.refreshLoop(ctx, app.sealer, cfg.keysRefresh, logger)
	if mln != nil {
		msrv := &http.Server{Handler: app.opsMux(), ReadHeaderTimeout: cfg.readHeaderTimeout, IdleTimeout: cfg.idleTimeout,
			ErrorLog: srv.ErrorLog}
		logger.Info("metrics listening", "addr", mln.Addr().String())
		// Its own "shutting down" line says which listener it is.
		mlogger := logger.With("listener", "metrics")
		go func() {
			if err := serve.RunFor(ctx, msrv, mln, mlogger, cfg.shutdownTimeout); err != nil {
				logger.Error("metrics listener", "err", err)
			}
		}()
	}
	logger.Info("elicitd listening", "addr", ln.Addr().String(), "mcp", cfg.publicURL+"/mcp", "pages", cfg.publicURL+"/ui/", "data", cfg.dataDir, "store", storeName(cfg), "version", version)
	err = serve.RunFor(ctx, srv, ln, logger, cfg.shutdownTimeout)
	return errors.Join(err, app.stopTasks(cfg.shutdownTimeout))
}

// stopTasks interrupts the task runs still going once no request is
// served any more (mcpserver.Server.StopTasks): each run's lease is
// released, so another instance sharing the store, or this one
// restarted, takes its task over at its next tasks/get instead of after
// --task-lease, and each run is audited as interrupted. It waits at most
// timeout for the runs to return; an error (a run that did not return,
// a lease the store did not release) makes the exit status 1.
func (a *app) stopTasks(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return a.mcp.StopTasks(ctx)
}

// app is elicitd's whole HTTP surface: /mcp, /ui/, /healthz, /readyz and
// (unless --metrics-addr moves it) /metrics.
type app struct {
	http.Handler
	closers []func() error
	// onShutdown runs when the server begins shutting down (the 2025
	// sessions' streams must end for the shutdown to finish).
	onShutdown []func()
	keys       *stateKeys
	sealer     *reqstate.Sealer
	// metricsHandler serves /metrics, readyz /readyz.
	metricsHandler, readyz http.Handler
	// sweeper removes expired and finished rows; run calls it on a timer.
	sweeper *sweeper
	// mcp is the MCP server, served on /mcp or (--stdio) on stdin/stdout.
	mcp *mcpserver.Server
	// calendarProvider is the demo OAuth provider (nil without one).
	calendarProvider *fakeoauth.Server
	// draining is set on SIGTERM for --shutdown-grace: /readyz says not
	// ready and every response closes its connection, while requests are
	// still served.
	draining atomic.Bool
	// routes are what --addr serves (behind guardHosts); metricsHosts the
	// Host names the --metrics-addr listener accepts.
	routes       *routeMux
	metricsHosts []string
}

// closeWhileDraining answers with Connection: close while draining, so
// keep-alive clients reconnect (through a load balancer that has seen
// /readyz fail, to another instance) instead of reusing a connection the
// shutdown will close.
func (a *app) closeWhileDraining(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// drainOnSignal returns a context that ends when the server should stop
// serving: at once on SIGINT (or a second signal), and on SIGTERM after
// grace, during which a.draining is set. stop releases the signals.
func (a *app) drainOnSignal(grace time.Duration, logger *slog.Logger) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-ctx.Done():
			return
		}
		if sig == syscall.SIGTERM && grace > 0 {
			a.draining.Store(true)
			logger.Info("draining: /readyz reports not ready; the listeners close after the grace period", "grace", grace)
			t := time.NewTimer(grace)
			select {
			case <-t.C:
			case <-sigs: // a second signal ends the grace at once
				t.Stop()
			}
		}
		cancel()
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

func (a *app) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	return errors.Join(errs...)
}

// newSealer checks the store's master-key check and seals requestState
// with the ring it loads.
func newSealer(cfg *config, st store.Store, master []byte, now func() time.Time) (*stateKeys, *reqstate.Sealer, error) {
	keys, err := newStateKeys(cfg, st, master, now)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := keys.verifyMaster(ctx); err != nil {
		return nil, nil, err
	}
	ring, err := keys.load(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the requestState key ring: %w", err)
	}
	sealer, err := reqstate.New(ring, &reqstate.Options{Now: now})
	if err != nil {
		return nil, nil, err
	}
	return keys, sealer, nil
}

func newApp(cfg *config, logger *slog.Logger) (*app, error) {
	a := &app{}
	if cfg.demoAuthExposed() {
		logger.Warn("demo auth is reachable beyond loopback (--insecure-demo-auth): anyone who reaches this server can act as any user", "addr", cfg.addr, "public_url", cfg.publicURL)
	}
	now := cfg.now
	if now == nil {
		now = time.Now
	}
	// What can fail without writing comes first (issuer discovery, the
	// PostgreSQL connection), so a refused start leaves no data directory,
	// master.key or SQLite file behind.
	authn, err := newAuth(cfg, now)
	if err != nil {
		return nil, err
	}
	var st store.Store
	if cfg.storeURL != "" {
		if st, err = openStore(cfg); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, st.Close)
	}
	master, err := masterKey(cfg)
	if err != nil {
		a.Close()
		return nil, err
	}
	if st == nil {
		if st, err = openStore(cfg); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, st.Close)
	}
	obs, closeAudit, err := newObserver(cfg, logger)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.sweeper = &sweeper{st: st, r: cfg.retention(), now: now, logger: logger, swept: obs.metrics.swept, errs: obs.metrics.sweepErrors}
	a.closers = append(a.closers, closeAudit)
	a.metricsHandler = promhttp.HandlerFor(obs.metrics.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
	flows, err := connect.New(connect.Options{Store: st, MasterKey: master, BaseURL: cfg.publicURL, Logger: logger, Now: now, SignIn: authn.signIn,
		OnIdentityMismatch: obs.identityMismatch, OnCookieConflict: obs.cookieConflict, MaxAttempts: cfg.maxOAuthAttempts,
		InsecureDemoSignIn: cfg.insecureDemoAuth})
	if err != nil {
		a.Close()
		return nil, err
	}
	if a.keys, a.sealer, err = newSealer(cfg, st, master, now); err != nil {
		a.Close()
		return nil, err
	}
	sealer := a.sealer
	srv := mcpserver.New(mcp.Implementation{Name: "elicitd", Version: version, Title: "elicit reference server"}, &mcpserver.Options{
		Instructions: instructions,
		Sealer:       sealer,
		Logger:       logger,
		Observer:     obs.round,
	})
	srv.EnableTasks(&mcpserver.TaskOptions{Store: st, Ledger: st, TTL: cfg.taskTTL, Lease: cfg.taskLease, MaxTasksPerUser: cfg.maxTasksPerUser, Now: now})
	a.sweeper.tasks = srv.SweepTasks
	billing.New(flows).WithWait(stepWait(cfg)).Register(srv)
	reports.New(flows, st, logger).WithWait(stepWait(cfg)).WithExportTime(cfg.exportTime).Register(srv)
	if registerTestTools != nil {
		registerTestTools(srv, st)
	}
	if a.calendarProvider, err = startCalendar(cfg, srv, flows, logger); err != nil {
		a.Close()
		return nil, err
	}
	if a.calendarProvider != nil {
		a.closers = append(a.closers, a.calendarProvider.Close)
	}

	hosts := allowedHosts(cfg, cfg.addr)
	a.metricsHosts = allowedHosts(cfg, cfg.metricsAddr)
	mux := newRouteMux()
	a.routes = mux
	handle := mux.Handle
	a.mcp = srv
	if !cfg.stdio { // with --stdio, MCP is on stdin/stdout only
		mcpHandler := bothEras(srv, streamhttp.NewHandler(srv, &streamhttp.Options{
			Auth:         authn.mcp,
			AllowedHosts: hosts,
			Logger:       logger,
		}), logger)
		a.onShutdown = append(a.onShutdown, func() { _ = mcpHandler.Close() })
		handle("/mcp", mcpHandler)
	}
	// Held URL-step retries are answered at once (input_required, the same
	// question) so the shutdown does not wait out --url-wait.
	a.onShutdown = append(a.onShutdown, flows.EndWaits)
	handle("/ui/", flows.Handler())
	handle("/connect/", flows.Handler())
	for pattern, h := range authn.routes {
		handle(pattern, h)
	}
	readyTimeout := cfg.storeTimeout
	if readyTimeout <= 0 {
		readyTimeout = 5 * time.Second
	}
	a.readyz = readiness(&a.draining, st, a.keys, obs.audit, readyTimeout, logger)
	handle("GET /healthz", http.HandlerFunc(healthz))
	handle("GET /readyz", a.readyz)
	if cfg.metricsAddr == "" {
		handle("GET /metrics", a.metricsHandler)
	}
	handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "elicitd %s\nMCP endpoint: %s/mcp (MCP 2026-07-28, stateless; 2025-11-25 clients with initialize and a session)\nPages: %s/ui/\n", version, cfg.publicURL, cfg.publicURL)
	}))
	a.Handler = a.closeWhileDraining(obs.metrics.instrument(guardHosts(hosts, mux)))
	return a, nil
}

// instructions is the server/discover text: what each tool is for, and
// how the URL-mode steps go.
const instructions = "Tools that need the user in the middle of a request. " +
	"connect_billing connects the user's payment-provider account: the user enters the API key on this server's own page (URL-mode elicitation), never in the client; billing_status tells whether it is connected. " +
	"export_report prepares a draft report for a period and dataset, asking the detail level and a label in a form; send_report sends a prepared draft to a recipient after the user connects the reporting account on this server's page and confirms in a form; list_drafts lists the user's drafts. " +
	"export_and_send exports the report for a period and dataset, which takes a while, then asks in a form who receives it and sends it; for clients that declare the io.modelcontextprotocol/tasks extension it runs as a task. " +
	"connect_calendar connects the user's calendar by approval at the calendar provider, started from this server's page; list_events lists its events. " +
	"In URL mode, accept means the user agreed to open the page; a retry sent before the page is finished is held until it is (--url-wait), then answered."

// storeName says which store is in use, for the log, without the URL's
// password.
func storeName(cfg *config) string {
	if cfg.storeURL == "" {
		return "sqlite"
	}
	if u, err := url.Parse(cfg.storeURL); err == nil {
		return "postgres " + u.Redacted()
	}
	return "postgres"
}
