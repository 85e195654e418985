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
// server RSS (/proc/PID/status); ratios between servers are computed
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
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("mcpbench: ")
	var o options
	exe, _ := os.Executable()
	var conns, scenarios, servers, profileSrvs string
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
	flag.Parse()
	var err error
	if o.conns, err = parseInts(conns); err != nil {
		log.Fatalf("-connections: %v", err)
	}
	o.scenarios, o.servers, o.profileSrvs = split(scenarios), split(servers), split(profileSrvs)
	if o.rounds < 1 || o.duration <= 0 || o.procs < 1 {
		log.Fatal("-rounds, -duration and -procs must be positive")
	}
	for _, c := range o.conns {
		if c < 1 || c > 1024 {
			log.Fatalf("-connections: %d is out of 1..1024", c)
		}
	}
	if o.chart == "" && o.out != "" {
		o.chart = filepath.Join(filepath.Dir(o.out), "throughput.png")
	}
	if o.command == "" {
		o.command = strings.Join(os.Args, " ")
	}
	if o.from != "" {
		if err := rewrite(&o); err != nil {
			log.Fatal(err)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &o); err != nil {
		log.Fatal(err)
	}
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
	if o.artifacts == "" {
		d, err := os.MkdirTemp("", "mcpbench-")
		if err != nil {
			return err
		}
		o.artifacts = d
	}
	if err := os.MkdirAll(o.artifacts, 0o755); err != nil {
		return err
	}
	res := &report.Results{Started: started, Machine: machine()}
	res.Settings = report.Settings{Command: o.command, Args: os.Args, Connections: o.conns, Scenarios: o.scenarios,
		Duration: o.duration, Warmup: o.warmup, Rounds: o.rounds, ServerProcs: o.procs, ClientProcs: runtime.GOMAXPROCS(0), PendingN: o.pending}
	if o.notes != "" {
		b, err := os.ReadFile(o.notes)
		if err != nil {
			return err
		}
		res.Notes = string(b)
	}

	servers := map[string]*server{}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range o.servers {
		s, err := startServer(ctx, filepath.Join(o.bin, name), name, o.procs)
		if err != nil {
			return err
		}
		servers[name] = s
		st, err := s.stats(ctx, false)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if st.GOMAXPROCS != o.procs {
			return fmt.Errorf("%s: GOMAXPROCS %d, want %d", name, st.GOMAXPROCS, o.procs)
		}
		for _, sc := range o.scenarios {
			if err := load.Once(ctx, s.url, sc); err != nil {
				return fmt.Errorf("%s does not pass the %s scenario: %w", name, sc, err)
			}
		}
		fmt.Fprintf(os.Stderr, "started %-8s pid %d  %s  GOMAXPROCS=%d\n", name, s.cmd.Process.Pid, s.url, st.GOMAXPROCS)
	}

	if o.micro {
		res.Micro = runMicro(o.microTime)
	}
	if billing, form, err := micro.StateSizes(); err == nil {
		res.States = &report.StateSizes{Billing: billing, Form: form}
	} else {
		fmt.Fprintf(os.Stderr, "state sizes: %v\n", err)
	}

	total := len(o.scenarios) * len(o.conns) * o.rounds * len(o.servers)
	eta := time.Duration(total) * (o.duration + o.warmup + 300*time.Millisecond)
	fmt.Fprintf(os.Stderr, "%d runs of %s + %s warm-up, about %s\n", total, o.duration, o.warmup, eta.Round(time.Second))
	n := 0
	for _, sc := range o.scenarios {
		for _, c := range o.conns {
			for round := 1; round <= o.rounds; round++ {
				for _, name := range o.servers {
					n++
					label := fmt.Sprintf("[%d/%d] %-8s c=%-3d round %d/%d %-7s", n, total, sc, c, round, o.rounds, name)
					r, err := measure(ctx, o, servers[name], sc, c, round, label)
					if err != nil {
						return err
					}
					res.Runs = append(res.Runs, *r)
				}
			}
		}
	}
	if o.pending > 0 {
		for _, name := range o.servers {
			p, err := pending(ctx, o, servers[name])
			if err != nil {
				return err
			}
			res.Pending = append(res.Pending, *p)
			fmt.Fprintf(os.Stderr, "pending  %-8s %d flows: heap %s → %s\n", name, p.Flows, mib(p.HeapBefore), mib(p.HeapAfter))
		}
	}
	if o.profile {
		for _, name := range o.profileSrvs {
			s := servers[name]
			if s == nil {
				continue
			}
			c := profileConns(o.conns)
			for _, sc := range o.scenarios {
				prs, err := profile(ctx, o, s, sc, c)
				if err != nil {
					fmt.Fprintf(os.Stderr, "profile %s %s: %v\n", name, sc, err)
					continue
				}
				res.Profiles = append(res.Profiles, prs...)
			}
		}
	}
	res.Machine.LoadAfter = loadavg()
	res.Took = time.Since(started)
	return write(o, res)
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
	if o.notes != "" {
		nb, err := os.ReadFile(o.notes)
		if err != nil {
			return err
		}
		res.Notes = string(nb)
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
		if err := report.WriteChart(o.chart, o.scenarios, sum); err != nil {
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
	client     *http.Client
	done       chan struct{}
}

func startServer(ctx context.Context, bin, name string, procs int) (*server, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("server binary: %w (run scripts/bench, which builds them)", err)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-debug", "127.0.0.1:0")
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") && !strings.HasPrefix(e, "GODEBUG=") && !strings.HasPrefix(e, "GOGC=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, client: &http.Client{Timeout: 30 * time.Second}, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			s.stop()
			return nil, fmt.Errorf("%s exited before listening", name)
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "mcp="); ok {
				s.url = "http://" + v + "/mcp"
			}
			if v, ok := strings.CutPrefix(f, "debug="); ok {
				s.debug = "http://" + v
			}
		}
	case <-time.After(10 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s did not print its addresses within 10s", name)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	if s.url == "" || s.debug == "" {
		s.stop()
		return nil, fmt.Errorf("%s printed no addresses", name)
	}
	return s, nil
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

func (s *server) stats(ctx context.Context, gc bool) (srvkit.Stats, error) {
	var st srvkit.Stats
	u := s.debug + "/debug/stats"
	if gc {
		u += "?gc=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return st, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("stats: HTTP %d", resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
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

// measure runs one warm-up and one measured run of one server.
func measure(ctx context.Context, o *options, s *server, scenario string, c, round int, label string) (*report.Run, error) {
	tr := load.NewTransport(c, o.timeout)
	defer tr.CloseIdleConnections()
	cfg := load.Config{URL: s.url, Scenario: scenario, Connections: c, Duration: o.warmup, Timeout: o.timeout, Transport: tr}
	if o.warmup > 0 {
		if _, err := load.Run(ctx, cfg); err != nil {
			return nil, err
		}
	}
	before, err := s.stats(ctx, false)
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
	after, err := s.stats(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	rss, hwm := s.rss()
	rss = max(rss, maxRSS)
	run := &report.Run{Server: s.name, Scenario: scenario, Conns: c, Round: round, Requests: r.Requests, Errors: r.Errors,
		FirstErr: r.FirstErr, RPS: r.RPS(), P50: r.Latency.Quantile(0.50), P99: r.Latency.Quantile(0.99),
		P999: r.Latency.Quantile(0.999), Max: r.Latency.Max(), RSS: rss, PeakRSS: hwm, StateLen: r.StateLen}
	if r.Requests > 0 {
		n := float64(r.Requests)
		run.AllocsPerReq = float64(after.Mallocs-before.Mallocs) / n
		run.BytesPerReq = float64(after.TotalAlloc-before.TotalAlloc) / n
		run.ServerCPUPerReq = time.Duration(float64(after.CPUNanos-before.CPUNanos) / n)
		run.ClientCPUPerReq = time.Duration(float64(cpu1-cpu0) / n)
	}
	line := fmt.Sprintf("%s %8.0f req/s  p50 %-9s p99 %-9s p99.9 %-9s %5.0f allocs/req  cpu %-9s rss %s  err %d",
		label, run.RPS, dur(run.P50), dur(run.P99), dur(run.P999), run.AllocsPerReq, dur(run.ServerCPUPerReq), mib(rss), run.Errors)
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
// scenario at c connections, and renders `go tool pprof -top` of each.
func profile(ctx context.Context, o *options, s *server, scenario string, c int) ([]report.Profile, error) {
	secs := max(2, int(o.duration.Seconds()))
	tr := load.NewTransport(c, o.timeout)
	defer tr.CloseIdleConnections()
	cfg := load.Config{URL: s.url, Scenario: scenario, Connections: c, Duration: 500 * time.Millisecond, Timeout: o.timeout, Transport: tr}
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
		{0, report.KindPackages, []string{"-cum", "-show=" + ownCode}},
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
