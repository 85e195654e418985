package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-elicit/elicit/internal/ndjson"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// Defaults for the stdio Options fields left zero.
const (
	DefaultProbeTimeout   = 10 * time.Second
	DefaultTerminateGrace = 5 * time.Second
)

// ErrClosed is returned by calls on a client whose Close has run.
var ErrClosed = errors.New("mcpclient: the client is closed")

// LegacyVersions are the initialize-era revisions NewCommand falls back
// to, newest first (the one it asks for is the first).
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// modernCodes are the errors only a 2026-07-28 server sends: one of them
// answering the probe means a modern server (stdio.mdx §Backward
// Compatibility).
var modernCodes = []int{mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredClientCapability, mcp.CodeUnsupportedProtocolVersion}

// NewCommand starts cmd and returns a client that speaks MCP with it over
// its standard input and output, one JSON-RPC message per line
// (basic/transports/stdio.mdx). cmd must not be started and must leave
// Stdin and Stdout nil; its Stderr is left as given (nil discards the
// server's log: set it to see it).
//
// Before returning, it learns the server's era as the binding says: it
// probes with server/discover; a DiscoverResult or a 2026-07-28 error
// (-32020, -32021, -32022) means a 2026-07-28 server, and every request
// is then sent as on HTTP, with the same input loop. Any other answer, or
// none within Options.ProbeTimeout, means an older server: the client
// falls back to the 2025-11-25 handshake (initialize, then
// notifications/initialized) and from then on answers the server's
// elicitation/create, sampling/createMessage, roots/list and ping
// requests through Options.Handlers, one at a time, while calls are in
// progress; a handler's error ends the calls in progress with that error.
// A discover answer that arrives late, during the fallback, wins only if
// the server then refuses initialize: a server that accepts it serves the
// process as 2025-11-25.
// ctx bounds the start and the handshake only.
//
// Errors from calls are those of the HTTP client: *RPCError (HTTPStatus
// 0), *MissingCapabilityError, *UnsupportedVersionError, *ProtocolError,
// and *ConnectionError when the process has exited or closed its output.
// A call whose ctx ends sends notifications/cancelled for its request.
//
// Close stops the server: it closes the server's input, waits
// Options.TerminateGrace for it to exit, then sends SIGTERM, waits as long
// again, then kills it. A server that exits on its own is not restarted.
func NewCommand(ctx context.Context, cmd *exec.Cmd, opts *Options) (*Client, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("mcpclient: NewCommand sets the command's Stdin and Stdout itself")
	}
	c := newClient(opts)
	var o Options
	if opts != nil {
		o = *opts
	}
	t := &stdioTransport{c: c, cmd: cmd, name: commandLine(cmd), log: c.log, grace: o.TerminateGrace,
		pending: map[string]*pending{}, tokens: map[string]*pending{}, exited: make(chan struct{})}
	if t.grace <= 0 {
		t.grace = DefaultTerminateGrace
	}
	probe := o.ProbeTimeout
	if probe <= 0 {
		probe = DefaultProbeTimeout
	}
	c.tr, c.command = t, t.name
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, &ConnectionError{Endpoint: t.name, Err: err}
	}
	t.stdin, t.w = inW, ndjson.NewWriter(inW)
	t.life, t.stop = context.WithCancel(context.Background())
	go func() {
		t.waitErr = cmd.Wait()
		t.fail(fmt.Errorf("the server process exited (%v)", exitText(t.waitErr)))
		close(t.exited)
	}()
	go t.read(outR)
	if err := t.handshake(ctx, probe); err != nil {
		_ = t.close()
		return nil, err
	}
	return c, nil
}

// commandLine is the command as the user would type it, for errors and
// consent screens.
func commandLine(cmd *exec.Cmd) string {
	args := cmd.Args
	if len(args) == 0 {
		args = []string{cmd.Path}
	}
	return clip(strings.Join(args, " "), 200)
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// stdioTransport is the stdio binding to a launched command.
type stdioTransport struct {
	c     *Client
	cmd   *exec.Cmd
	name  string
	log   *slog.Logger
	grace time.Duration

	stdin   *os.File
	w       *ndjson.Writer
	exited  chan struct{} // closed once the process was waited for and the connection failed
	waitErr error         // Wait's result, set before exited is closed

	life context.Context // ends at close
	stop context.CancelFunc

	legacy  atomic.Bool // the server speaks an initialize-era revision
	initRes *initializeResult

	mu      sync.Mutex
	pending map[string]*pending // by the request id's JSON text
	tokens  map[string]*pending // by progress token
	last    *pending            // the latest call in progress
	dead    error               // why no request can be sent any more

	askMu     sync.Mutex // one server request answered at a time
	closeOnce sync.Once
	closeErr  error
}

// pending is one request waiting for its response.
type pending struct {
	id       string
	method   string
	ctx      context.Context
	reply    chan reply    // the response, or why none will come
	progress chan Progress // notifications/progress for its token
	abort    chan error    // a handler failed while it was in progress
	token    string
	target   string // tool or prompt name or resource URI, for Progress
}

type reply struct {
	result json.RawMessage
	err    *wireError
	conn   error
}

// initializeResult is what the 2025 handshake learnt.
type initializeResult struct {
	ProtocolVersion string                 `json:"protocolVersion"`
	Capabilities    mcp.ServerCapabilities `json:"capabilities"`
	ServerInfo      *mcp.Implementation    `json:"serverInfo"`
	Instructions    string                 `json:"instructions,omitempty"`
}

func (t *stdioTransport) headers() bool { return false }

// register adds a request in progress; it fails once the connection is gone.
func (t *stdioTransport) register(ctx context.Context, id int64, method, token string) (*pending, error) {
	p := &pending{id: strconv.FormatInt(id, 10), method: method, ctx: ctx, token: token,
		reply: make(chan reply, 1), progress: make(chan Progress, 16), abort: make(chan error, 1)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead != nil {
		return nil, t.dead
	}
	t.pending[p.id] = p
	if token != "" {
		t.tokens[token] = p
	}
	t.last = p
	return p, nil
}

func (t *stdioTransport) unregister(p *pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[p.id] == p {
		delete(t.pending, p.id)
	}
	if p.token != "" && t.tokens[p.token] == p {
		delete(t.tokens, p.token)
	}
	if t.last == p {
		t.last = nil
		for _, q := range t.pending {
			t.last = q
		}
	}
}

// fail ends the connection for err: every request in progress, and every
// later one, fails with it (the first reason is kept).
func (t *stdioTransport) fail(err error) {
	t.mu.Lock()
	if t.dead == nil {
		if !errors.Is(err, ErrClosed) {
			err = &ConnectionError{Endpoint: t.name, Err: err}
		}
		t.dead = err
	}
	dead := t.dead
	all := t.pending
	t.pending, t.tokens, t.last = map[string]*pending{}, map[string]*pending{}, nil
	t.mu.Unlock()
	for _, p := range all {
		p.reply <- reply{conn: dead}
	}
}

// send writes one message to the server.
func (t *stdioTransport) send(v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return t.write(b)
}

// write writes one encoded message. When it fails (the server's input is
// closed: it has exited, or is exiting), the connection ends, with the
// exit status as the reason if the process ends within a second.
func (t *stdioTransport) write(b []byte) error {
	err := t.w.WriteLine(b)
	if err == nil {
		return nil
	}
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case <-t.exited: // fail has run with the exit status
	case <-timer.C:
		t.fail(fmt.Errorf("writing to the server: %w", err))
	}
	t.mu.Lock()
	dead := t.dead
	t.mu.Unlock()
	return dead
}

// roundTrip sends one request and waits for its response.
func (t *stdioTransport) roundTrip(ctx context.Context, out *outgoing, version string) (json.RawMessage, error) {
	if t.legacy.Load() {
		return t.legacyTrip(ctx, out)
	}
	id, token, body, err := t.c.encode(out, version)
	if err != nil {
		return nil, err
	}
	return t.exchange(ctx, id, out, token, body)
}

// exchange registers the request, sends body and waits for the answer,
// delivering progress on the calling goroutine meanwhile.
func (t *stdioTransport) exchange(ctx context.Context, id int64, out *outgoing, token string, body []byte) (json.RawMessage, error) {
	method := out.method
	p, err := t.register(ctx, id, method, token)
	if err != nil {
		return nil, err
	}
	p.target = out.target
	if err := t.write(body); err != nil {
		t.unregister(p)
		return nil, err
	}
	for {
		select {
		case r := <-p.reply:
			// Progress the server sent before its response is already
			// queued: deliver it first, in stream order (select picks
			// among ready cases at random).
			t.drainProgress(p)
			return t.answer(method, r)
		case pr := <-p.progress:
			t.deliverProgress(pr)
		case err := <-p.abort:
			t.cancel(p, "the client could not answer the server's request")
			return nil, err
		case <-ctx.Done():
			t.cancel(p, "the caller cancelled the request")
			return nil, ctx.Err()
		}
	}
}

// drainProgress delivers the progress queued for p.
func (t *stdioTransport) drainProgress(p *pending) {
	for {
		select {
		case pr := <-p.progress:
			t.deliverProgress(pr)
		default:
			return
		}
	}
}

func (t *stdioTransport) deliverProgress(pr Progress) {
	if t.c.onProgress != nil {
		t.c.onProgress(pr)
	}
}

// answer turns a response into the result or the typed error.
func (t *stdioTransport) answer(method string, r reply) (json.RawMessage, error) {
	switch {
	case r.conn != nil:
		return nil, r.conn
	case r.err != nil:
		return nil, typedError(&RPCError{Method: method, Code: r.err.Code, Message: r.err.Message, Data: r.err.Data})
	case !isObject(r.result):
		return nil, &ProtocolError{Method: method, Reason: "the result is not a JSON object"}
	}
	return r.result, nil
}

// cancel gives up on p: notifications/cancelled tells the server, and a
// late answer is dropped.
func (t *stdioTransport) cancel(p *pending, reason string) {
	t.unregister(p)
	_ = t.send(&jsonrpc.Notification{Method: mcp.NotificationCancelled,
		Params: mcp.CancelledParams{RequestID: json.RawMessage(p.id), Reason: reason}})
}

// read takes the server's messages until its output ends.
func (t *stdioTransport) read(out *os.File) {
	defer out.Close()
	rd := ndjson.NewReader(out, int(t.c.maxMsg))
	for {
		b, err := rd.Next()
		if errors.Is(err, ndjson.ErrTooLong) {
			// Whose answer it was is unknown: the requests in progress
			// cannot be trusted to get theirs.
			t.log.Warn("mcpclient: the server sent a message longer than the limit", "limit_bytes", t.c.maxMsg, "server", t.name)
			t.failPending(&ProtocolError{Reason: fmt.Sprintf("the server sent a message longer than %d bytes", t.c.maxMsg)})
			continue
		}
		if err != nil {
			// Prefer the process's exit status as the reason, if it comes.
			select {
			case <-t.exited:
			case <-time.After(time.Second):
				t.fail(errors.New("the server closed its standard output"))
			}
			return
		}
		m, err := decodeMsg(b)
		if err != nil {
			t.log.Warn("mcpclient: the server wrote a line that is not a JSON-RPC message; ignored", "server", t.name, "line", clip(string(b), 120))
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			t.serverRequest(m)
		case m.Method != "":
			t.notification(m)
		default:
			t.response(m)
		}
	}
}

// failPending fails the requests in progress with err, leaving the
// connection up.
func (t *stdioTransport) failPending(err error) {
	t.mu.Lock()
	all := t.pending
	t.pending, t.tokens, t.last = map[string]*pending{}, map[string]*pending{}, nil
	t.mu.Unlock()
	for _, p := range all {
		p.reply <- reply{conn: err}
	}
}

func (t *stdioTransport) response(m *wireMsg) {
	var id jsonrpc.ID
	if id.UnmarshalJSON(m.ID) != nil {
		t.log.Warn("mcpclient: the server sent a response without a usable id", "server", t.name)
		return
	}
	t.mu.Lock()
	p := t.pending[id.String()]
	if p != nil {
		delete(t.pending, p.id)
		if p.token != "" {
			delete(t.tokens, p.token)
		}
	}
	t.mu.Unlock()
	if p == nil {
		t.log.Debug("mcpclient: response to no request in progress (cancelled, or the probe's); dropped", "id", clip(id.String(), 40))
		return
	}
	switch {
	case m.Error != nil:
		p.reply <- reply{err: m.Error}
	case m.Result != nil:
		p.reply <- reply{result: m.Result}
	default:
		p.reply <- reply{conn: &ProtocolError{Method: p.method, Reason: "a response with neither result nor error"}}
	}
}

func (t *stdioTransport) notification(m *wireMsg) {
	if m.Method != mcp.NotificationProgress {
		t.log.Debug("mcpclient: server notification", "method", clip(m.Method, 80))
		return
	}
	var pp mcp.ProgressParams
	if json.Unmarshal(m.Params, &pp) != nil {
		return
	}
	var tok string
	if json.Unmarshal(pp.ProgressToken, &tok) != nil {
		return
	}
	t.mu.Lock()
	p := t.tokens[tok]
	t.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case p.progress <- Progress{Method: p.method, Target: p.target, Progress: pp.Progress, Total: pp.Total, Message: pp.Message}:
	default: // the caller is behind: progress is advisory
	}
}

// serverRequest answers a request from a 2025-era server; a 2026-07-28
// server sends none (stdio.mdx), and the client then writes no response.
func (t *stdioTransport) serverRequest(m *wireMsg) {
	if !t.legacy.Load() {
		t.log.Warn("mcpclient: the server sent a request, which MCP 2026-07-28 forbids; not answered", "server", t.name, "method", clip(m.Method, 80))
		return
	}
	go t.answerServer(m)
}

// answerServer answers one server request through the Handlers.
func (t *stdioTransport) answerServer(m *wireMsg) {
	respond := func(result any, e *jsonrpc.Error) {
		msg := map[string]any{"jsonrpc": jsonrpc.Version, "id": m.ID}
		if e != nil {
			msg["error"] = e
		} else {
			msg["result"] = result
		}
		_ = t.send(msg)
	}
	switch m.Method {
	case "ping":
		respond(struct{}{}, nil)
		return
	case mcp.MethodElicitationCreate, mcp.MethodSamplingCreate, mcp.MethodRootsList:
	default:
		respond(nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", clip(m.Method, 80)))
		return
	}
	t.askMu.Lock()
	defer t.askMu.Unlock()
	ctx := t.life
	t.mu.Lock()
	if t.last != nil {
		ctx = t.last.ctx
	}
	t.mu.Unlock()
	params := m.Params
	if string(params) == "null" {
		params = nil
	}
	ans, err := t.c.answerOne(ctx, t.c.Asker(), string(m.ID), InputRequest{Method: m.Method, Params: params})
	if err == nil {
		respond(ans, nil)
		return
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		// The server asked what this client did not declare, or asked it
		// wrongly (2025-11-25: -32602 for an undeclared mode).
		respond(nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s", pe.Reason))
		return
	}
	respond(nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "The client could not answer %s", m.Method))
	// As for MRTR-C-10: the call does not go on without the answer.
	t.mu.Lock()
	all := make([]*pending, 0, len(t.pending))
	for _, p := range t.pending {
		all = append(all, p)
	}
	t.mu.Unlock()
	for _, p := range all {
		select {
		case p.abort <- err:
		default:
		}
	}
}

// handshake learns the server's era (stdio.mdx §Backward Compatibility).
func (t *stdioTransport) handshake(ctx context.Context, probeTimeout time.Duration) error {
	id, _, body, err := t.c.encode(&outgoing{method: mcp.MethodDiscover}, t.c.Version())
	if err != nil {
		return err
	}
	probe, err := t.register(ctx, id, mcp.MethodDiscover, "")
	if err != nil {
		return err
	}
	defer t.unregister(probe)
	if err := t.write(body); err != nil {
		return err
	}
	timer := time.NewTimer(probeTimeout)
	defer timer.Stop()
	select {
	case r := <-probe.reply:
		if modern, err := t.probed(r); modern || err != nil {
			return err
		}
	case <-timer.C:
		t.log.Debug("mcpclient: no answer to server/discover; trying initialize", "server", t.name, "waited", probeTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	return t.initialize(ctx, probe, probeTimeout)
}

// probed reads the probe's answer: modern is true for a DiscoverResult or
// a 2026-07-28 error; err is set when there is no connection.
func (t *stdioTransport) probed(r reply) (modern bool, err error) {
	switch {
	case r.conn != nil:
		return false, r.conn
	case r.err != nil && r.err.Code == mcp.CodeUnsupportedProtocolVersion:
		// A server that names initialize-era versions only (go-sdk set to
		// serve those) is reached through initialize.
		var d mcp.UnsupportedVersionData
		_ = json.Unmarshal(r.err.Data, &d)
		return !onlyLegacy(d.Supported), nil
	case r.err != nil:
		return slices.Contains(modernCodes, r.err.Code), nil
	}
	var d mcp.DiscoverResult
	if json.Unmarshal(r.result, &d) != nil || len(d.SupportedVersions) == 0 {
		return false, nil // not a DiscoverResult: a legacy server's odd answer
	}
	var head resultHead
	if json.Unmarshal(r.result, &head) == nil {
		t.c.noteServer(head.Meta)
	}
	return true, nil
}

// onlyLegacy reports whether versions are all initialize-era ones this
// client speaks (and there is at least one).
func onlyLegacy(versions []string) bool {
	for _, v := range versions {
		if !slices.Contains(LegacyVersions, v) {
			return false
		}
	}
	return len(versions) > 0
}

// initialize runs the 2025-11-25 handshake. The probe's answer may still
// come: when it shows a 2026-07-28 server, the process is that only if
// the server refuses initialize (or never answers it); a server that
// accepts initialize has made the process a 2025-11-25 session, whatever
// it answered to the probe (a dual-era server slow to start).
func (t *stdioTransport) initialize(ctx context.Context, probe *pending, probeTimeout time.Duration) error {
	t.legacy.Store(true)
	id := t.c.nextID.Add(1)
	params := map[string]any{"protocolVersion": LegacyVersions[0], "capabilities": t.c.caps, "clientInfo": t.c.info}
	body, err := marshal(map[string]any{"jsonrpc": jsonrpc.Version, "id": id, "method": "initialize", "params": params})
	if err != nil {
		return err
	}
	init, err := t.exchangeAsync(ctx, id, "initialize", body)
	if err != nil {
		return err
	}
	wait := max(probeTimeout, DefaultProbeTimeout)
	var probeAnswered, probeModern bool
	var grace <-chan time.Time // once the probe showed a modern server
	for {
		select {
		case r := <-probe.reply:
			modern, err := t.probed(r)
			if err != nil {
				t.unregister(init)
				return err
			}
			probeAnswered, probeModern = true, modern
			if modern {
				timer := time.NewTimer(wait)
				defer timer.Stop()
				grace = timer.C
			}
		case <-grace:
			// A 2026-07-28 server that leaves initialize unanswered.
			t.legacy.Store(false)
			t.unregister(init)
			return nil
		case r := <-init.reply:
			res, err := t.answer("initialize", r)
			if err == nil {
				return t.initialized(res)
			}
			var rpc *RPCError
			if !errors.As(err, &rpc) {
				return err
			}
			// Refused: not an initialize-era server after all. A 2026-07-28
			// one may answer the probe still (it serves requests
			// concurrently, so its refusal can come first).
			if probeModern || !probeAnswered && t.lateModern(ctx, probe, wait) {
				t.legacy.Store(false)
				return nil
			}
			return fmt.Errorf("mcpclient: %s answered neither server/discover (MCP 2026-07-28) nor initialize (2025-11-25): %w", t.name, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// initialized completes the 2025-11-25 handshake with initialize's result.
func (t *stdioTransport) initialized(res json.RawMessage) error {
	var ir initializeResult
	if err := json.Unmarshal(res, &ir); err != nil {
		return &ProtocolError{Method: "initialize", Reason: "malformed result: " + err.Error()}
	}
	if !slices.Contains(LegacyVersions, ir.ProtocolVersion) {
		return &UnsupportedVersionError{Supported: []string{ir.ProtocolVersion}, Requested: LegacyVersions[0],
			RPC: &RPCError{Method: "initialize", Message: "the server chose a version this client does not speak"}}
	}
	t.initRes = &ir
	if ir.ServerInfo != nil && ir.ServerInfo.Name != "" {
		t.c.mu.Lock()
		info := *ir.ServerInfo
		t.c.server = &info
		t.c.mu.Unlock()
	}
	t.c.setVersion(ir.ProtocolVersion)
	return t.send(&jsonrpc.Notification{Method: "notifications/initialized"})
}

// lateModern waits up to timeout more for the probe's answer and reports
// whether it shows a 2026-07-28 server (the client then stays modern).
func (t *stdioTransport) lateModern(ctx context.Context, probe *pending, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-probe.reply:
		if modern, err := t.probed(r); modern && err == nil {
			t.legacy.Store(false)
			return true
		}
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// exchangeAsync registers and sends a request without waiting.
func (t *stdioTransport) exchangeAsync(ctx context.Context, id int64, method string, body []byte) (*pending, error) {
	p, err := t.register(ctx, id, method, "")
	if err != nil {
		return nil, err
	}
	if err := t.write(body); err != nil {
		t.unregister(p)
		return nil, err
	}
	return p, nil
}

// legacyParams are a request's params on an initialize-era server: no
// per-request protocol fields, a progress token in _meta when wanted.
type legacyParams struct {
	Name      *string         `json:"name,omitempty"`
	URI       *string         `json:"uri,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Cursor    string          `json:"cursor,omitempty"`
	Meta      *legacyMeta     `json:"_meta,omitempty"`
}

type legacyMeta struct {
	ProgressToken string `json:"progressToken"`
}

// legacyTrip sends out to an initialize-era server. server/discover is
// answered from the handshake (there is no such method there).
func (t *stdioTransport) legacyTrip(ctx context.Context, out *outgoing) (json.RawMessage, error) {
	if out.method == mcp.MethodDiscover {
		ir := t.initRes
		var meta mcp.ResultMeta
		if ir.ServerInfo != nil {
			meta = mcp.ResultMeta{mcp.MetaServerInfo: ir.ServerInfo}
		}
		return marshal(&mcp.DiscoverResult{ResultType: mcp.ResultTypeComplete, SupportedVersions: []string{ir.ProtocolVersion},
			Capabilities: ir.Capabilities, Instructions: ir.Instructions, CacheScope: mcp.CacheScopePrivate, Meta: meta})
	}
	id := t.c.nextID.Add(1)
	p := legacyParams{Name: out.params.Name, URI: out.params.URI, Arguments: out.params.Arguments, Cursor: out.params.Cursor}
	token := ""
	if t.c.onProgress != nil {
		token = "elicit-" + strconv.FormatInt(id, 10)
		p.Meta = &legacyMeta{ProgressToken: token}
	}
	body, err := marshal(map[string]any{"jsonrpc": jsonrpc.Version, "id": id, "method": out.method, "params": p})
	if err != nil {
		return nil, err
	}
	return t.exchange(ctx, id, out, token, body)
}

// close stops the server: its input is closed, then it is signalled,
// then killed, each after the grace (stdio.mdx §Shutdown).
func (t *stdioTransport) close() error {
	t.closeOnce.Do(func() {
		t.fail(ErrClosed)
		t.stop()
		_ = t.stdin.Close()
		wait := func() bool {
			timer := time.NewTimer(t.grace)
			defer timer.Stop()
			select {
			case <-t.exited:
				return true
			case <-timer.C:
				return false
			}
		}
		switch {
		case wait():
			if t.waitErr != nil {
				t.closeErr = fmt.Errorf("mcpclient: %s: the server exited with %v", t.name, t.waitErr)
			}
		case t.cmd.Process.Signal(syscall.SIGTERM) == nil && wait():
			t.closeErr = fmt.Errorf("mcpclient: %s: the server did not exit within %v of its input closing; stopped with SIGTERM", t.name, t.grace)
		default:
			_ = t.cmd.Process.Kill()
			<-t.exited
			t.closeErr = fmt.Errorf("mcpclient: %s: the server did not exit after its input closed and SIGTERM; killed", t.name)
		}
	})
	return t.closeErr
}
