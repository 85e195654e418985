package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// A 2025-11-25 upstream asks the user by sending a request of its own
// (elicitation/create, sampling/createMessage, roots/list) on the session,
// in the middle of the call, and waits for the answer. The gateway holds
// that call: the upstream's request becomes an input_required result for
// the client, whose retry carries the answer back to the waiting request.
// Between the two, the call and its session live in this instance's
// memory (heldCalls), and the gateway's sealed state names the instance
// and the call.

// heldCalls are this instance's calls waiting for a client's answer.
type heldCalls struct {
	g     *Gateway
	mu    sync.Mutex
	calls map[[16]byte]*heldCall
}

func newHeldCalls(g *Gateway) *heldCalls {
	return &heldCalls{g: g, calls: map[[16]byte]*heldCall{}}
}

// Held reports how many 2025 upstream calls wait for a client's answer on
// this instance (for metrics and tests).
func (g *Gateway) Held() int {
	g.held.mu.Lock()
	defer g.held.mu.Unlock()
	return len(g.held.calls)
}

// heldCall is one call to a 2025 upstream, from the client's first
// request to the upstream's result.
type heldCall struct {
	g         *Gateway
	id        [16]byte
	principal string
	sess      *session
	events    chan heldEvent
	// done is closed when the call ends (cancel): an upstream request
	// still waiting for the client's answer then gives up.
	done   <-chan struct{}
	cancel context.CancelFunc

	mu      sync.Mutex
	notify  func(*jsonrpc.Notification) error // the client request now waiting, if any
	pending *pendingAsk
	seq     uint64
	busy    bool // a client request is waiting on this call
	timer   *time.Timer
	over    bool
}

// pendingAsk is the upstream's request waiting for the client's answer.
type pendingAsk struct {
	key    string
	method string
	req    jsontext.Value // the input request: {"method", "params"}
	reply  chan json.RawMessage
}

// heldEvent is what the upstream side reports: a request to answer, or
// the call's end.
type heldEvent struct {
	ask    *pendingAsk
	result json.RawMessage
	err    error
}

// heldRound is one interim result of a held call.
type heldRound struct {
	h   *heldCall
	seq uint64
	key string
}

func (hr *heldRound) payload(upstream string) *payload {
	return &payload{kind: kindHeld, upstream: upstream, instance: hr.h.g.instance, held: hr.h.id, seq: hr.seq, key: hr.key, peerURL: hr.h.g.opts.PeerURL}
}

// abandon ends the held call (the client will not get its request).
func (hr *heldRound) abandon() { hr.h.end() }

// start makes the first call to a 2025 upstream on a session of the
// user's with the client's capabilities, and waits for its first event.
func (hc *heldCalls) start(ctx context.Context, r *request, t target, call string) (*answer, *jsonrpc.Error) {
	sess, jerr := t.up.pool.acquire(ctx, r.principal, &r.meta.ClientCapabilities)
	if jerr != nil {
		return nil, jerr
	}
	h := &heldCall{g: hc.g, principal: r.principal, sess: sess, events: make(chan heldEvent, 1), notify: r.notify, busy: true}
	if _, err := rand.Read(h.id[:]); err != nil {
		sess.release(false)
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
	}
	sess.attach(h)
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel, h.done = cancel, cctx.Done()
	if r.meta.LogLevel != "" {
		sess.setLevel(cctx, r.meta.LogLevel)
	}
	go func() {
		res, err := sess.run(cctx, r, t.name, call)
		select {
		case h.events <- heldEvent{result: res, err: err}:
		case <-cctx.Done(): // ended: nobody waits
		}
	}()
	return h.wait(ctx, r)
}

// resume answers the held call's pending request with the client's
// retry, and waits for the call's next event.
func (hc *heldCalls) resume(ctx context.Context, r *request, t target, st *payload, call string) (*answer, *jsonrpc.Error) {
	hc.mu.Lock()
	h := hc.calls[st.held]
	hc.mu.Unlock()
	if h == nil || h.principal != r.principal {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "The upstream call this retry answers is no longer held (it ended, timed out, or the gateway restarted); make the request again"}
	}
	h.mu.Lock()
	if h.over || h.busy || h.pending == nil || h.seq != st.seq || h.pending.key != st.key {
		h.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "This step of the upstream call was already answered; continue with the newest requestState or make the request again"}
	}
	p := h.pending
	raw, ok := r.responses[p.key]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		// No answer (MRTR-S-13): the same request again, on a new round.
		h.mu.Unlock()
		return h.interim(p), nil
	}
	if !hc.g.validInput(p.method, raw) {
		h.mu.Unlock()
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: inputResponses[%s] is not a valid result of the request issued under that key", strconv.Quote(clip(p.key, 64)))
	}
	h.pending, h.busy, h.notify = nil, true, r.notify
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	p.reply <- raw
	return h.wait(ctx, r)
}

// wait waits for the call's next event while the client's request r is
// open: an upstream request becomes an interim result, the end a
// complete result or the upstream's error. A client that goes away ends
// the call.
func (h *heldCall) wait(ctx context.Context, r *request) (*answer, *jsonrpc.Error) {
	select {
	case ev := <-h.events:
		h.mu.Lock()
		h.busy, h.notify = false, nil
		if ev.ask == nil {
			h.mu.Unlock()
			h.finish()
			if ev.err != nil {
				return nil, sdkError(h, ev.err)
			}
			o, err := parseObject(ev.result)
			if err != nil {
				return nil, upstreamBroke("its result is not a JSON object")
			}
			if o.get("resultType") == nil {
				o.set("resultType", quote(mcp.ResultTypeComplete))
			}
			return &answer{result: o}, nil
		}
		h.seq++
		h.pending = ev.ask
		ev.ask.key = ev.ask.method + "-" + strconv.FormatUint(h.seq, 10)
		h.timer = time.AfterFunc(h.g.opts.HeldTimeout, func() {
			h.g.log.Info("gateway: held upstream call timed out waiting for the client", "upstream", h.sess.pool.u.cfg.Name)
			h.end()
		})
		h.mu.Unlock()
		h.g.held.mu.Lock()
		h.g.held.calls[h.id] = h
		h.g.held.mu.Unlock()
		return h.interim(ev.ask), nil
	case <-ctx.Done():
		h.end()
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Request cancelled")
	}
}

// interim is the input_required result that presents p.
func (h *heldCall) interim(p *pendingAsk) *answer {
	o := &object{}
	o.set("resultType", quote(mcp.ResultTypeInputRequired))
	reqs := &object{}
	reqs.set(p.key, p.req)
	raw := reqs.encode()
	h.mu.Lock()
	seq := h.seq
	h.mu.Unlock()
	a, _ := askedOf(p.req) // ask built p.req: an object with a method
	return &answer{interim: o, requests: map[string]jsontext.Value{p.key: p.req}, asked: []asked{a}, rawReqs: jsontext.Value(raw),
		held: &heldRound{h: h, seq: seq, key: p.key}}
}

// ask is called on the session's goroutine when the upstream sends a
// request during the call: it is handed to the client's request now
// waiting, and the answer, when the retry brings it, goes back.
func (h *heldCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	req := &object{}
	req.set("method", quote(method))
	if len(params) > 0 && string(params) != "null" {
		req.set("params", normalizeParams(method, params))
	}
	p := &pendingAsk{method: method, req: jsontext.Value(req.encode()), reply: make(chan json.RawMessage, 1)}
	select {
	case h.events <- heldEvent{ask: p}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		return nil, context.Canceled
	}
	select {
	case raw := <-p.reply:
		return raw, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		// Ended (abandoned, timed out, closed): the session closes next,
		// and go-sdk waits for this handler before it does.
		return nil, context.Canceled
	}
}

// normalizeParams spells an elicitation's mode out: a 2025 server may
// leave it empty, which a 2026 client reads as form mode only when the
// member is absent.
func normalizeParams(method string, params json.RawMessage) jsontext.Value {
	if method != mcp.MethodElicitationCreate {
		return jsontext.Value(params)
	}
	o, err := parseObject(params)
	if err != nil {
		return jsontext.Value(params)
	}
	var mode string
	if v := o.get("mode"); v != nil {
		_ = json.Unmarshal(v, &mode)
	}
	if mode == "" {
		if o.get("url") != nil && o.get("requestedSchema") == nil {
			o.set("mode", quote(mcp.ElicitationModeURL))
		} else {
			o.set("mode", quote(mcp.ElicitationModeForm))
		}
	}
	return jsontext.Value(o.encode())
}

// deliver passes a notification of the upstream's (progress, a log
// message) to the client's request now waiting on the call.
func (h *heldCall) deliver(n *jsonrpc.Notification) {
	h.mu.Lock()
	notify := h.notify
	h.mu.Unlock()
	if notify != nil {
		_ = notify(n)
	}
}

// finish forgets a call that ended by itself; its session goes back to
// the pool.
func (h *heldCall) finish() { h.stop(true) }

// end ends a call that did not finish: its context is cancelled (the
// upstream's pending request is answered with an error, and go-sdk tells
// the upstream the call is cancelled) and its session closed.
func (h *heldCall) end() { h.stop(false) }

// stop ends the call once: it is forgotten, its context cancelled, and
// its session released (reusable after a call that finished).
func (h *heldCall) stop(reusable bool) {
	h.mu.Lock()
	if h.over {
		h.mu.Unlock()
		return
	}
	h.over = true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	h.g.held.forget(h)
	h.cancel()
	h.sess.release(reusable)
}

func (hc *heldCalls) forget(h *heldCall) {
	hc.mu.Lock()
	if hc.calls[h.id] == h {
		delete(hc.calls, h.id)
	}
	hc.mu.Unlock()
}

func (hc *heldCalls) closeAll() {
	hc.mu.Lock()
	all := make([]*heldCall, 0, len(hc.calls))
	for _, h := range hc.calls {
		all = append(all, h)
	}
	hc.mu.Unlock()
	for _, h := range all {
		h.end()
	}
}

// sdkError turns a 2025 upstream's failure into the client's error: its
// JSON-RPC error as it came; a lost connection, a retryable -32603.
func sdkError(h *heldCall, err error) *jsonrpc.Error {
	var we *sdkjsonrpc.Error
	if errors.As(err, &we) {
		e := &jsonrpc.Error{Code: int(we.Code), Message: we.Message}
		if len(we.Data) > 0 {
			e.Data = json.RawMessage(we.Data)
		}
		return e
	}
	up := h.sess.pool.u
	if errors.Is(err, context.Canceled) {
		return jsonrpc.NewError(jsonrpc.CodeInternalError, "Request cancelled")
	}
	up.g.log.Warn("gateway: 2025 upstream call failed", "upstream", up.cfg.Name, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Upstream %q failed to answer; retry later", up.cfg.Name),
		Data: transport.RetryData{Retryable: true, RetryAfterMs: 1000}}
}
