// Package stdio serves an mcpserver.Server over the stdio binding of MCP
// (basic/transports/stdio.mdx): the client launches the server as a
// subprocess and the two exchange newline-delimited JSON-RPC messages on
// its standard input and output.
//
// One process serves one client, of either era, decided by its first
// request (basic/versioning.mdx §Backward Compatibility):
//
//   - a request whose params carry _meta
//     "io.modelcontextprotocol/protocolVersion" (server/discover, the
//     probe of a dual-era client, or any other) makes the process a
//     2026-07-28 server: stateless, every request checked and served by
//     the mcpserver.Server as on Streamable HTTP, input needed from the
//     user returned as an InputRequiredResult (the server never writes a
//     request on stdout);
//   - an initialize request makes it a 2025-11-25 server, when
//     Options.Legacy is set: package legacy's bridge serves the handlers
//     over the session, sending elicitation/create and the other input
//     requests to the client on stdout and reading its answers on stdin;
//     without Options.Legacy, initialize is refused with -32022 naming the
//     versions served;
//   - anything else before that (ping aside) is refused and decides
//     nothing.
//
// Requests are served concurrently (at most Options.MaxInFlight at once);
// notifications/cancelled cancels the named request's handler, and its
// answer is then not sent. Every message written is one line, through one
// writer: nothing else in the server writes to the output (ServeProcess
// also moves the process's own standard output aside). Logs go to
// Options.Logger, which must not write to that output.
//
// Bad input never stops the server: a line that is not JSON gets -32700,
// a batch or a message longer than Options.MaxMessageBytes gets -32600
// (the line is skipped to its end, never held in memory), a response from
// the client (it sends none in 2026-07-28) gets -32600, a request the
// server does not serve -32601; on the 2025 path, a line that is no
// JSON-RPC request, notification or response gets -32600 before it
// reaches the session. End of input, or the end of ctx, cancels
// the requests in progress, waits for their handlers (at most
// Options.ShutdownGrace) and returns.
//
// stdio carries no credentials: every request is served for
// Options.Principal, the local user the operator names. requestState, URL
// flows and the vault are bound to it as they are to a token's subject on
// HTTP, and the URL-mode pages (served over HTTP beside the stdio server,
// see cmd/elicitd --stdio) still sign the browser in and check it is that
// same user.
package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/internal/ndjson"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// Defaults for Options fields left zero.
const (
	// DefaultMaxMessageBytes bounds one incoming message, as
	// streamhttp.DefaultMaxBodyBytes bounds a request body.
	DefaultMaxMessageBytes = 1 << 20
	// DefaultMaxInFlight caps the requests served at once.
	DefaultMaxInFlight = 64
	// DefaultShutdownGrace is how long Serve waits, once input has ended,
	// for the cancelled handlers to return.
	DefaultShutdownGrace = 5 * time.Second
)

// Options configure Serve. A nil *Options means the defaults.
type Options struct {
	// Principal is the user every request is served for (auth.Principal.ID
	// form: a user name, or issuer#subject): requestState, URL flows and
	// vault secrets are bound to it. "" serves anonymously, which handlers
	// that need a user refuse.
	Principal string
	// Logger receives why a message was refused and how the session
	// ended; nil means slog.Default(). It must not write to the output.
	Logger *slog.Logger
	// MaxMessageBytes bounds one incoming line; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxInFlight caps the requests served at once; 0 means
	// DefaultMaxInFlight. A request beyond it gets a retryable -32603
	// (retryable, with retryAfterMs) at once.
	MaxInFlight int
	// ShutdownGrace bounds the wait for cancelled handlers when input ends
	// or ctx is done; 0 means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Legacy, when set, serves a client that opens with initialize
	// (2025-11-25 and earlier) through package legacy, with these options;
	// nil serves 2026-07-28 clients only.
	Legacy *legacy.Options
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	if v.MaxMessageBytes <= 0 {
		v.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if v.MaxInFlight <= 0 {
		v.MaxInFlight = DefaultMaxInFlight
	}
	if v.ShutdownGrace <= 0 {
		v.ShutdownGrace = DefaultShutdownGrace
	}
	return v
}

// era is what the process serves, decided by the first request.
type era int

const (
	undecided era = iota
	modern
	legacyEra
)

// Serve serves srv on in (the client's messages) and out (the server's)
// until in ends, ctx is done, or out fails. It returns nil when in ended
// or out was closed by the client, ctx.Err() when ctx ended it, and the
// read error otherwise. Register every tool, prompt and resource on srv
// first. With Options.Legacy set, it tells srv that 2025-era versions are
// served too (they appear in server/discover's supportedVersions).
//
// Without Options.Principal it serves anonymously
// (mcpserver.Server.ServeAnonymously) and returns an error at once if a
// handler needs a user (mcpserver.HandlerOptions.RequirePrincipal, such
// as a connect.Step tool): nobody could finish its page.
func Serve(ctx context.Context, srv *mcpserver.Server, in io.Reader, out io.Writer, opts *Options) error {
	o := opts.withDefaults()
	if o.Principal == "" {
		if err := srv.ServeAnonymously(); err != nil {
			return fmt.Errorf("stdio: %w; set Options.Principal", err)
		}
	}
	core := transport.Of(srv)
	if o.Legacy != nil {
		core.AlsoServed(legacy.Versions...)
	}
	s := &session{srv: srv, core: core, o: o, log: o.Logger, w: ndjson.NewWriter(out), inflight: map[string]context.CancelFunc{},
		writeFailed: make(chan struct{})}
	return s.run(ctx, in)
}

// session is one client on one stream.
type session struct {
	srv  *mcpserver.Server
	core transport.Server // srv as a transport sees it
	o    Options
	log  *slog.Logger
	w    *ndjson.Writer
	era  era

	ctx    context.Context // ends when serving ends
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // by the request id's JSON text
	handlers sync.WaitGroup

	writeOnce   sync.Once
	writeFailed chan struct{} // closed when out failed

	// The 2025 side, once initialize chose it.
	legacyIn   *io.PipeWriter
	legacyDone chan error
}

// errInputEnded is the cause of the session's end when the client closed
// its output (our input).
var errInputEnded = errors.New("stdio: the client closed the input")

// line is one read from the input.
type line struct {
	b   []byte
	err error
}

func (s *session) run(parent context.Context, in io.Reader) error {
	s.ctx, s.cancel = context.WithCancelCause(parent)
	defer s.cancel(nil)
	lines := make(chan line)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// Reading stdin cannot be interrupted: this goroutine ends when a
		// read returns after serving has stopped.
		rd := ndjson.NewReader(in, s.o.MaxMessageBytes)
		for {
			b, err := rd.Next()
			var l line
			if err == nil {
				l.b = bytes.Clone(b)
			} else {
				l.err = err
			}
			select {
			case lines <- l:
			case <-stop:
				return
			}
			if err != nil && !errors.Is(err, ndjson.ErrTooLong) {
				return
			}
		}
	}()
	for {
		select {
		case <-parent.Done():
			s.log.Info("stdio: stopping", "reason", context.Cause(parent))
			s.shutdown(context.Cause(parent))
			return parent.Err()
		case <-s.writeFailed:
			s.log.Info("stdio: the output is closed; stopping", "err", s.w.Err())
			s.shutdown(errors.New("stdio: the output is closed"))
			return nil
		case err := <-s.legacyDone:
			s.legacyDone = nil
			s.log.Info("stdio: the 2025-11-25 session ended", "err", err)
			s.shutdown(errInputEnded)
			return err
		case l := <-lines:
			switch {
			case l.err == nil:
				s.handle(l.b)
			case errors.Is(l.err, ndjson.ErrTooLong):
				s.log.Warn("stdio: message too long; skipped", "limit_bytes", s.o.MaxMessageBytes)
				s.reply(jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: message longer than %d bytes", s.o.MaxMessageBytes))
			case errors.Is(l.err, io.EOF):
				s.log.Info("stdio: input ended; stopping")
				s.shutdown(errInputEnded)
				return nil
			default:
				s.log.Warn("stdio: reading the input failed; stopping", "err", l.err)
				s.shutdown(l.err)
				return l.err
			}
		}
	}
}

// shutdown cancels the requests in progress and waits for their handlers,
// and for the 2025 session, at most Options.ShutdownGrace.
func (s *session) shutdown(cause error) {
	s.cancel(cause)
	if s.legacyIn != nil {
		_ = s.legacyIn.Close()
	}
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		if s.legacyDone != nil {
			<-s.legacyDone
		}
		close(done)
	}()
	t := time.NewTimer(s.o.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("stdio: handlers still running after the shutdown grace; leaving them", "grace", s.o.ShutdownGrace)
	}
}

// write sends one message; a failed output ends the session.
func (s *session) write(v any) {
	if err := s.w.Write(v); err != nil {
		s.writeOnce.Do(func() { close(s.writeFailed) })
	}
}

func (s *session) reply(id jsonrpc.ID, e *jsonrpc.Error) {
	s.write(&jsonrpc.Response{ID: id, Error: e})
}

// head is what handle reads of any message before deciding what it is.
type head struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// handle serves one line.
func (s *session) handle(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return // a blank line carries no message
	}
	if s.era == legacyEra {
		s.toLegacy(b)
		return
	}
	req, jerr := jsonrpc.DecodeRequest(b)
	if jerr != nil {
		var h head
		if json.Unmarshal(b, &h) == nil {
			switch {
			case h.Method == nil && (h.Result != nil || h.Error != nil):
				// 2026-07-28: the server sends no requests, so the client
				// has nothing to answer.
				s.log.Warn("stdio: the client sent a response; refused")
				s.reply(jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: a client sends no responses on MCP 2026-07-28 (the server sends no requests)"))
				return
			case h.Method != nil && h.ID == nil:
				// A malformed notification: never answered
				// (cancellation.mdx: ignore it).
				s.log.Debug("stdio: malformed notification ignored", "err", jerr.Message)
				return
			}
		}
		var id jsonrpc.ID
		if req != nil {
			id = req.ID
		}
		s.reply(id, jerr)
		return
	}
	if req.IsNotification() {
		s.notification(req)
		return
	}
	if s.era == undecided {
		switch {
		case req.Method == "initialize":
			if s.o.Legacy != nil {
				s.startLegacy(b)
				return
			}
			s.refuseInitialize(req)
			return
		case req.Method == "ping" && !hasModernMeta(req.Params):
			// A 2025 client may ping before initialize; this decides nothing.
			s.write(&jsonrpc.Response{ID: req.ID, Result: struct{}{}})
			return
		case !hasModernMeta(req.Params):
			msg := "Invalid params: _meta with " + mcp.MetaProtocolVersion + " is required (MCP 2026-07-28)"
			if s.o.Legacy != nil {
				msg += "; a 2025-11-25 client sends initialize first"
			}
			s.reply(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg})
			return
		}
		s.era = modern
		s.log.Debug("stdio: serving MCP 2026-07-28")
	}
	if req.Method == "initialize" {
		s.refuseInitialize(req)
		return
	}
	s.serve(req)
}

// hasModernMeta reports whether params carry _meta protocolVersion, the
// mark of a 2026-07-28 request.
func hasModernMeta(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	_, ok := p.Meta[mcp.MetaProtocolVersion]
	return ok
}

// refuseInitialize answers initialize when it will not be served: the
// versions this process serves in -32022 (basic/versioning.mdx: a server
// names them in its error to initialize), and why.
func (s *session) refuseInitialize(req *jsonrpc.Request) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(req.Params, &p)
	supported := s.modernVersions()
	msg := "Unsupported protocol version: this server speaks MCP " + joinVersions(supported) + " (per-request _meta, no initialize)"
	if s.era == modern {
		msg = "Unsupported protocol version: this process serves MCP 2026-07-28, chosen by its first request; initialize is not served after that"
	}
	s.reply(req.ID, &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: msg,
		Data: mcp.UnsupportedVersionData{Supported: supported, Requested: p.ProtocolVersion}})
}

// modernVersions lists the versions srv serves per request (_meta), the
// ones a process serves once its era is 2026-07-28: those of the
// server's -32022 data, less the 2025 versions the legacy bridge serves.
func (s *session) modernVersions() []string {
	var out []string
	if d, ok := s.core.CheckVersion("").Data.(mcp.UnsupportedVersionData); ok {
		for _, v := range d.Supported {
			if !slices.Contains(legacy.Versions, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func joinVersions(v []string) string {
	var b bytes.Buffer
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// notification handles a client notification: notifications/cancelled
// cancels a request in progress; the rest are ignored (there are no others
// in 2026-07-28; a 2025 client's notifications/initialized may come first).
func (s *session) notification(req *jsonrpc.Request) {
	if req.Method != mcp.NotificationCancelled {
		s.log.Debug("stdio: notification ignored", "method", clip(req.Method))
		return
	}
	var p mcp.CancelledParams
	if json.Unmarshal(req.Params, &p) != nil || len(p.RequestID) == 0 {
		s.log.Debug("stdio: malformed notifications/cancelled ignored")
		return
	}
	var id jsonrpc.ID
	if id.UnmarshalJSON(p.RequestID) != nil {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[id.String()]
	s.mu.Unlock()
	if cancel == nil {
		return // done already, or never seen: ignored (cancellation.mdx)
	}
	s.log.Info("stdio: request cancelled by the client", "id", clip(id.String()), "reason", clip(p.Reason))
	cancel()
}

// serve runs one 2026-07-28 request on its own goroutine.
func (s *session) serve(req *jsonrpc.Request) {
	in, jerr := transport.Parse(req)
	if jerr == nil {
		jerr = s.core.CheckVersion(in.Meta.ProtocolVersion)
	}
	if jerr == nil && !s.core.Known(req.Method) {
		jerr = jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", clip(req.Method))
	}
	if jerr != nil {
		s.reply(req.ID, jerr)
		return
	}
	key := req.ID.String()
	s.mu.Lock()
	switch {
	case s.inflight[key] != nil:
		s.mu.Unlock()
		s.reply(req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: id %s is already used by a request in progress", clip(key)))
		return
	case len(s.inflight) >= s.o.MaxInFlight:
		s.mu.Unlock()
		s.log.Warn("stdio: too many requests in progress; refused", "max", s.o.MaxInFlight)
		s.reply(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Too many requests in progress (%d); retry later", s.o.MaxInFlight),
			Data: transport.RetryData{Retryable: true, RetryAfterMs: 100}})
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.inflight[key] = cancel
	s.handlers.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.handlers.Done()
		defer cancel()
		notify := func(n *jsonrpc.Notification) error {
			if n == nil {
				return nil // a keep-alive: stdio needs none
			}
			if ctx.Err() != nil {
				return ctx.Err() // cancelled: nothing more for this request
			}
			return s.w.Write(n)
		}
		resp := s.core.Serve(ctx, in, s.o.Principal, notify)
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		if ctx.Err() != nil {
			// Cancelled by the client, or serving stopped: no answer
			// (stdio.mdx §Cancellation).
			return
		}
		s.write(resp)
	}()
}

// startLegacy hands the stream to package legacy, starting with the
// initialize request b; from now on every line goes there.
func (s *session) startLegacy(b []byte) {
	s.era = legacyEra
	s.log.Debug("stdio: serving a 2025-era client")
	pr, pw := io.Pipe()
	s.legacyIn = pw
	done := make(chan error, 1)
	s.legacyDone = done
	go func() {
		err := legacy.ServeStream(s.ctx, s.srv, pr, lineWriter{s}, s.o.Principal, s.o.Legacy)
		_ = pr.CloseWithError(errors.New("stdio: the 2025-11-25 session ended"))
		done <- err
	}()
	s.toLegacy(b)
}

// toLegacy passes one line to the 2025 session, after the checks package
// legacy cannot make in a stream (its session would end on a line that is
// not a JSON-RPC message): JSON, one object (batches are refused, as on
// 2026-07-28 and by 2025-06-18 and later), a request, a notification or a
// response to one of the server's requests.
func (s *session) toLegacy(b []byte) {
	if id, jerr := legacyMessage(b); jerr != nil {
		if !id.IsZero() || jerr.Code != jsonrpc.CodeInvalidRequest || !isNotification(b) {
			s.reply(id, jerr)
		}
		return
	}
	if _, err := s.legacyIn.Write(append(b, '\n')); err != nil {
		s.log.Debug("stdio: the 2025-11-25 session takes no more input", "err", err)
	}
}

// legacyMessage checks that b is one JSON-RPC message a 2025-era client
// may send: a request or notification (jsonrpc.DecodeRequest's rules), or
// a response, with "jsonrpc":"2.0", a string or integer id and exactly one
// of an object "result" or an "error" with an integer code and a string
// message. It returns the error to answer with, and the id when read.
func legacyMessage(b []byte) (jsonrpc.ID, *jsonrpc.Error) {
	req, jerr := jsonrpc.DecodeRequest(b)
	if jerr == nil {
		return jsonrpc.ID{}, nil
	}
	var id jsonrpc.ID
	if req != nil {
		id = req.ID
	}
	var h struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if jerr.Code != jsonrpc.CodeInvalidRequest || json.Unmarshal(b, &h) != nil || h.Method != nil {
		return id, jerr
	}
	bad := jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: not a JSON-RPC request, notification or response")
	var rid jsonrpc.ID
	if h.JSONRPC != "2.0" || rid.UnmarshalJSON(h.ID) != nil || rid.IsZero() {
		return jsonrpc.ID{}, bad
	}
	switch {
	case h.Result != nil && h.Error == nil && len(h.Result) > 0 && h.Result[0] == '{':
	case h.Result == nil && h.Error != nil && h.Error.Code != nil && h.Error.Message != nil:
	default:
		return jsonrpc.ID{}, bad
	}
	return jsonrpc.ID{}, nil
}

// isNotification reports whether b is a JSON object with a method and no
// id: a malformed notification is never answered.
func isNotification(b []byte) bool {
	var h struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	return json.Unmarshal(b, &h) == nil && h.Method != nil && h.ID == nil
}

// lineWriter takes package legacy's messages (one whole line per Write)
// onto the session's writer, so they never interleave with its own.
type lineWriter struct{ s *session }

func (l lineWriter) Write(p []byte) (int, error) {
	if err := l.s.w.WriteLine(bytes.TrimSuffix(p, []byte("\n"))); err != nil {
		l.s.writeOnce.Do(func() { close(l.s.writeFailed) })
		return 0, err
	}
	return len(p), nil
}

// clip bounds client text quoted in a log line or an error.
func clip(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}
