// Command mcpbench is the load harness: it starts the three benchmark
// servers (bench/servers/{ceiling,gosdk,elicit}) as child processes on
// 127.0.0.1 with the same GOMAXPROCS, drives closed-loop load against them
// in alternation (ceiling, go-sdk, elicit, ceiling, …) for each scenario
// and connection count, and writes BENCHMARKS.md, the throughput chart and
// the raw results.
//
// Usage (scripts/bench builds the binaries and passes these):
//
//	mcpbench -bin DIR [-connections 1,16] [-duration 2s] [-warmup 500ms]
//	         [-rounds 2] [-scenarios call,mrtr,discover] [-out BENCHMARKS.md]
//	         [-chart throughput.png] [-artifacts DIR] [-notes notes.md]
//
// Per run it reports requests/s, p50/p99/p99.9 latency, errors, server
// allocations and CPU per request (from the server's /debug/stats) and
// server RSS (/proc/PID/status), and, for the servers on a PostgreSQL
// store on this machine, the CPU of the database backends serving their
// connections (/proc/PID/stat of the pg_stat_activity process ids with the
// server's own application_name); ratios between servers are computed
// within a round and reported as the median over rounds. It also runs the
// micro benchmarks, measures the sealed state sizes and the heap growth of
// flows left pending, and profiles elicit under load.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/bench/internal/load"
	"github.com/mcp-elicit/elicit/bench/internal/micro"
	"github.com/mcp-elicit/elicit/bench/internal/report"
	"github.com/mcp-elicit/elicit/bench/internal/srvkit"
	"github.com/mcp-elicit/elicit/bench/internal/wire"
)

type options struct {
	bin         string
	conns       []int
	scenarios   []string
	servers     []string
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	procs       int
	out, chart  string
	artifacts   string
	notes       string
	command     string
	micro       bool
	microTime   time.Duration
	pending     int
	profile     bool
	profileSrvs []string
	timeout     time.Duration
	from        string
	// The real flows: scenarios, stores, connection counts, the
	// PostgreSQL database (empty: PostgreSQL is skipped), and the
	// TypeScript SDK peer's server.mjs (empty: not run).
	flows     []string
	stores    []string
	flowConns []int
	postgres  string
	tssdk     string
	busyDumps int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("mcpbench: ")
	o, err := parseFlags()
	if err != nil {
		log.Fatal(err)
	}
	if o.from != "" {
		if err := rewrite(o); err != nil {
			log.Fatal(err)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

// parseFlags reads the command line into options, checks them, and fills
// in the defaults that depend on other flags.
func parseFlags() (*options, error) {
	var o options
	exe, _ := os.Executable()
	var conns, scenarios, servers, profileSrvs, flows, stores, flowConns string
	flag.StringVar(&o.bin, "bin", filepath.Dir(exe), "directory holding the server binaries ceiling, gosdk, elicit")
	flag.StringVar(&conns, "connections", "1,16", "comma-separated connection counts")
	flag.StringVar(&scenarios, "scenarios", strings.Join(wire.Scenarios, ","), "comma-separated scenarios: call, mrtr, discover")
	flag.StringVar(&servers, "servers", strings.Join(report.Servers, ","), "comma-separated servers, in round order")
	flag.DurationVar(&o.duration, "duration", 2*time.Second, "measured time per run")
	flag.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "warm-up time before each run (not measured)")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds (each round runs every server once per scenario and connection count)")
	flag.IntVar(&o.procs, "procs", runtime.NumCPU(), "GOMAXPROCS of every server process")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "markdown report to write (empty: none)")
	flag.StringVar(&o.chart, "chart", "", "PNG chart to write (default: throughput.png beside -out)")
	flag.StringVar(&o.artifacts, "artifacts", "", "directory for results.json and profiles (default: a new temporary directory)")
	flag.StringVar(&o.notes, "notes", "", "markdown file appended to the report (hand-written analysis)")
	flag.StringVar(&o.command, "command", "", "how this run was invoked, for the report (default: the harness command line)")
	flag.BoolVar(&o.micro, "micro", true, "run the micro benchmarks")
	flag.DurationVar(&o.microTime, "micro-time", 500*time.Millisecond, "time per micro benchmark")
	flag.IntVar(&o.pending, "pending", 10000, "flows to start and leave pending per server (0: skip)")
	flag.BoolVar(&o.profile, "profile", true, "profile servers under load after the measured rounds")
	flag.StringVar(&profileSrvs, "profile-servers", report.Elicit, "comma-separated servers to profile")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	flag.StringVar(&o.from, "from", "", "write the report from this results.json instead of running (with -out, -chart, -notes)")
	flag.StringVar(&flows, "flows", strings.Join(wire.FlowScenarios, ","), "comma-separated real flows run on elicitd: export, connect, status (empty: none)")
	flag.StringVar(&stores, "stores", strings.Join(report.Stores, ","), "comma-separated stores the real flows run on: sqlite, postgres")
	flag.StringVar(&flowConns, "flow-connections", "", "connection counts of the real flows (default: -connections)")
	flag.StringVar(&o.postgres, "postgres", os.Getenv("ELICIT_BENCH_POSTGRES_DSN"), "PostgreSQL URL for the postgres store (a schema of its own is created and dropped); empty skips PostgreSQL")
	flag.StringVar(&o.tssdk, "tssdk", "", "server.mjs of the TypeScript SDK v2 peer, beside its installed node_modules (scripts/bench installs it); empty: not run")
	flag.IntVar(&o.busyDumps, "busy-dumps", 20, "goroutine dumps taken from each elicitd under export load")
	flag.Parse()
	var err error
	if o.conns, err = parseInts(conns); err != nil {
		return nil, fmt.Errorf("-connections: %w", err)
	}
	o.scenarios, o.servers, o.profileSrvs = split(scenarios), split(servers), split(profileSrvs)
	o.flows, o.stores = split(flows), split(stores)
	if flowConns == "" {
		o.flowConns = o.conns
	} else if o.flowConns, err = parseInts(flowConns); err != nil {
		return nil, fmt.Errorf("-flow-connections: %w", err)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.chart == "" && o.out != "" {
		o.chart = filepath.Join(filepath.Dir(o.out), "throughput.png")
	}
	if o.command == "" {
		o.command = strings.Join(os.Args, " ")
	}
	return &o, nil
}

// check rejects settings the harness cannot run with.
func (o *options) check() error {
	if o.rounds < 1 || o.duration <= 0 || o.procs < 1 {
		return errors.New("-rounds, -duration and -procs must be positive")
	}
	for _, c := range append(slices.Clone(o.conns), o.flowConns...) {
		if c < 1 || c > 1024 {
			return fmt.Errorf("-connections: %d is out of 1..1024", c)
		}
	}
	for _, st := range o.stores {
		if st != report.SQLite && st != report.Postgres {
			return fmt.Errorf("-stores: unknown store %q", st)
		}
	}
	for _, f := range o.flows {
		if !slices.Contains(wire.FlowScenarios, f) {
			return fmt.Errorf("-flows: unknown flow %q", f)
		}
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func run(ctx context.Context, o *options) error {
	started := time.Now()
	if err := makeArtifacts(o); err != nil {
		return err
	}
	res, err := newResults(o, started)
	if err != nil {
		return err
	}
	f := &fleet{servers: map[string]*server{}}
	defer f.stop()
	if err := f.startCore(ctx, o); err != nil {
		return err
	}
	if o.tssdk != "" && slices.Contains(o.scenarios, wire.ScenarioCall) {
		if err := f.startTSPeer(ctx, o); err != nil {
			return err
		}
		res.Settings.TSSDK = tssdkVersions(o.tssdk)
	}
	var stores []string
	if len(o.flows) > 0 {
		if stores, err = f.startStores(ctx, o); err != nil {
			return err
		}
		res.Settings.Flows, res.Settings.Stores, res.Settings.FlowConnections = o.flows, stores, o.flowConns
	}
	measureInProcess(o, res)
	if res.Runs, err = runPlans(ctx, o, plan(o, stores, f.servers), f.servers); err != nil {
		return err
	}
	if o.pending > 0 {
		if res.Pending, err = pendingAll(ctx, o, f.servers); err != nil {
			return err
		}
	}
	if slices.Contains(o.flows, wire.ScenarioExport) {
		res.Busy = busyChecks(ctx, o, stores, f.servers)
	}
	if o.profile {
		res.Profiles = profileCore(ctx, o, f.servers)
		res.Profiles = append(res.Profiles, profileFlows(ctx, o, stores, f.servers)...)
	}
	res.Machine.LoadAfter = loadavg()
	res.Took = time.Since(started)
	return write(o, res)
}

// makeArtifacts creates o.artifacts, a new temporary directory when none
// was given.
func makeArtifacts(o *options) error {
	if o.artifacts == "" {
		d, err := os.MkdirTemp("", "mcpbench-")
		if err != nil {
			return err
		}
		o.artifacts = d
	}
	return os.MkdirAll(o.artifacts, 0o755)
}

// newResults starts the invocation's results: the machine (load average
// before), the settings and the notes.
func newResults(o *options, started time.Time) (*report.Results, error) {
	res := &report.Results{Started: started, Machine: machine()}
	res.Settings = report.Settings{Command: o.command, Args: os.Args, Connections: o.conns, Scenarios: o.scenarios,
		Duration: o.duration, Warmup: o.warmup, Rounds: o.rounds, ServerProcs: o.procs, ClientProcs: runtime.GOMAXPROCS(0), PendingN: o.pending}
	notes, err := readNotes(o.notes)
	if err != nil {
		return nil, err
	}
	res.Notes = notes
	return res, nil
}

// readNotes returns the hand-written notes file's text ("" for no file).
func readNotes(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// fleet is what one invocation started: the servers by name, and the
// store set-ups to undo once the servers are stopped.
type fleet struct {
	servers  map[string]*server
	cleanups []func()
}

// stop stops every server, then undoes the store set-ups in reverse.
func (f *fleet) stop() {
	for _, s := range f.servers {
		s.stop()
	}
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// startCore starts o's protocol-core servers and checks each on o's
// scenarios.
func (f *fleet) startCore(ctx context.Context, o *options) error {
	for _, name := range o.servers {
		s, err := startServer(ctx, name, o.procs, filepath.Join(o.bin, name), nil, nil)
		if err != nil {
			return err
		}
		f.servers[name] = s
		if err := checkServer(ctx, s, o.procs, o.scenarios, ""); err != nil {
			return err
		}
	}
	return nil
}

// startTSPeer starts the TypeScript SDK peer and checks it on the call
// scenario, the only one it runs.
func (f *fleet) startTSPeer(ctx context.Context, o *options) error {
	s, err := startTSSDK(ctx, o.tssdk, o.procs)
	if err != nil {
		return err
	}
	f.servers[report.TSSDK] = s
	return checkServer(ctx, s, o.procs, []string{wire.ScenarioCall}, "")
}

// startStores starts elicitd and the bare store on each of o's stores
// (PostgreSQL only with a URL) and returns the stores started.
func (f *fleet) startStores(ctx context.Context, o *options) ([]string, error) {
	var stores []string
	for _, st := range o.stores {
		if st == report.Postgres && o.postgres == "" {
			fmt.Fprintln(os.Stderr, "postgres: skipped (no -postgres URL and no ELICIT_BENCH_POSTGRES_DSN)")
			continue
		}
		ss, cleanup, err := startStore(ctx, o, st)
		if cleanup != nil {
			f.cleanups = append(f.cleanups, cleanup)
		}
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			f.servers[s.name] = s
		}
		stores = append(stores, st)
	}
	return stores, nil
}

// measureInProcess runs the micro benchmarks (unless -micro=false) and
// measures the sealed requestState sizes.
func measureInProcess(o *options, res *report.Results) {
	if o.micro {
		res.Micro = runMicro(o.microTime)
	}
	if billing, form, err := micro.StateSizes(); err == nil {
		res.States = &report.StateSizes{Billing: billing, Form: form}
	} else {
		fmt.Fprintf(os.Stderr, "state sizes: %v\n", err)
	}
}

// runPlans measures every plan: per connection count, o.rounds rounds,
// each running the plan's servers in order.
func runPlans(ctx context.Context, o *options, plans []*runPlan, servers map[string]*server) ([]report.Run, error) {
	total := 0
	for _, p := range plans {
		total += len(p.conns) * o.rounds * len(p.servers)
	}
	eta := time.Duration(total) * (o.duration + o.warmup + 300*time.Millisecond)
	fmt.Fprintf(os.Stderr, "%d runs of %s + %s warm-up, about %s\n", total, o.duration, o.warmup, eta.Round(time.Second))
	var runs []report.Run
	n := 0
	for _, p := range plans {
		for _, c := range p.conns {
			for round := 1; round <= o.rounds; round++ {
				for _, name := range p.servers {
					n++
					label := fmt.Sprintf("[%d/%d] %-14s c=%-3d round %d/%d %-16s", n, total, p.scenario, c, round, o.rounds, name)
					r, err := measure(ctx, o, servers[name], p.scenario, p.load(name), c, round, label)
					if err != nil {
						return nil, err
					}
					runs = append(runs, *r)
				}
			}
		}
	}
	return runs, nil
}

// pendingAll leaves o.pending flows pending on each core server, one
// server after the other.
func pendingAll(ctx context.Context, o *options, servers map[string]*server) ([]report.Pending, error) {
	var out []report.Pending
	for _, name := range o.servers {
		p, err := pending(ctx, o, servers[name])
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
		fmt.Fprintf(os.Stderr, "pending  %-8s %d flows: heap %s → %s\n", name, p.Flows, mib(p.HeapBefore), mib(p.HeapAfter))
	}
	return out, nil
}

// busyChecks takes goroutine dumps of elicitd on each store under export
// load; a check that fails is reported and left out.
func busyChecks(ctx context.Context, o *options, stores []string, servers map[string]*server) []report.BusyCheck {
	var out []report.BusyCheck
	for _, st := range stores {
		for _, c := range busyConns(o.flowConns) {
			b, err := busyCheck(ctx, o, servers[report.ElicitdServer(st)], c)
			if err != nil {
				fmt.Fprintf(os.Stderr, "busy check %s: %v\n", st, err)
				continue
			}
			out = append(out, *b)
		}
	}
	return out
}

// profileCore profiles each of o's profiled core servers under every core
// scenario; a profile that fails is reported and left out.
func profileCore(ctx context.Context, o *options, servers map[string]*server) []report.Profile {
	var out []report.Profile
	for _, name := range o.profileSrvs {
		s := servers[name]
		if s == nil {
			continue
		}
		c := profileConns(o.conns)
		for _, sc := range o.scenarios {
			prs, err := profile(ctx, o, s, sc, sc, c, ownCode)
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile %s %s: %v\n", name, sc, err)
				continue
			}
			out = append(out, prs...)
		}
	}
	return out
}

// profileFlows profiles elicitd on each store under each real flow but
// connect; a profile that fails is reported and left out.
func profileFlows(ctx context.Context, o *options, stores []string, servers map[string]*server) []report.Profile {
	var out []report.Profile
	for _, st := range stores {
		s := servers[report.ElicitdServer(st)]
		for _, f := range o.flows {
			if f == wire.ScenarioConnect {
				continue
			}
			prs, err := profile(ctx, o, s, report.FlowScenario(f, st), f, profileConns(o.flowConns), elicitdCode)
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile %s %s: %v\n", s.name, f, err)
				continue
			}
			out = append(out, prs...)
		}
	}
	return out
}

// checkServer checks that s runs with procs and serves one unit of each
// scenario as user.
func checkServer(ctx context.Context, s *server, procs int, scenarios []string, user string) error {
	st, err := s.stats(ctx, false)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if st.GOMAXPROCS != procs {
		return fmt.Errorf("%s: GOMAXPROCS %d, want %d", s.name, st.GOMAXPROCS, procs)
	}
	for _, sc := range scenarios {
		if err := load.Once(ctx, s.url, sc, user); err != nil {
			return fmt.Errorf("%s does not pass the %s scenario: %w", s.name, sc, err)
		}
	}
	fmt.Fprintf(os.Stderr, "started %-16s pid %d  %s  GOMAXPROCS=%d\n", s.name, s.cmd.Process.Pid, s.url, st.GOMAXPROCS)
	return nil
}

// runPlan is one scenario: the servers that run it, in round order, and
// the connection counts.
type runPlan struct {
	scenario string
	servers  []string
	conns    []int
	// loads maps a server to the load scenario it gets, when not
	// scenario itself (the bare store gets insert).
	loads map[string]string
}

func (p *runPlan) load(server string) string {
	if l, ok := p.loads[server]; ok {
		return l
	}
	return p.scenario
}

// plan lists the runs: the core scenarios on the core servers (and the
// TypeScript peer on call), then each real flow on each store.
func plan(o *options, stores []string, servers map[string]*server) []*runPlan {
	var out []*runPlan
	for _, sc := range o.scenarios {
		p := &runPlan{scenario: sc, servers: slices.Clone(o.servers), conns: o.conns}
		if sc == wire.ScenarioCall && servers[report.TSSDK] != nil {
			p.servers = append(p.servers, report.TSSDK)
		}
		out = append(out, p)
	}
	for _, st := range stores {
		for _, f := range o.flows {
			p := &runPlan{scenario: report.FlowScenario(f, st), servers: []string{report.ElicitdServer(st)}, conns: o.flowConns,
				loads: map[string]string{report.ElicitdServer(st): f}}
			if f == wire.ScenarioExport {
				// The bare store first in each round, as the ceiling.
				p.servers = []string{report.StoreServer(st), report.ElicitdServer(st)}
				p.loads[report.StoreServer(st)] = wire.ScenarioInsert
			}
			out = append(out, p)
		}
	}
	return out
}

// busyConns are the connection counts of the goroutine dumps: the
// largest of conns, and 16 if measured.
func busyConns(conns []int) []int {
	out := []int{slices.Max(conns)}
	if slices.Contains(conns, 16) && out[0] != 16 {
		out = append([]int{16}, out...)
	}
	return out
}

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// profileConns is 16 if measured, else the largest measured count below it, else the smallest.
func profileConns(conns []int) int {
	best := 0
	for _, c := range conns {
		if c <= 16 && c > best {
			best = c
		}
	}
	if best == 0 {
		best = conns[0]
	}
	return best
}

// rewrite writes the report from a saved results.json.
func rewrite(o *options) error {
	b, err := os.ReadFile(o.from)
	if err != nil {
		return err
	}
	res := &report.Results{}
	if err := json.Unmarshal(b, res); err != nil {
		return fmt.Errorf("%s: %w", o.from, err)
	}
	if res.Notes, err = readNotes(o.notes); err != nil {
		return err
	}
	o.scenarios = res.Settings.Scenarios
	return writeReport(o, res, o.from)
}

func write(o *options, res *report.Results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(o.artifacts, "results.json")
	if err := os.WriteFile(jsonPath, b, 0o644); err != nil {
		return err
	}
	return writeReport(o, res, jsonPath)
}

func writeReport(o *options, res *report.Results, jsonPath string) error {
	sum := report.Summarize(res)
	if o.chart != "" {
		if err := report.WriteChart(o.chart, report.ChartScenarios(res), sum); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	if o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		chartRel := ""
		if o.chart != "" {
			if rel, err := filepath.Rel(filepath.Dir(o.out), o.chart); err == nil {
				chartRel = rel
			}
		}
		if err := report.WriteMarkdown(f, res, sum, chartRel); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	// A short summary on stderr.
	fmt.Fprintln(os.Stderr)
	for _, t := range report.Targets(res, sum) {
		fmt.Fprintf(os.Stderr, "%-13s %s (%s): %s\n", t.Status, t.Name, t.Want, t.Measured)
	}
	fmt.Fprintf(os.Stderr, "\nresults %s; wrote %s %s\n", jsonPath, o.out, o.chart)
	return nil
}

// server is one running benchmark server process.
type server struct {
	name       string
	cmd        *exec.Cmd
	url, debug string
	// debugKind says what debug serves: "stats" (srvkit's /debug/stats
	// and pprof), "expvar" (elicitd built with benchdebug: /debug/vars
	// and pprof), or "" (nothing: CPU comes from /proc).
	debugKind string
	procs     int
	client    *http.Client
	done      chan struct{}
	// lines are the process's stdout lines until it printed its
	// addresses.
	lines chan string
	// db names the server's PostgreSQL connections (postgres store only).
	db dbClient
}

// launch starts bin with args (and extra environment) with GOMAXPROCS
// set to procs.
func launch(ctx context.Context, name, bin string, args, env []string, procs int) (*server, error) {
	cmd := exec.Command(bin, args...)
	clean := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") && !strings.HasPrefix(e, "GODEBUG=") && !strings.HasPrefix(e, "GOGC=") {
			clean = append(clean, e)
		}
	}
	cmd.Env = append(append(clean, "GOMAXPROCS="+strconv.Itoa(procs)), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, procs: procs, client: &http.Client{Timeout: 30 * time.Second}, done: make(chan struct{}),
		lines: make(chan string, 16)}
	go func() { _ = cmd.Wait(); close(s.done) }()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
		close(s.lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	return s, nil
}

// startServer starts a Go benchmark server (bench/servers/*), which
// prints "mcp=ADDR debug=ADDR" once listening.
func startServer(ctx context.Context, name string, procs int, bin string, args, env []string) (*server, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("server binary: %w (run scripts/bench, which builds them)", err)
	}
	s, err := launch(ctx, name, bin, append([]string{"-addr", "127.0.0.1:0", "-debug", "127.0.0.1:0"}, args...), env, procs)
	if err != nil {
		return nil, err
	}
	s.debugKind = "stats"
	return s, s.awaitAddresses(ctx)
}

// awaitAddresses reads the process's stdout until a line gives mcp=ADDR
// (and debug=ADDR for kind "stats").
func (s *server) awaitAddresses(ctx context.Context) error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.stop()
				return fmt.Errorf("%s exited before listening", s.name)
			}
			for _, f := range strings.Fields(l) {
				if v, ok := strings.CutPrefix(f, "mcp="); ok {
					s.url = "http://" + v + "/mcp"
				}
				if v, ok := strings.CutPrefix(f, "debug="); ok {
					s.debug = "http://" + v
				}
			}
			if s.url != "" && (s.debugKind != "stats" || s.debug != "") {
				return nil
			}
		case <-timeout:
			s.stop()
			return fmt.Errorf("%s did not print its addresses within 30s", s.name)
		case <-ctx.Done():
			s.stop()
			return ctx.Err()
		}
	}
}

// stop ends the process this harness started: SIGTERM, then SIGKILL after 3s.
func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(3 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// stats returns the server's runtime statistics: from srvkit's
// /debug/stats, from elicitd's /debug/vars plus /proc, or (a server
// without a debug listener) CPU from /proc alone. gc forces collections
// first where the server supports it.
func (s *server) stats(ctx context.Context, gc bool) (srvkit.Stats, error) {
	var st srvkit.Stats
	switch s.debugKind {
	case "stats":
		u := s.debug + "/debug/stats"
		if gc {
			u += "?gc=1"
		}
		return st, s.getJSON(ctx, u, &st)
	case "expvar":
		var vars struct {
			Memstats struct {
				Mallocs, TotalAlloc, HeapAlloc, HeapInuse, Sys uint64
				NumGC                                          uint32
			} `json:"memstats"`
		}
		if err := s.getJSON(ctx, s.debug+"/debug/vars", &vars); err != nil {
			return st, err
		}
		m := vars.Memstats
		st = srvkit.Stats{Mallocs: m.Mallocs, TotalAlloc: m.TotalAlloc, HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, Sys: m.Sys, NumGC: m.NumGC}
	}
	cpu, err := procCPU(s.cmd.Process.Pid)
	if err != nil {
		return st, err
	}
	st.CPUNanos, st.GOMAXPROCS = cpu, s.procs
	return st, nil
}

func (s *server) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// rss returns VmRSS and VmHWM of the process, in bytes.
func (s *server) rss() (rss, hwm uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}

func clientCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var isTTY = func() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}()

func progress(label string, d time.Duration) func(int64, time.Duration) {
	last := time.Now()
	return func(n int64, el time.Duration) {
		if !isTTY && time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		line := fmt.Sprintf("%s %4.1fs/%s %9d req %8.0f req/s", label, el.Seconds(), d, n, float64(n)/el.Seconds())
		if isTTY {
			fmt.Fprintf(os.Stderr, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(os.Stderr, line)
		}
	}
}

// measure runs one warm-up and one measured run of one server: load
// loadScenario, reported as scenario.
func measure(ctx context.Context, o *options, s *server, scenario, loadScenario string, c, round int, label string) (*report.Run, error) {
	tr := load.NewTransport(c, o.timeout)
	defer tr.CloseIdleConnections()
	cfg := load.Config{URL: s.url, Scenario: loadScenario, Connections: c, Duration: o.warmup, Timeout: o.timeout, Transport: tr,
		User: flowUser(loadScenario)}
	if o.warmup > 0 {
		if _, err := load.Run(ctx, cfg); err != nil {
			return nil, err
		}
	}
	cfg.User = flowUser(loadScenario)
	before, err := s.stats(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	db0, err := s.db.backendCPU(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	cpu0 := clientCPU()
	cfg.Duration = o.duration
	// RSS is sampled once a second during the run and at its end; VmHWM is
	// the process's peak since it started.
	var maxRSS uint64
	show := progress(label, o.duration)
	cfg.Progress = func(n int64, el time.Duration) {
		rss, _ := s.rss()
		maxRSS = max(maxRSS, rss)
		show(n, el)
	}
	r, err := load.Run(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cpu1 := clientCPU()
	loadNow := loadavg1()
	after, err := s.stats(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	db1, err := s.db.backendCPU(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	dbCPU := backendCPUDelta(db0, db1)
	rss, hwm := s.rss()
	rss = max(rss, maxRSS)
	run := &report.Run{Server: s.name, Scenario: scenario, Conns: c, Round: round, Requests: r.Requests, Errors: r.Errors,
		FirstErr: r.FirstErr, RPS: r.RPS(), P50: r.Latency.Quantile(0.50), P99: r.Latency.Quantile(0.99),
		P999: r.Latency.Quantile(0.999), Max: r.Latency.Max(), RSS: rss, PeakRSS: hwm, StateLen: r.StateLen, Load: loadNow}
	if r.Requests > 0 {
		n := float64(r.Requests)
		run.AllocsPerReq = float64(after.Mallocs-before.Mallocs) / n
		run.BytesPerReq = float64(after.TotalAlloc-before.TotalAlloc) / n
		run.ServerCPUPerReq = time.Duration(float64(after.CPUNanos-before.CPUNanos) / n)
		run.ClientCPUPerReq = time.Duration(float64(cpu1-cpu0) / n)
		if len(db1) > 0 {
			run.DBCPUPerReq = time.Duration(float64(dbCPU) / n)
		}
	}
	if r.Flows > 0 {
		run.FlowsPerSec = r.FlowsPerSecond()
		run.ServerCPUPerFlow = time.Duration(float64(after.CPUNanos-before.CPUNanos) / float64(r.Flows))
		if len(db1) > 0 {
			run.DBCPUPerFlow = time.Duration(float64(dbCPU) / float64(r.Flows))
		}
		for i := range r.Legs {
			run.Legs = append(run.Legs, report.Latency{P50: r.Legs[i].Quantile(0.5), P99: r.Legs[i].Quantile(0.99), P999: r.Legs[i].Quantile(0.999)})
		}
	}
	line := fmt.Sprintf("%s %8.0f req/s  p50 %-9s p99 %-9s p99.9 %-9s %5.0f allocs/req  cpu %-9s rss %s  err %d  load %.1f",
		label, run.RPS, dur(run.P50), dur(run.P99), dur(run.P999), run.AllocsPerReq, dur(run.ServerCPUPerReq), mib(rss), run.Errors, loadNow)
	if run.DBCPUPerReq > 0 {
		line += fmt.Sprintf("  db cpu %s", dur(run.DBCPUPerReq))
	}
	if run.FlowsPerSec > 0 && len(run.Legs) == 2 {
		line += fmt.Sprintf("\n    %8.0f flows/s  cpu/flow %s  first leg p50 %s p99 %s  retry p50 %s p99 %s",
			run.FlowsPerSec, dur(run.ServerCPUPerFlow), dur(run.Legs[0].P50), dur(run.Legs[0].P99), dur(run.Legs[1].P50), dur(run.Legs[1].P99))
	}
	if isTTY {
		fmt.Fprintf(os.Stderr, "\r\033[K%s\n", line)
	} else {
		fmt.Fprintln(os.Stderr, line)
	}
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "    first error: %s\n", r.FirstErr)
	}
	return run, nil
}

func dur(d time.Duration) string {
	return d.Round(time.Microsecond).String()
}

// pending starts o.pending flows (first legs only) on one server and
// measures the live heap before and after, each after forced GCs. The
// connections stay open across both measurements.
func pending(ctx context.Context, o *options, s *server) (*report.Pending, error) {
	c := profileConns(o.conns)
	tr := load.NewTransport(c, o.timeout)
	defer tr.CloseIdleConnections()
	cfg := load.Config{URL: s.url, Scenario: wire.ScenarioMRTR, FirstLegOnly: true, Connections: c,
		Duration: 2 * time.Minute, MaxUnits: 200, Timeout: o.timeout, Transport: tr}
	if _, err := load.Run(ctx, cfg); err != nil { // open the connections
		return nil, err
	}
	before, err := s.stats(ctx, true)
	if err != nil {
		return nil, err
	}
	cfg.MaxUnits = int64(o.pending)
	cfg.Progress = progress(fmt.Sprintf("pending  %-8s", s.name), cfg.Duration)
	r, err := load.Run(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if isTTY {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	after, err := s.stats(ctx, true)
	if err != nil {
		return nil, err
	}
	return &report.Pending{Server: s.name, Flows: r.Requests, Errors: r.Errors, HeapBefore: before.HeapAlloc, HeapAfter: after.HeapAlloc}, nil
}

// profile takes a CPU and an allocation profile of s while it serves
// loadScenario at c connections, and renders `go tool pprof -top` of
// each, the packages view with the pprof -show filter own; they are
// reported under scenario.
func profile(ctx context.Context, o *options, s *server, scenario, loadScenario string, c int, own string) ([]report.Profile, error) {
	secs := max(2, int(o.duration.Seconds()))
	tr := load.NewTransport(c, o.timeout)
	defer tr.CloseIdleConnections()
	cfg := load.Config{URL: s.url, Scenario: loadScenario, Connections: c, Duration: 500 * time.Millisecond, Timeout: o.timeout, Transport: tr,
		User: flowUser(loadScenario)}
	if _, err := load.Run(ctx, cfg); err != nil {
		return nil, err
	}
	kinds := []struct{ kind, path string }{
		{"cpu", "/debug/pprof/profile"},
		{"allocs", "/debug/pprof/allocs"},
	}
	files := make([]string, len(kinds))
	errs := make(chan error, len(kinds))
	for i, k := range kinds {
		files[i] = filepath.Join(o.artifacts, fmt.Sprintf("%s-%s-c%d.%s.pprof", s.name, scenario, c, k.kind))
		go func() { errs <- fetch(ctx, s.debug+k.path+"?seconds="+strconv.Itoa(secs), files[i]) }()
	}
	cfg.Duration = time.Duration(secs)*time.Second + time.Second
	cfg.Progress = progress(fmt.Sprintf("profile  %-8s %s c=%d", s.name, scenario, c), cfg.Duration)
	if _, err := load.Run(ctx, cfg); err != nil {
		return nil, err
	}
	if isTTY {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	for range kinds {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	views := []struct {
		file int
		kind string
		args []string
	}{
		{0, "cpu, flat", nil},
		{0, "cpu, cumulative", []string{"-cum"}},
		{0, report.KindPackages, []string{"-cum", "-show=" + own}},
		{1, "allocated bytes", []string{"-sample_index=alloc_space"}},
	}
	var out []report.Profile
	for _, v := range views {
		args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, v.args...)
		args = append(args, s.cmd.Path, files[v.file])
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		top, err := exec.CommandContext(pctx, "go", args...).Output()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("go tool pprof: %w", err)
		}
		out = append(out, report.Profile{Server: s.name, Scenario: scenario, Conns: c, Kind: v.kind, File: files[v.file], Top: trimTop(string(top))})
	}
	return out, nil
}

// ownCode selects elicit's protocol packages, the top-level JSON calls and
// the per-connection loop in a pprof -show filter, so a cumulative top
// reads as "where the server's CPU goes, by our function".
const ownCode = `mcp-elicit/elicit/(jsonrpc|mcp|mcpserver|streamhttp|reqstate|elicit|auth)\.|encoding/json\.(Unmarshal|Marshal)$|net/http\.\(\*conn\)\.serve$`

// elicitdCode is ownCode for elicitd: also the store drivers, the apps,
// connect, the legacy bridge and elicitd's own code, and the database
// drivers' entry points.
const elicitdCode = `mcp-elicit/elicit/(jsonrpc|mcp|mcpserver|streamhttp|reqstate|elicit|auth|store|connect|legacy|examples|cmd)|modernc.org/sqlite\.\(\*(conn|stmt)\)\.(exec|query)|jackc/pgx/v5\.\(\*Conn\)\.(Exec|Query|SendBatch)$|encoding/json\.(Unmarshal|Marshal)$|net/http\.\(\*conn\)\.serve$`

// trimTop drops the File and Time lines of a pprof -top header.
func trimTop(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "File: ") || strings.HasPrefix(l, "Time: ") || strings.HasPrefix(l, "Build ID: ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runMicro runs the micro benchmarks in-process for about d each.
func runMicro(d time.Duration) []report.Micro {
	testing.Init()
	_ = flag.Set("test.benchtime", d.String())
	var out []report.Micro
	for _, m := range micro.All {
		fmt.Fprintf(os.Stderr, "micro    %-40s", m.Name)
		r := testing.Benchmark(m.F)
		if r.N == 0 {
			fmt.Fprintln(os.Stderr, " failed")
			continue
		}
		mr := report.Micro{Name: m.Name, NsPerOp: float64(r.T.Nanoseconds()) / float64(r.N), BytesPerOp: r.AllocedBytesPerOp(), AllocsPerOp: r.AllocsPerOp(), N: r.N}
		fmt.Fprintf(os.Stderr, " %10.0f ns/op %6d B/op %4d allocs/op\n", mr.NsPerOp, mr.BytesPerOp, mr.AllocsPerOp)
		out = append(out, mr)
	}
	return out
}

func machine() report.Machine {
	m := report.Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadavg()}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Source = "git " + strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}
