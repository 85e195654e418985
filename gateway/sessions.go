package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/internal/quietlog"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// sessionPool holds a 2025 upstream's sessions. A session belongs to one
// user and one capability set (what that user's client declared, which
// a 2025 session fixes at initialize), and serves one call at a time, so
// every request the upstream sends on it belongs to that call. Idle
// sessions are reused and closed after Options.SessionIdle.
type sessionPool struct {
	u      *upstream
	mu     sync.Mutex
	idle   map[string][]*session // by key (principal and capabilities)
	count  map[string]int        // sessions per principal, idle or not
	all    map[*session]bool
	closed bool
}

func newSessionPool(u *upstream) *sessionPool {
	return &sessionPool{u: u, idle: map[string][]*session{}, count: map[string]int{}, all: map[*session]bool{}}
}

// session is one go-sdk client session with a 2025 upstream.
type session struct {
	pool      *sessionPool
	key       string
	principal string
	cs        *sdk.ClientSession

	mu    sync.Mutex
	cur   *heldCall
	level string // the logging level last set
	timer *time.Timer
	gone  bool
}

func poolKey(principal string, caps *mcp.ClientCapabilities) string {
	b, _ := json.Marshal(caps)
	return principal + "\x00" + string(b)
}

// errTooManySessions refuses a call beyond MaxSessionsPerUser.
func (p *sessionPool) errTooMany() *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("Too many calls of yours in progress at upstream %q; retry when one ends", p.u.cfg.Name),
		Data:    transport.RetryData{Retryable: true, RetryAfterMs: 1000}}
}

// acquire returns an idle session of principal with caps, or opens one.
func (p *sessionPool) acquire(ctx context.Context, principal string, caps *mcp.ClientCapabilities) (*session, *jsonrpc.Error) {
	key := poolKey(principal, caps)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "The gateway is shutting down")
	}
	if idle := p.idle[key]; len(idle) > 0 {
		s := idle[len(idle)-1]
		p.idle[key] = idle[:len(idle)-1]
		p.mu.Unlock()
		s.mu.Lock()
		if s.timer != nil {
			s.timer.Stop()
		}
		s.mu.Unlock()
		return s, nil
	}
	if p.count[principal] >= p.u.g.opts.MaxSessionsPerUser {
		p.mu.Unlock()
		return nil, p.errTooMany()
	}
	p.count[principal]++
	p.mu.Unlock()
	s, err := p.open(ctx, principal, caps, key)
	if err != nil {
		p.mu.Lock()
		p.count[principal]--
		p.mu.Unlock()
		r := &request{method: "initialize", principal: principal}
		return nil, p.u.sessionError(r, err)
	}
	return s, nil
}

// sessionError is wireError for a session that could not be opened.
func (u *upstream) sessionError(r *request, err error) *jsonrpc.Error {
	if errors.Is(err, ErrNoCredentials) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("The gateway holds no credentials for you at upstream %q; ask its operator", u.cfg.Name)}
	}
	u.g.log.Warn("gateway: 2025 upstream session not opened", "upstream", u.cfg.Name, "principal", r.principal, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Upstream %q is unreachable; retry later", u.cfg.Name),
		Data: transport.RetryData{Retryable: true, RetryAfterMs: 1000}}
}

// open initializes a session for principal, declaring caps.
func (p *sessionPool) open(ctx context.Context, principal string, caps *mcp.ClientCapabilities, key string) (*session, error) {
	s := &session{pool: p, key: key, principal: principal}
	var sc sdk.ClientCapabilities
	b, _ := json.Marshal(caps)
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, err
	}
	if sc.Roots.ListChanged || caps.HasRoots() {
		sc.RootsV2 = &sdk.RootCapabilities{ListChanged: caps.Roots.ListChanged}
	}
	g := p.u.g
	client := sdk.NewClient(&sdk.Implementation{Name: g.info.Name, Version: g.info.Version}, &sdk.ClientOptions{
		Logger:       quiet(g.log),
		Capabilities: &sc,
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			s.deliver(mcp.NotificationProgress, req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			s.deliver(mcp.NotificationMessage, req.Params)
		},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	client.AddReceivingMiddleware(s.intercept)
	hc := &http.Client{Transport: &bearer{base: p.u.http.Transport, creds: p.u.creds, principal: principal}, CheckRedirect: p.u.http.CheckRedirect}
	t := &sdk.StreamableClientTransport{Endpoint: p.u.cfg.URL, HTTPClient: hc, MaxRetries: -1}
	// The session outlives the request that opened it.
	cs, err := client.Connect(context.WithoutCancel(ctx), t, &sdk.ClientSessionOptions{ProtocolVersion: Revision2025})
	if err != nil {
		return nil, err
	}
	s.cs = cs
	p.mu.Lock()
	p.all[s] = true
	p.mu.Unlock()
	return s, nil
}

// bearer adds a user's upstream token to each request of a session.
type bearer struct {
	base      http.RoundTripper
	creds     Credentials
	principal string
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := b.creds.Token(req.Context(), b.principal)
	if err != nil {
		return nil, err
	}
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	if tok == "" {
		return base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return base.RoundTrip(r)
}

// release gives a session back: reusable after a call that finished,
// closed after one that was cut off.
func (s *session) release(reusable bool) {
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	p := s.pool
	p.mu.Lock()
	if !reusable || p.closed {
		p.mu.Unlock()
		s.close()
		return
	}
	p.idle[s.key] = append(p.idle[s.key], s)
	p.mu.Unlock()
	s.mu.Lock()
	s.timer = time.AfterFunc(p.u.g.opts.SessionIdle, func() { p.expire(s) })
	s.mu.Unlock()
}

// expire closes an idle session, unless it was taken meanwhile.
func (p *sessionPool) expire(s *session) {
	p.mu.Lock()
	idle := p.idle[s.key]
	for i, o := range idle {
		if o == s {
			p.idle[s.key] = append(idle[:i], idle[i+1:]...)
			p.mu.Unlock()
			s.close()
			return
		}
	}
	p.mu.Unlock()
}

// close ends the session and forgets it.
func (s *session) close() {
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return
	}
	s.gone = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	p := s.pool
	p.mu.Lock()
	delete(p.all, s)
	p.count[s.principal]--
	if p.count[s.principal] <= 0 {
		delete(p.count, s.principal)
	}
	p.mu.Unlock()
	_ = s.cs.Close()
}

func (p *sessionPool) closeAll() {
	p.mu.Lock()
	p.closed = true
	all := make([]*session, 0, len(p.all))
	for s := range p.all {
		all = append(all, s)
	}
	p.idle = map[string][]*session{}
	p.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

func (s *session) attach(h *heldCall) {
	s.mu.Lock()
	s.cur = h
	s.mu.Unlock()
}

func (s *session) current() *heldCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// setLevel asks the upstream for log messages at level (2025 sessions
// set it once, with logging/setLevel; a 2026 request carries it).
func (s *session) setLevel(ctx context.Context, level string) {
	s.mu.Lock()
	same := s.level == level
	s.level = level
	s.mu.Unlock()
	if !same {
		_ = s.cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: sdk.LoggingLevel(level)})
	}
}

// deliver passes a notification of the upstream to the call in progress.
func (s *session) deliver(method string, params any) {
	h := s.current()
	if h == nil {
		return
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	h.deliver(&jsonrpc.Notification{Method: method, Params: json.RawMessage(raw)})
}

// intercept takes the upstream's requests to the client (elicitation,
// sampling, roots) before go-sdk's own handling, which would judge a form
// answer itself: the call in progress hands them to its client, and the
// answer goes back as the client gave it.
func (s *session) intercept(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case mcp.MethodElicitationCreate, mcp.MethodSamplingCreate, mcp.MethodRootsList:
		default:
			return next(ctx, method, req)
		}
		h := s.current()
		if h == nil {
			return nil, &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no call in progress to ask the user for"}
		}
		params, err := json.Marshal(req.GetParams())
		if err != nil {
			return nil, err
		}
		raw, err := h.ask(ctx, method, params)
		if err != nil {
			if method == mcp.MethodElicitationCreate && errors.Is(err, context.Canceled) {
				return &sdk.ElicitResult{Action: mcp.ActionCancel}, nil
			}
			return nil, err
		}
		var res sdk.Result
		switch method {
		case mcp.MethodElicitationCreate:
			res = new(sdk.ElicitResult)
		case mcp.MethodSamplingCreate:
			res = new(sdk.CreateMessageResult)
		default:
			res = new(sdk.ListRootsResult)
		}
		if err := json.Unmarshal(raw, res); err != nil {
			return nil, &sdkjsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the client's answer does not fit " + method}
		}
		return res, nil
	}
}

// run makes the call on the session and returns its result's JSON.
func (s *session) run(ctx context.Context, r *request, name, call string) (json.RawMessage, error) {
	meta := sdk.Meta{MetaCall: call}
	if r.meta.ProgressToken != nil {
		var tok any
		if err := json.Unmarshal(r.meta.ProgressToken, &tok); err == nil {
			meta[mcp.MetaProgressToken] = tok
		}
	}
	var res any
	var err error
	switch r.method {
	case mcp.MethodToolsCall:
		p := &sdk.CallToolParams{Meta: meta, Name: name}
		if len(r.args) > 0 && string(r.args) != "null" {
			p.Arguments = r.args
		}
		res, err = s.cs.CallTool(ctx, p)
	case mcp.MethodPromptsGet:
		p := &sdk.GetPromptParams{Meta: meta, Name: name}
		if len(r.args) > 0 && string(r.args) != "null" {
			if err := json.Unmarshal(r.args, &p.Arguments); err != nil {
				return nil, &sdkjsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: prompt arguments must be an object of strings"}
			}
		}
		res, err = s.cs.GetPrompt(ctx, p)
	case mcp.MethodResourcesRead:
		res, err = s.cs.ReadResource(ctx, &sdk.ReadResourceParams{Meta: meta, URI: name})
	default:
		return nil, fmt.Errorf("method %s is not a call", r.method)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// probe opens the gateway's own session, to learn that the upstream
// speaks 2025-11-25; it stays idle in the pool for listing.
func (p *sessionPool) probe(ctx context.Context) error {
	s, jerr := p.acquire(ctx, CatalogPrincipal, &mcp.ClientCapabilities{})
	if jerr != nil {
		return errors.New(jerr.Message)
	}
	s.release(true)
	return nil
}

// list reads the upstream's catalog on the gateway's own session.
func (p *sessionPool) list(ctx context.Context) (*listing, error) {
	s, jerr := p.acquire(ctx, CatalogPrincipal, &mcp.ClientCapabilities{})
	if jerr != nil {
		return nil, errors.New(jerr.Message)
	}
	ok := false
	defer func() { s.release(ok) }()
	init := s.cs.InitializeResult()
	l := &listing{private: true}
	if init != nil {
		l.instructions = init.Instructions
		if c := init.Capabilities; c != nil {
			b, _ := json.Marshal(c)
			_ = json.Unmarshal(b, &l.caps)
		}
	}
	collect := func(key string, into *[]item, seq func(yield func(json.RawMessage, error) bool)) error {
		var raws []json.RawMessage
		for raw, err := range seq {
			if err != nil {
				return err
			}
			raws = append(raws, raw)
		}
		items, err := readItems(jsontext.Value(rawArray(raws)), key)
		*into = items
		return err
	}
	if l.caps.Tools != nil {
		if err := collect("name", &l.tools, each(s.cs.Tools(ctx, nil))); err != nil {
			return nil, err
		}
	}
	if l.caps.Prompts != nil {
		if err := collect("name", &l.prompts, each(s.cs.Prompts(ctx, nil))); err != nil {
			return nil, err
		}
	}
	if l.caps.Resources != nil {
		if err := collect("uri", &l.resources, each(s.cs.Resources(ctx, nil))); err != nil {
			return nil, err
		}
		if err := collect("uriTemplate", &l.templates, each(s.cs.ResourceTemplates(ctx, nil))); err != nil {
			return nil, err
		}
	}
	l.tools = keepToolsWithValidHeaders(p.u.g.log, p.u.cfg.Name, l.tools)
	ok = true
	return l, nil
}

// each turns a go-sdk list iterator into one of raw JSON items.
func each[T any](seq func(yield func(T, error) bool)) func(yield func(json.RawMessage, error) bool) {
	return func(yield func(json.RawMessage, error) bool) {
		for v, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			b, err := json.Marshal(v)
			if !yield(b, err) || err != nil {
				return
			}
		}
	}
}

// complete forwards completion/complete on a session of the user's.
func (p *sessionPool) complete(ctx context.Context, r *request) (*object, *jsonrpc.Error) {
	s, jerr := p.acquire(ctx, r.principal, &r.meta.ClientCapabilities)
	if jerr != nil {
		return nil, jerr
	}
	params := &sdk.CompleteParams{}
	if json.Unmarshal(r.ref, &params.Ref) != nil || json.Unmarshal(r.argument, &params.Argument) != nil {
		s.release(true)
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: ref and argument are required")
	}
	res, err := s.cs.Complete(ctx, params)
	s.release(err == nil)
	if err != nil {
		var we *sdkjsonrpc.Error
		if errors.As(err, &we) {
			e := &jsonrpc.Error{Code: int(we.Code), Message: we.Message}
			if len(we.Data) > 0 {
				e.Data = json.RawMessage(we.Data)
			}
			return nil, e
		}
		return nil, p.u.sessionError(r, err)
	}
	o, perr := parseObject(mustJSON(res))
	if perr != nil {
		return nil, upstreamBroke("its result is not a JSON object")
	}
	o.set("resultType", quote(mcp.ResultTypeComplete))
	return o, nil
}

// keepToolsWithValidHeaders drops tools whose x-mcp-header annotations
// break the rules (HTTP-C-12: a client drops them, and the gateway is a
// client of the upstream), keeping each tool's parameters.
func keepToolsWithValidHeaders(log *slog.Logger, upstream string, tools []item) []item {
	kept := tools[:0]
	for _, t := range tools {
		params, err := mcp.ToolHeaderParams(json.RawMessage(t.obj.get("inputSchema")))
		if err != nil {
			log.Warn("gateway: dropping an upstream tool with invalid x-mcp-header (HTTP-C-12)", "upstream", upstream, "tool", clip(t.name, 100), "reason", err.Error())
			continue
		}
		t.headers = params
		kept = append(kept, t)
	}
	return kept
}

// quiet logs go-sdk's INFO records (one per session) at DEBUG.
func quiet(l *slog.Logger) *slog.Logger { return quietlog.Demote(l) }
