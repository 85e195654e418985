// Package report turns mcpbench's measurements into BENCHMARKS.md and the
// throughput chart: medians over rounds, ratios computed round by round
// (pair by pair, then the median), and the targets checked.
package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Server names, in the order they run in every round.
const (
	Ceiling = "ceiling"
	GoSDK   = "gosdk"
	Elicit  = "elicit"
	// TSSDK is the TypeScript SDK v2 server (call scenario only).
	TSSDK = "tssdk"
)

// Servers lists the protocol-core servers in run order.
var Servers = []string{Ceiling, GoSDK, Elicit}

// The stores the real flows run on, and their servers: elicitd on the
// store, and the bare store (one durable insert per request, no MCP).
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Stores lists the stores in report order.
var Stores = []string{SQLite, Postgres}

// ElicitdServer and StoreServer name the servers of a store.
func ElicitdServer(store string) string { return "elicitd-" + store }
func StoreServer(store string) string   { return "store-" + store }

// FlowScenario names the Run.Scenario of flow (export, connect, status)
// on store, e.g. "export-sqlite".
func FlowScenario(flow, store string) string { return flow + "-" + store }

// Results is everything one mcpbench invocation measured.
type Results struct {
	Machine  Machine  `json:"machine"`
	Settings Settings `json:"settings"`
	Runs     []Run    `json:"runs"`
	Micro    []Micro  `json:"micro,omitempty"`
	// Busy are the goroutine dumps taken from elicitd under export load.
	Busy     []BusyCheck   `json:"busy,omitempty"`
	States   *StateSizes   `json:"states,omitempty"`
	Pending  []Pending     `json:"pending,omitempty"`
	Profiles []Profile     `json:"profiles,omitempty"`
	Started  time.Time     `json:"started"`
	Took     time.Duration `json:"took"`
	// Notes is hand-written analysis appended to BENCHMARKS.md.
	Notes string `json:"-"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU       string `json:"cpu"`
	NumCPU    int    `json:"numCPU"`
	MemTotal  string `json:"memTotal"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"goVersion"`
	// Source is `git describe --always --dirty` of the working tree.
	Source     string `json:"source"`
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
}

// Settings are the run's parameters.
type Settings struct {
	Command     string        `json:"command"`
	Args        []string      `json:"args"`
	Connections []int         `json:"connections"`
	Scenarios   []string      `json:"scenarios"`
	Duration    time.Duration `json:"duration"`
	Warmup      time.Duration `json:"warmup"`
	Rounds      int           `json:"rounds"`
	ServerProcs int           `json:"serverProcs"`
	ClientProcs int           `json:"clientProcs"`
	PendingN    int           `json:"pendingFlows"`
	// Flows, Stores and FlowConnections are the real-flow settings.
	Flows           []string `json:"flows,omitempty"`
	Stores          []string `json:"stores,omitempty"`
	FlowConnections []int    `json:"flowConnections,omitempty"`
	// TSSDK is the TypeScript peer's packages ("" when not run).
	TSSDK string `json:"tssdk,omitempty"`
}

// Run is one measured run of one server.
type Run struct {
	Server   string  `json:"server"`
	Scenario string  `json:"scenario"`
	Conns    int     `json:"connections"`
	Round    int     `json:"round"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	FirstErr string  `json:"firstError,omitempty"`
	RPS      float64 `json:"rps"`
	// Latencies in nanoseconds.
	P50  time.Duration `json:"p50"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p999"`
	Max  time.Duration `json:"max"`
	// AllocsPerReq and BytesPerReq are server allocations per request.
	AllocsPerReq float64 `json:"allocsPerReq"`
	BytesPerReq  float64 `json:"bytesPerReq"`
	// ServerCPUPerReq is server user+system CPU time per request;
	// ClientCPUPerReq the load generator's.
	ServerCPUPerReq time.Duration `json:"serverCPUPerReq"`
	ClientCPUPerReq time.Duration `json:"clientCPUPerReq"`
	// RSS is the largest VmRSS sampled during the run (once a second and at
	// the end); PeakRSS the process's VmHWM after the run. Bytes.
	RSS     uint64 `json:"rss"`
	PeakRSS uint64 `json:"peakRSS"`
	// StateLen is the requestState length seen on the wire (MRTR).
	StateLen int `json:"stateLen,omitempty"`
	// FlowsPerSec and ServerCPUPerFlow count two-leg flows (mrtr,
	// export); Legs are the first legs' and the retries' latencies.
	FlowsPerSec      float64       `json:"flowsPerSec,omitempty"`
	ServerCPUPerFlow time.Duration `json:"serverCPUPerFlow,omitempty"`
	Legs             []Latency     `json:"legs,omitempty"`
	// DBCPUPerReq and DBCPUPerFlow are the CPU time of the PostgreSQL
	// backends serving the server's connections (user+system, from
	// /proc), per request and per flow; zero when the database is not
	// on this machine or the store is not PostgreSQL.
	DBCPUPerReq  time.Duration `json:"dbCPUPerReq,omitempty"`
	DBCPUPerFlow time.Duration `json:"dbCPUPerFlow,omitempty"`
	// Load is the 1-minute load average at the end of the run.
	Load float64 `json:"load,omitempty"`
}

// Latency is one latency distribution's percentiles.
type Latency struct {
	P50  time.Duration `json:"p50"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p999"`
}

// UnitRate is what a throughput ratio compares: flows per second for the
// export flow, requests per second otherwise (MRTR: legs).
func (r *Run) UnitRate() float64 {
	if r.Scenario != "mrtr" && r.FlowsPerSec > 0 {
		return r.FlowsPerSec
	}
	return r.RPS
}

// BusyCheck counts, over goroutine dumps of an elicitd process taken
// while it served the export flow, the goroutines serving requests and
// where they were: in SQLite's busy handler (sleeping for a lock), waiting
// for the store's writer, or waiting for a pooled PostgreSQL connection.
type BusyCheck struct {
	Server  string `json:"server"`
	Conns   int    `json:"connections"`
	Samples int    `json:"samples"`
	// Requests sums the goroutines serving an HTTP request over the dumps.
	Requests int `json:"requests"`
	// BusyHandler sums those inside modernc.org/sqlite's busy handler.
	BusyHandler int `json:"busyHandler"`
	// Writer sums those waiting for store/sqlite's writer.
	Writer int `json:"writer"`
	// Acquire sums those waiting in pgxpool's Acquire, Postgres those in
	// a PostgreSQL round trip (pgconn).
	Acquire  int `json:"acquire"`
	Postgres int `json:"postgres"`
	// File is the first dump, kept in the artifacts directory.
	File string `json:"file,omitempty"`
}

// Micro is one micro benchmark result.
type Micro struct {
	Name        string  `json:"name"`
	NsPerOp     float64 `json:"nsPerOp"`
	BytesPerOp  int64   `json:"bytesPerOp"`
	AllocsPerOp int64   `json:"allocsPerOp"`
	N           int     `json:"n"`
}

// StateSizes are the sealed requestState lengths (bytes on the wire).
type StateSizes struct {
	Billing int `json:"billing"`
	Form    int `json:"form"`
}

// Pending is the heap growth of a server holding N started flows.
type Pending struct {
	Server     string `json:"server"`
	Flows      int64  `json:"flows"`
	Errors     int64  `json:"errors"`
	HeapBefore uint64 `json:"heapBefore"`
	HeapAfter  uint64 `json:"heapAfter"`
}

// Growth returns HeapAfter − HeapBefore (may be negative).
func (p Pending) Growth() int64 { return int64(p.HeapAfter) - int64(p.HeapBefore) }

// Profile is a pprof top taken while a server was under load.
type Profile struct {
	Server   string `json:"server"`
	Scenario string `json:"scenario"`
	Conns    int    `json:"connections"`
	Kind     string `json:"kind"` // "cpu, flat", "cpu, cumulative" or "allocated bytes"
	File     string `json:"file"`
	Top      string `json:"top"`
}

// KindPackages is the Profile.Kind of the cumulative CPU top restricted
// to elicit's own packages (the excerpt shown next to missed targets).
const KindPackages = "cpu, cumulative, elicit's packages only"

// Cell is the summary of one (scenario, connections, server).
type Cell struct {
	RPS, AllocsPerReq, BytesPerReq float64
	P50, P99, P999                 time.Duration
	ServerCPU                      time.Duration
	RSS                            uint64
	Errors                         int64
	Rounds                         int
	// FlowsPerSec, ServerCPUPerFlow, Legs, DBCPU (per request) and
	// DBCPUPerFlow as in Run (medians).
	FlowsPerSec         float64
	ServerCPUPerFlow    time.Duration
	Legs                []Latency
	DBCPU, DBCPUPerFlow time.Duration
	// Load is the largest 1-minute load average seen at a run's end.
	Load float64
}

// Key identifies a (scenario, connections) pair.
type Key struct {
	Scenario string
	Conns    int
}

// Summary is Results reduced to medians and pairwise ratios.
type Summary struct {
	Cells map[Key]map[string]*Cell
	// Ratios[key]["elicit/ceiling"] is the median over rounds of the
	// per-round throughput ratio.
	Ratios map[Key]map[string]float64
	// CPURatios is the same for server CPU per request (inverse, so that
	// larger is better for the numerator: ceilingCPU/elicitCPU).
	CPURatios map[Key]map[string]float64
	Keys      []Key
}

// Ratio names.
const (
	RatioElicitCeiling = "elicit/ceiling"
	RatioElicitGoSDK   = "elicit/gosdk"
	RatioGoSDKCeiling  = "gosdk/ceiling"
	RatioCeilingGoSDK  = "ceiling/gosdk"
	RatioElicitTSSDK   = "elicit/tssdk"
	RatioTSSDKCeiling  = "tssdk/ceiling"
)

// RatioFlowStore is the ratio of elicitd's flow rate to the bare store's
// insert rate on store.
func RatioFlowStore(store string) string { return ElicitdServer(store) + "/" + StoreServer(store) }

var ratioPairs = []struct{ name, num, den string }{
	{RatioElicitCeiling, Elicit, Ceiling},
	{RatioElicitGoSDK, Elicit, GoSDK},
	{RatioGoSDKCeiling, GoSDK, Ceiling},
	{RatioCeilingGoSDK, Ceiling, GoSDK},
	{RatioElicitTSSDK, Elicit, TSSDK},
	{RatioTSSDKCeiling, TSSDK, Ceiling},
	{RatioFlowStore(SQLite), ElicitdServer(SQLite), StoreServer(SQLite)},
	{RatioFlowStore(Postgres), ElicitdServer(Postgres), StoreServer(Postgres)},
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

// Summarize computes medians and pairwise ratios.
func Summarize(r *Results) *Summary {
	s := &Summary{Cells: map[Key]map[string]*Cell{}}
	cells := map[Key]map[string]*cellRuns{}
	byRound := map[roundKey]map[string]Run{}
	for _, run := range r.Runs {
		k := Key{run.Scenario, run.Conns}
		if cells[k] == nil {
			cells[k] = map[string]*cellRuns{}
			s.Keys = append(s.Keys, k)
		}
		cr := cells[k][run.Server]
		if cr == nil {
			cr = &cellRuns{}
			cells[k][run.Server] = cr
		}
		cr.add(run)
		rk := roundKey{k, run.Round}
		if byRound[rk] == nil {
			byRound[rk] = map[string]Run{}
		}
		byRound[rk][run.Server] = run
	}
	for k, m := range cells {
		s.Cells[k] = map[string]*Cell{}
		for srv, cr := range m {
			s.Cells[k][srv] = cr.cell()
		}
	}
	s.Ratios, s.CPURatios = roundRatios(byRound)
	sort.Slice(s.Keys, func(i, j int) bool {
		a, b := s.Keys[i], s.Keys[j]
		if a.Scenario != b.Scenario {
			return scenarioOrder(a.Scenario) < scenarioOrder(b.Scenario)
		}
		return a.Conns < b.Conns
	})
	return s
}

// cellRuns gathers the runs of one (scenario, connections, server) over
// the rounds, for their medians.
type cellRuns struct {
	rps, allocs, bytes []float64
	p50, p99, p999     []time.Duration
	cpu                []time.Duration
	rss                uint64
	errs               int64
	flows              []float64
	cpuFlow            []time.Duration
	dbCPU, dbCPUFlow   []time.Duration
	// legs[i] are leg i's p50s, p99s and p99.9s.
	legs [][3][]time.Duration
	load float64
}

func (a *cellRuns) add(run Run) {
	a.rps = append(a.rps, run.RPS)
	a.allocs = append(a.allocs, run.AllocsPerReq)
	a.bytes = append(a.bytes, run.BytesPerReq)
	a.p50, a.p99, a.p999 = append(a.p50, run.P50), append(a.p99, run.P99), append(a.p999, run.P999)
	a.cpu = append(a.cpu, run.ServerCPUPerReq)
	a.rss = max(a.rss, run.RSS)
	a.errs += run.Errors
	a.load = max(a.load, run.Load)
	if run.DBCPUPerReq > 0 {
		a.dbCPU = append(a.dbCPU, run.DBCPUPerReq)
	}
	if run.FlowsPerSec > 0 {
		a.flows = append(a.flows, run.FlowsPerSec)
		a.cpuFlow = append(a.cpuFlow, run.ServerCPUPerFlow)
		if run.DBCPUPerFlow > 0 {
			a.dbCPUFlow = append(a.dbCPUFlow, run.DBCPUPerFlow)
		}
	}
	for i, l := range run.Legs {
		if len(a.legs) <= i {
			a.legs = append(a.legs, [3][]time.Duration{})
		}
		a.legs[i][0] = append(a.legs[i][0], l.P50)
		a.legs[i][1] = append(a.legs[i][1], l.P99)
		a.legs[i][2] = append(a.legs[i][2], l.P999)
	}
}

// cell reduces the runs to medians (largest RSS and load, summed errors).
func (a *cellRuns) cell() *Cell {
	c := &Cell{RPS: median(a.rps), AllocsPerReq: median(a.allocs), BytesPerReq: median(a.bytes),
		P50: medianDur(a.p50), P99: medianDur(a.p99), P999: medianDur(a.p999), ServerCPU: medianDur(a.cpu),
		RSS: a.rss, Errors: a.errs, Rounds: len(a.rps), Load: a.load}
	if len(a.flows) > 0 {
		c.FlowsPerSec, c.ServerCPUPerFlow = median(a.flows), medianDur(a.cpuFlow)
	}
	if len(a.dbCPU) > 0 {
		c.DBCPU = medianDur(a.dbCPU)
	}
	if len(a.dbCPUFlow) > 0 {
		c.DBCPUPerFlow = medianDur(a.dbCPUFlow)
	}
	for _, l := range a.legs {
		c.Legs = append(c.Legs, Latency{P50: medianDur(l[0]), P99: medianDur(l[1]), P999: medianDur(l[2])})
	}
	return c
}

// roundKey identifies one round of a (scenario, connections) pair.
type roundKey struct {
	Key
	round int
}

// roundRatios takes every ratio pair's throughput ratio and server-CPU
// ratio (den ÷ num) within each round, and returns their medians over
// the rounds.
func roundRatios(byRound map[roundKey]map[string]Run) (ratios, cpuRatios map[Key]map[string]float64) {
	rate, cpu := map[Key]map[string][]float64{}, map[Key]map[string][]float64{}
	for rk, runs := range byRound {
		if rate[rk.Key] == nil {
			rate[rk.Key], cpu[rk.Key] = map[string][]float64{}, map[string][]float64{}
		}
		for _, p := range ratioPairs {
			num, ok1 := runs[p.num]
			den, ok2 := runs[p.den]
			if !ok1 || !ok2 || den.UnitRate() == 0 {
				continue
			}
			rate[rk.Key][p.name] = append(rate[rk.Key][p.name], num.UnitRate()/den.UnitRate())
			if num.ServerCPUPerReq > 0 {
				cpu[rk.Key][p.name] = append(cpu[rk.Key][p.name], float64(den.ServerCPUPerReq)/float64(num.ServerCPUPerReq))
			}
		}
	}
	return medians(rate), medians(cpu)
}

func medians(xs map[Key]map[string][]float64) map[Key]map[string]float64 {
	out := make(map[Key]map[string]float64, len(xs))
	for k, m := range xs {
		out[k] = map[string]float64{}
		for name, v := range m {
			out[k][name] = median(v)
		}
	}
	return out
}

func scenarioOrder(sc string) int {
	order := []string{"call", "mrtr", "discover"}
	for _, st := range Stores {
		for _, f := range []string{"export", "connect", "status"} {
			order = append(order, FlowScenario(f, st))
		}
	}
	for i, o := range order {
		if o == sc {
			return i
		}
	}
	return len(order)
}

// PeakRSS returns each server's VmHWM over the whole invocation.
func PeakRSS(r *Results) map[string]uint64 {
	out := map[string]uint64{}
	for _, run := range r.Runs {
		out[run.Server] = max(out[run.Server], run.PeakRSS)
	}
	return out
}

// Ratio returns a median ratio, or NaN when it was not measured.
func (s *Summary) Ratio(k Key, name string) float64 {
	if m, ok := s.Ratios[k]; ok {
		if v, ok := m[name]; ok {
			return v
		}
	}
	return math.NaN()
}

// Target is one of the targets, checked.
type Target struct {
	Name     string
	Want     string
	Measured string
	// Status is "met", "missed" or "not measured".
	Status string
	// Scenario names the load scenario whose profile explains a miss ("" for none).
	Scenario string
}

func status(ok, measured bool) string {
	switch {
	case !measured:
		return "not measured"
	case ok:
		return "met"
	}
	return "missed"
}

// Targets checks the targets against r and s.
func Targets(r *Results, s *Summary) []Target {
	var out []Target
	ratioTarget := func(name, scenario, ratio string, want float64, wantText string) {
		var parts []string
		ok, measured := true, false
		for _, k := range s.Keys {
			if k.Scenario != scenario {
				continue
			}
			v := s.Ratio(k, ratio)
			if math.IsNaN(v) {
				continue
			}
			measured = true
			ok = ok && v >= want
			parts = append(parts, fmt.Sprintf("C=%d: %s", k.Conns, fmtRatio(v)))
		}
		out = append(out, Target{Name: name, Want: wantText, Measured: join(parts), Status: status(ok, measured), Scenario: scenario})
	}
	ratioTarget("plain tools/call vs ceiling", "call", RatioElicitCeiling, 0.5, "≥ 50% of ceiling req/s")
	ratioTarget("MRTR legs vs ceiling", "mrtr", RatioElicitCeiling, 0.4, "≥ 40% of ceiling req/s")
	ratioTarget("plain tools/call vs go-sdk", "call", RatioElicitGoSDK, 5, "≥ 5× go-sdk v1.8.0 stateless")
	ratioTarget("MRTR legs vs go-sdk", "mrtr", RatioElicitGoSDK, 5, "≥ 5× go-sdk v1.8.0 stateless")

	var parts []string
	ok, measured := true, false
	missScenario := ""
	for _, k := range s.Keys {
		if k.Conns != 16 {
			continue
		}
		if c := s.Cells[k][Elicit]; c != nil {
			measured = true
			if c.P99 >= 5*time.Millisecond {
				ok = false
				missScenario = k.Scenario
			}
			ref := ""
			if cc := s.Cells[k][Ceiling]; cc != nil {
				ref = fmt.Sprintf(" (ceiling %s)", fmtDur(cc.P99))
			}
			parts = append(parts, fmt.Sprintf("%s: %s%s", k.Scenario, fmtDur(c.P99), ref))
		}
	}
	out = append(out, Target{Name: "p99 latency at 16 connections (elicit)", Want: "< 5 ms", Measured: join(parts), Status: status(ok, measured), Scenario: missScenario})

	for _, m := range r.Micro {
		if m.Name == "reqstate/SealOpen/billing" {
			out = append(out, Target{Name: "seal + open (billing state)", Want: "< 5 µs", Measured: fmtDur(time.Duration(m.NsPerOp)),
				Status: status(m.NsPerOp < 5000, true)})
		}
	}
	if len(r.Micro) == 0 {
		out = append(out, Target{Name: "seal + open (billing state)", Want: "< 5 µs", Status: "not measured"})
	}
	if st := r.States; st != nil {
		out = append(out, Target{Name: "sealed state, billing flow", Want: "≤ 512 bytes", Measured: fmt.Sprintf("%d bytes", st.Billing),
			Status: status(st.Billing <= 512, true)})
	} else {
		out = append(out, Target{Name: "sealed state, billing flow", Want: "≤ 512 bytes", Status: "not measured"})
	}
	out = append(out, flowTargets(r, s)...)

	pt := Target{Name: "heap growth, flows started and left pending (elicit)", Want: "< 2 MB", Status: "not measured"}
	for _, p := range r.Pending {
		if p.Server == Elicit {
			pt.Name = fmt.Sprintf("heap growth, %d flows started and left pending (elicit)", p.Flows)
			pt.Measured = fmtBytesSigned(p.Growth())
			pt.Status = status(p.Growth() < 2<<20 && p.Errors == 0, true)
		}
	}
	out = append(out, pt)
	return out
}

func join(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += "; "
		}
		out += p
	}
	return out
}

// flowTargets checks the real flows: export against the bare store and
// its tail on SQLite, the busy handler, the PostgreSQL accept leg, and the
// read-only tool's CPU against the core's call.
func flowTargets(r *Results, s *Summary) []Target {
	return []Target{
		sqliteExportTarget(s),
		sqliteAcceptTailTarget(s),
		busyHandlerTarget(r),
		postgresAcceptTarget(s),
		readOnlyCPUTarget(s),
	}
}

// cell returns the summary of srv's runs of scenario at conns
// connections, or nil when it did not run.
func (s *Summary) cell(scenario string, conns int, srv string) *Cell {
	if m := s.Cells[Key{scenario, conns}]; m != nil {
		return m[srv]
	}
	return nil
}

// sqliteExportTarget: export flows/s on SQLite against the bare store's
// inserts/s, judged at 16 and 64 connections.
func sqliteExportTarget(s *Summary) Target {
	exportSQLite := FlowScenario("export", SQLite)
	t := Target{Name: "SQLite export flows vs the bare store (one durable insert per request)", Want: "≥ 70% at 16 and 64 connections"}
	var parts []string
	ok, measured := true, false
	for _, k := range s.Keys {
		if k.Scenario != exportSQLite {
			continue
		}
		v := s.Ratio(k, RatioFlowStore(SQLite))
		if math.IsNaN(v) {
			continue
		}
		parts = append(parts, fmt.Sprintf("C=%d: %s", k.Conns, fmtRatio(v)))
		if k.Conns == 16 || k.Conns == 64 {
			measured = true
			ok = ok && v >= 0.7
		}
	}
	t.Measured, t.Status, t.Scenario = join(parts), status(ok, measured), exportSQLite
	return t
}

// sqliteAcceptTailTarget: the p99 of the export flow's accept leg on
// SQLite, each connection count against its own limit.
func sqliteAcceptTailTarget(s *Summary) Target {
	exportSQLite := FlowScenario("export", SQLite)
	t := Target{Name: "SQLite export accept-leg p99", Want: "≤ 30 ms at 16, ≤ 100 ms at 64 connections"}
	var parts []string
	ok, measured := true, false
	for _, want := range []struct {
		conns int
		p99   time.Duration
	}{{16, 30 * time.Millisecond}, {64, 100 * time.Millisecond}} {
		cl := s.cell(exportSQLite, want.conns, ElicitdServer(SQLite))
		if cl == nil || len(cl.Legs) < 2 {
			continue
		}
		measured = true
		ok = ok && cl.Legs[1].P99 <= want.p99
		part := fmt.Sprintf("C=%d: %s (first leg %s", want.conns, fmtDur(cl.Legs[1].P99), fmtDur(cl.Legs[0].P99))
		if b := s.cell(exportSQLite, want.conns, StoreServer(SQLite)); b != nil {
			part += fmt.Sprintf("; one bare insert %s", fmtDur(b.P99))
		}
		parts = append(parts, part+")")
	}
	t.Measured, t.Status, t.Scenario = join(parts), status(ok, measured), exportSQLite
	return t
}

// busyHandlerTarget: no request goroutine of elicitd on SQLite asleep in
// the driver's busy handler in any dump.
func busyHandlerTarget(r *Results) Target {
	t := Target{Name: "requests sleeping in SQLite's busy handler (goroutine dumps under export load)", Want: "none"}
	var parts []string
	ok, measured := true, false
	for _, b := range r.Busy {
		if b.Server != ElicitdServer(SQLite) {
			continue
		}
		measured = true
		ok = ok && b.BusyHandler == 0
		parts = append(parts, fmt.Sprintf("C=%d: %d of %d request goroutines in %d dumps", b.Conns, b.BusyHandler, b.Requests, b.Samples))
	}
	t.Measured, t.Status = join(parts), status(ok, measured)
	return t
}

// postgresAcceptTarget: the median of the export flow's accept leg on
// PostgreSQL at 16 connections.
func postgresAcceptTarget(s *Summary) Target {
	exportPostgres := FlowScenario("export", Postgres)
	t := Target{Name: "PostgreSQL export accept-leg p50 at 16 connections", Want: "≤ 3 ms", Status: "not measured"}
	cl := s.cell(exportPostgres, 16, ElicitdServer(Postgres))
	if cl == nil || len(cl.Legs) < 2 {
		return t
	}
	t.Measured = fmt.Sprintf("%s (p99 %s)", fmtDur(cl.Legs[1].P50), fmtDur(cl.Legs[1].P99))
	if b := s.cell(exportPostgres, 16, StoreServer(Postgres)); b != nil {
		t.Measured += fmt.Sprintf("; one bare insert in the same run: p50 %s", fmtDur(b.P50))
	}
	t.Status = status(cl.Legs[1].P50 <= 3*time.Millisecond, true)
	t.Scenario = exportPostgres
	return t
}

// readOnlyCPUTarget: elicitd's server CPU per billing_status request on
// each store against the core elicit server's per tools/call at the same
// connection count.
func readOnlyCPUTarget(s *Summary) Target {
	t := Target{Name: "read-only tool (billing_status) server CPU per request vs the core's call (elicit)", Want: "≤ 1.5×"}
	var parts []string
	ok, measured := true, false
	for _, st := range Stores {
		for _, k := range s.Keys {
			if k.Scenario != FlowScenario("status", st) {
				continue
			}
			ro, core := s.cell(k.Scenario, k.Conns, ElicitdServer(st)), s.cell("call", k.Conns, Elicit)
			if ro == nil || core == nil || core.ServerCPU <= 0 {
				continue
			}
			measured = true
			v := float64(ro.ServerCPU) / float64(core.ServerCPU)
			if v > 1.5 && t.Scenario == "" {
				t.Scenario = k.Scenario
			}
			ok = ok && v <= 1.5
			parts = append(parts, fmt.Sprintf("%s C=%d: %.2f× (%s vs %s)", st, k.Conns, v, fmtDur(ro.ServerCPU), fmtDur(core.ServerCPU)))
		}
	}
	t.Measured, t.Status = join(parts), status(ok, measured)
	return t
}
