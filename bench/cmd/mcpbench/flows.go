package main

// The real flows: elicitd (cmd/elicitd built with -tags benchdebug) on
// SQLite and PostgreSQL beside the bare store, the goroutine dumps taken
// under load, and the TypeScript SDK peer.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/bench/internal/load"
	"github.com/mcp-elicit/elicit/bench/internal/report"
	"github.com/mcp-elicit/elicit/bench/internal/wire"
)

// startStore starts the bare store and elicitd on st, each with a store
// of its own (a directory, or a PostgreSQL schema), and returns the
// cleanup that removes those once the servers are stopped.
func startStore(ctx context.Context, o *options, st string) ([]*server, func(), error) {
	dir, err := os.MkdirTemp("", "mcpbench-"+st+"-")
	if err != nil {
		return nil, nil, err
	}
	cleanups := []func(){func() { os.RemoveAll(dir) }}
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	var storeArgs []string
	var elicitdStore, bareApp, elicitdApp string
	switch st {
	case report.SQLite:
		storeArgs = []string{"-driver", "sqlite", "-data", filepath.Join(dir, "store")}
	case report.Postgres:
		a, appA, dropA, err := pgSchema(ctx, o.postgres)
		if err != nil {
			return nil, cleanup, err
		}
		cleanups = append(cleanups, dropA)
		b, appB, dropB, err := pgSchema(ctx, o.postgres)
		if err != nil {
			return nil, cleanup, err
		}
		cleanups = append(cleanups, dropB)
		storeArgs, elicitdStore = []string{"-driver", "postgres", "-postgres", a}, b
		bareApp, elicitdApp = appA, appB
	}
	bare, err := startServer(ctx, report.StoreServer(st), o.procs, filepath.Join(o.bin, "store"), storeArgs, nil)
	if err != nil {
		return nil, cleanup, err
	}
	bare.db = dbClient{dsn: o.postgres, app: bareApp}
	if err := checkServer(ctx, bare, o.procs, []string{wire.ScenarioInsert}, ""); err != nil {
		bare.stop()
		return nil, cleanup, err
	}
	e, err := startElicitd(ctx, o, report.ElicitdServer(st), filepath.Join(dir, "elicitd"), elicitdStore)
	if err != nil {
		bare.stop()
		return nil, cleanup, err
	}
	e.db = dbClient{dsn: o.postgres, app: elicitdApp}
	if err := checkServer(ctx, e, o.procs, o.flows, "check"); err != nil {
		bare.stop()
		e.stop()
		return nil, cleanup, err
	}
	return []*server{bare, e}, cleanup, nil
}

// startElicitd starts elicitd on loopback with its data in dir and, if
// storeURL is set, PostgreSQL at storeURL; operational log at warn and no
// audit log or metrics listener, so the store and the protocol are what
// is measured. Its debug listener (benchdebug build) serves pprof and
// expvar.
func startElicitd(ctx context.Context, o *options, name, dir, storeURL string) (*server, error) {
	bin := filepath.Join(o.bin, "elicitd")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("elicitd binary: %w (run scripts/bench, which builds it with -tags benchdebug)", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	debug, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--addr", addr, "--data", dir, "--log-level", "warn", "--audit-log", "off", "--metrics-addr", "off"}
	if storeURL != "" {
		args = append(args, "--store", storeURL)
	}
	s, err := launch(ctx, name, bin, args, []string{"ELICITD_BENCH_DEBUG=" + debug}, o.procs)
	if err != nil {
		return nil, err
	}
	s.url, s.debug, s.debugKind = "http://"+addr+"/mcp", "http://"+debug, "expvar"
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := s.client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited before it was ready", name)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready within a minute", name)
		}
	}
	if _, err := s.stats(ctx, false); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: no /debug/vars (build it with -tags benchdebug): %w", name, err)
	}
	return s, nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// pgSchema creates a schema of its own in the database dsn names and
// returns dsn with search_path set to it and application_name set to app
// (the schema's name, so that dbClient finds the connections made with
// it), and its drop.
func pgSchema(ctx context.Context, dsn string) (_, app string, _ func(), _ error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", "", nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "mcpbench_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return "", "", nil, fmt.Errorf("postgres: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = c.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
			c.Close(ctx)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		drop()
		return "", "", nil, errors.New("postgres: -postgres must be a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema, drop, nil
}

// dbClient names the PostgreSQL connections of one server: those made
// with application_name app, in the database dsn names.
type dbClient struct{ dsn, app string }

// backendCPU returns the CPU time so far (nanoseconds, from /proc) of
// each backend serving c's connections, by process id; none when c names
// no connections or the database runs on another machine (its process
// ids are not ours to read).
func (c dbClient) backendCPU(ctx context.Context) (map[int]int64, error) {
	if c.app == "" {
		return nil, nil
	}
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, c.app)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cpu := map[int]int64{}
	for _, pid := range pids {
		if t, err := procCPU(int(pid)); err == nil {
			cpu[int(pid)] = t
		}
	}
	return cpu, nil
}

// backendCPUDelta is the CPU the backends in after used since before; a
// backend not in before started since, and counts whole.
func backendCPUDelta(before, after map[int]int64) int64 {
	var d int64
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

// startTSSDK starts the TypeScript SDK v2 peer: node script.
func startTSSDK(ctx context.Context, script string, procs int) (*server, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("tssdk: %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("tssdk: %w", err)
	}
	s, err := launch(ctx, report.TSSDK, node, []string{script, "--addr", "127.0.0.1:0"}, nil, procs)
	if err != nil {
		return nil, err
	}
	return s, s.awaitAddresses(ctx)
}

// tssdkVersions names the TypeScript peer's packages and node.
func tssdkVersions(script string) string {
	var parts []string
	for _, p := range []string{"server", "node"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(script), "node_modules", "@modelcontextprotocol", p, "package.json"))
		var pkg struct{ Name, Version string }
		if err == nil && json.Unmarshal(b, &pkg) == nil {
			parts = append(parts, pkg.Name+"@"+pkg.Version)
		}
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		parts = append(parts, "node "+strings.TrimSpace(string(out)))
	}
	return strings.Join(parts, ", ")
}

// procCPU returns the user+system CPU time of process pid so far, from
// /proc/PID/stat (clock ticks of 10 ms).
func procCPU(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(b)
}

// statCPU reads utime+stime from a /proc/PID/stat line.
func statCPU(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command")
	}
	f := strings.Fields(string(b[i+1:]))
	// After the command: state is field 3 of the file, utime 14, stime 15.
	if len(f) < 13 {
		return 0, errors.New("/proc stat: short")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("/proc stat: bad times")
	}
	return (u + s) * int64(10*time.Millisecond), nil
}

var users atomic.Int64

// nextUser returns a user name no earlier run used (see load.Config.User).
func nextUser() string { return fmt.Sprintf("u%d", users.Add(1)) }

// flowUser is nextUser for elicitd's flows, which need a signed-in user,
// and "" (no Authorization header) for the other scenarios.
func flowUser(scenario string) string {
	for _, f := range wire.FlowScenarios {
		if f == scenario {
			return nextUser()
		}
	}
	return ""
}

// loadavg1 is the 1-minute load average.
func loadavg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// busyCheck loads s with the export flow at c connections and takes
// o.busyDumps goroutine dumps meanwhile, counting where the goroutines
// serving requests are.
func busyCheck(ctx context.Context, o *options, s *server, c int) (*report.BusyCheck, error) {
	if s == nil || s.debugKind != "expvar" {
		return nil, errors.New("no pprof listener")
	}
	d := max(3*time.Second, o.duration)
	tr := load.NewTransport(c, o.timeout)
	defer tr.CloseIdleConnections()
	cfg := load.Config{URL: s.url, Scenario: wire.ScenarioExport, Connections: c, Duration: d, Timeout: o.timeout, Transport: tr, User: nextUser()}
	done := make(chan error, 1)
	go func() { _, err := load.Run(ctx, cfg); done <- err }()
	b := &report.BusyCheck{Server: s.name, Conns: c}
	time.Sleep(500 * time.Millisecond) // past the connections' start
	step := (d - time.Second) / time.Duration(max(1, o.busyDumps))
	for i := range o.busyDumps {
		dump, err := s.goroutines(ctx)
		if err != nil {
			<-done
			return nil, err
		}
		if i == 0 {
			b.File = filepath.Join(o.artifacts, fmt.Sprintf("%s-export-c%d.goroutines.txt", s.name, c))
			_ = os.WriteFile(b.File, dump, 0o644)
		}
		countGoroutines(dump, b)
		time.Sleep(step)
	}
	if err := <-done; err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "busy     %-16s c=%d: %d dumps, %d request goroutines: %d in SQLite's busy handler, %d waiting for the writer, %d in pgxpool Acquire, %d in a PostgreSQL round trip\n",
		s.name, c, b.Samples, b.Requests, b.BusyHandler, b.Writer, b.Acquire, b.Postgres)
	return b, nil
}

// goroutines returns a full goroutine dump of s (pprof debug=2).
func (s *server) goroutines(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.debug+"/debug/pprof/goroutine?debug=2", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("goroutine dump: HTTP %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// countGoroutines adds one goroutine dump (pprof debug=2) to b: the
// goroutines serving a request (in net/http's connection loop, not idle
// reading the next request) and where they wait.
func countGoroutines(dump []byte, b *report.BusyCheck) {
	b.Samples++
	for _, g := range bytes.Split(dump, []byte("\n\n")) {
		if !bytes.HasPrefix(g, []byte("goroutine ")) || !bytes.Contains(g, []byte("net/http.(*conn).serve")) ||
			bytes.Contains(g, []byte("net/http.(*conn).readRequest")) {
			continue
		}
		b.Requests++
		switch {
		case bytes.Contains(g, []byte("modernc.org/sqlite.busyHandler")):
			b.BusyHandler++
		case bytes.Contains(g, []byte("store/sqlite.(*writer).write")):
			b.Writer++
		case bytes.Contains(g, []byte("pgxpool.(*Pool).Acquire")):
			b.Acquire++
		case bytes.Contains(g, []byte("jackc/pgx/v5/pgconn.")):
			b.Postgres++
		}
	}
}
