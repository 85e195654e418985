// Package load is the closed-loop load generator of mcpbench: C
// goroutines, one per keep-alive connection, each sending the next request
// as soon as the previous response is read, for a bounded time and a
// bounded number of requests, with every response checked.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-elicit/elicit/bench/internal/wire"
)

// Config describes one run.
type Config struct {
	// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string
	// Scenario is one of wire.Scenarios.
	Scenario string
	// Connections is the number of connections (and goroutines).
	Connections int
	// Duration bounds the run in time.
	Duration time.Duration
	// MaxUnits bounds the run in units (requests; flows for the MRTR
	// scenario); 0 means no bound other than Duration.
	MaxUnits int64
	// FirstLegOnly makes the MRTR scenario send only first legs (flows
	// started and left pending).
	FirstLegOnly bool
	// Timeout bounds one request (response headers); 0 means 10 s.
	Timeout time.Duration
	// Progress, when set, is called about once a second with the requests
	// completed so far.
	Progress func(requests int64, elapsed time.Duration)
	// Transport, when set, is reused (so connections stay warm from one run
	// to the next); otherwise a tuned one is made and closed at the end.
	Transport *http.Transport
	// User, when set, makes every request carry "Authorization: Bearer
	// <user>" (elicitd's demo auth on loopback): worker i is user
	// User-i, and in the connect scenario each request is a user of its
	// own, User-i-n, so that each starts a new flow. Use a value unique to
	// the run.
	User string
}

// Result is what one run measured. Requests counts MRTR legs separately.
type Result struct {
	Requests int64
	Flows    int64 // completed two-leg flows (mrtr, export)
	Errors   int64
	FirstErr string
	Elapsed  time.Duration
	Latency  Histogram
	// Legs are the latencies of the first legs and of the retries
	// (two-leg scenarios only).
	Legs [2]Histogram
	// StateLen is the length of the last requestState seen (MRTR only).
	StateLen int
}

// RPS returns successful requests per second.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// FlowsPerSecond returns completed two-leg flows per second.
func (r *Result) FlowsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Flows) / r.Elapsed.Seconds()
}

// NewTransport returns a transport tuned for c keep-alive connections to
// one loopback host: no proxy, no compression, no HTTP/2, at most c
// connections, all of them kept idle between requests.
func NewTransport(c int, timeout time.Duration) *http.Transport {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          c,
		MaxIdleConnsPerHost:   c,
		MaxConnsPerHost:       c,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		WriteBufferSize:       8 << 10,
		ReadBufferSize:        8 << 10,
	}
}

// Run runs cfg until its time or unit bound, or until ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("load: %s is not a loopback address", cfg.URL)
	}
	if cfg.Connections < 1 {
		return nil, errors.New("load: connections must be at least 1")
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("load: duration must be positive")
	}
	if !wire.Known(cfg.Scenario) {
		return nil, fmt.Errorf("load: unknown scenario %q", cfg.Scenario)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	tr := cfg.Transport
	if tr == nil {
		tr = NewTransport(cfg.Connections, cfg.Timeout)
		defer tr.CloseIdleConnections()
	}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	start := time.Now()
	end := start.Add(cfg.Duration)
	// Requests in flight at the end get Timeout to finish; then they are cut.
	rctx, cancel := context.WithDeadline(ctx, end.Add(cfg.Timeout))
	defer cancel()

	var (
		total  atomic.Int64
		issued atomic.Int64
		wg     sync.WaitGroup
	)
	workers := make([]*worker, cfg.Connections)
	for i := range workers {
		w := &worker{cfg: &cfg, ctx: rctx, client: client, u: u, end: end, total: &total, issued: &issued}
		w.init(i)
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if cfg.Progress != nil {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-tick.C:
				cfg.Progress(total.Load(), time.Since(start))
			}
		}
	}
	<-done
	elapsed := time.Since(start)
	res := &Result{Elapsed: elapsed}
	for _, w := range workers {
		res.Requests += w.ok
		res.Flows += w.flows
		res.Errors += w.errs
		if res.FirstErr == "" {
			res.FirstErr = w.firstErr
		}
		if w.stateLen > 0 {
			res.StateLen = w.stateLen
		}
		res.Latency.Merge(&w.hist)
		res.Legs[0].Merge(&w.legs[0])
		res.Legs[1].Merge(&w.legs[1])
	}
	// Count time only up to the planned end: requests that finish after it
	// were started before it, so the rate is not inflated.
	if cfg.MaxUnits == 0 || elapsed > cfg.Duration {
		res.Elapsed = min(elapsed, max(cfg.Duration, time.Millisecond))
	}
	return res, ctx.Err()
}

// Once sends one unit of scenario (one request, or one two-leg flow) as
// user ("" for none) and reports its first error.
func Once(ctx context.Context, endpoint, scenario, user string) error {
	res, err := Run(ctx, Config{URL: endpoint, Scenario: scenario, Connections: 1, Duration: 10 * time.Second, MaxUnits: 1, User: user})
	if err != nil {
		return err
	}
	if res.Errors > 0 || res.Requests == 0 {
		return fmt.Errorf("%s: %s", scenario, res.FirstErr)
	}
	return nil
}

type worker struct {
	cfg    *Config
	ctx    context.Context
	client *http.Client
	u      *url.URL
	end    time.Time
	total  *atomic.Int64
	issued *atomic.Int64

	body, first []byte
	hdr         http.Header
	retry       *wire.Retry
	retryBuf    []byte
	state       []byte
	resp        bytes.Buffer
	// user and n name the next connect request's user.
	user string
	n    int

	ok, flows, errs int64
	firstErr        string
	stateLen        int
	hist            Histogram
	legs            [2]Histogram
	leg             int // which of legs do records into
}

func (w *worker) init(i int) {
	id := 2 * (i + 1)
	switch w.cfg.Scenario {
	case wire.ScenarioCall:
		w.body, w.hdr = wire.CallBody(id), wire.Headers("tools/call", wire.EchoTool)
	case wire.ScenarioDiscover:
		w.body, w.hdr = wire.DiscoverBody(id), wire.Headers("server/discover", "")
	case wire.ScenarioMRTR:
		w.first, w.hdr = wire.FormFirstBody(id), wire.Headers("tools/call", wire.FormTool)
		w.retry = wire.NewRetry(id + 1)
	case wire.ScenarioExport:
		w.first, w.hdr = wire.ExportFirstBody(id), wire.Headers("tools/call", wire.ExportTool)
		w.retry = wire.NewExportRetry(id + 1)
	case wire.ScenarioConnect:
		w.body, w.hdr = wire.ConnectBody(id), wire.Headers("tools/call", wire.ConnectTool)
	case wire.ScenarioStatus:
		w.body, w.hdr = wire.StatusBody(id), wire.Headers("tools/call", wire.StatusTool)
	case wire.ScenarioInsert:
		w.body, w.hdr = wire.InsertBody(), http.Header{"Content-Type": {"application/json"}}
	}
	if w.cfg.User != "" {
		// Each worker has its own header map, as the connect scenario
		// changes it per request.
		w.hdr = w.hdr.Clone()
		w.user = fmt.Sprintf("%s-%d", w.cfg.User, i)
		w.hdr.Set("Authorization", "Bearer "+w.user)
	}
}

func (w *worker) fail(format string, args ...any) {
	w.errs++
	if w.firstErr == "" {
		w.firstErr = fmt.Sprintf(format, args...)
	}
}

func (w *worker) loop() {
	for {
		if w.ctx.Err() != nil || !time.Now().Before(w.end) {
			return
		}
		if m := w.cfg.MaxUnits; m > 0 && w.issued.Add(1) > m {
			return
		}
		switch w.cfg.Scenario {
		case wire.ScenarioCall:
			w.one(wire.MarkComplete, wire.MarkEcho)
		case wire.ScenarioDiscover:
			w.one(wire.MarkComplete, wire.MarkDiscover)
		case wire.ScenarioMRTR:
			w.flow(wire.MarkFormDone)
		case wire.ScenarioExport:
			w.flow(wire.MarkDraft)
		case wire.ScenarioConnect:
			if w.cfg.User != "" {
				w.n++
				w.hdr["Authorization"][0] = fmt.Sprintf("Bearer %s-%d", w.user, w.n)
			}
			w.one(wire.MarkInputRequired, wire.MarkURLMode)
		case wire.ScenarioStatus:
			w.one(wire.MarkComplete, wire.MarkStatus)
		case wire.ScenarioInsert:
			w.one(wire.MarkInserted)
		}
	}
}

// one sends the scenario's single request and counts it if its answer
// holds marks.
func (w *worker) one(marks ...[]byte) {
	if b, ok := w.do(w.body); ok && w.expect(b, marks...) {
		w.ok++
	}
}

// flow runs one two-leg flow: the first leg must ask (input_required),
// the retry with the answer must complete with done in its result.
func (w *worker) flow(done []byte) {
	w.leg = 0
	b, ok := w.do(w.first)
	if !ok || !w.expect(b, wire.MarkInputRequired) {
		return
	}
	st := wire.RequestState(b)
	if len(st) == 0 {
		w.fail("input_required without requestState")
		return
	}
	w.ok++
	w.stateLen = len(st)
	if w.cfg.FirstLegOnly {
		return
	}
	w.state = append(w.state[:0], st...)
	w.retryBuf = w.retry.Append(w.retryBuf[:0], w.state)
	w.leg = 1
	b, ok = w.do(w.retryBuf)
	if !ok || !w.expect(b, wire.MarkComplete, done) {
		return
	}
	w.ok++
	w.flows++
}

func (w *worker) expect(body []byte, marks ...[]byte) bool {
	for _, m := range marks {
		if !bytes.Contains(body, m) {
			w.fail("response lacks %s: %.300s", m, body)
			return false
		}
	}
	if bytes.Contains(body, wire.MarkIsError) {
		w.fail("tool error: %.300s", body)
		return false
	}
	return true
}

// do sends one request and returns the response body (valid until the
// next call) when the status is 200; the latency of successful requests
// is recorded.
func (w *worker) do(body []byte) ([]byte, bool) {
	req := &http.Request{
		Method: http.MethodPost, URL: w.u, Host: w.u.Host, Header: w.hdr,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	req = req.WithContext(w.ctx)
	t0 := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		if w.ctx.Err() == nil {
			w.fail("request: %v", err)
		}
		return nil, false
	}
	w.resp.Reset()
	_, err = w.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	lat := time.Since(t0)
	if err != nil {
		if w.ctx.Err() == nil {
			w.fail("reading response: %v", err)
		}
		return nil, false
	}
	if resp.StatusCode != http.StatusOK {
		w.fail("HTTP %d: %.300s", resp.StatusCode, w.resp.Bytes())
		return nil, false
	}
	w.hist.Record(lat)
	if w.first != nil {
		w.legs[w.leg].Record(lat)
	}
	w.total.Add(1)
	return w.resp.Bytes(), true
}
