package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// upstream is one configured server and the gateway's connection to it:
// an mcpclient.Client for a 2026-07-28 upstream (stateless, shared by
// every user: each request carries its user's token), or a pool of
// go-sdk sessions for a 2025 upstream (one per user, capability set and
// call in progress).
type upstream struct {
	g     *Gateway
	cfg   Upstream
	creds Credentials
	http  *http.Client

	mu     sync.Mutex
	rev    string            // the revision spoken, "" until found out
	modern *mcpclient.Client // a URL upstream's client, shared by every user
	pool   *sessionPool
	procs  *processPool // a Command upstream's processes, one per user
	// nameJSON is the upstream's name as a JSON string (MetaUpstream).
	nameJSON json.RawMessage
}

func newUpstream(g *Gateway, cfg Upstream) *upstream {
	u := &upstream{g: g, cfg: cfg, creds: cfg.Credentials, http: cfg.HTTPClient, nameJSON: quote(cfg.Name)}
	if u.creds == nil {
		u.creds = Anonymous{}
	}
	if u.http == nil {
		u.http = &http.Client{Transport: defaultTransport}
	}
	u.pool = newSessionPool(u)
	if cfg.Command != nil {
		u.procs = newProcessPool(u)
		return u
	}
	u.modern = mcpclient.New(cfg.URL, &mcpclient.Options{
		HTTPClient: u.http,
		Authorizer: upstreamAuth{u},
		ClientInfo: g.info,
		Logger:     g.log,
		// A gateway must not loop on its own: one retry round at a time
		// is the client's to drive.
		MaxRounds: 1,
	})
	return u
}

// client returns the client that reaches the upstream for principal, and
// the function to call with the request's error when done with it: the
// shared client of a URL upstream, or principal's own process of a
// Command upstream.
func (u *upstream) client(ctx context.Context, principal string) (*mcpclient.Client, func(error), error) {
	if u.procs == nil {
		return u.modern, func(error) {}, nil
	}
	pr, err := u.procs.acquire(ctx, principal)
	if err != nil {
		return nil, nil, err
	}
	return pr.c, func(err error) { u.procs.release(pr, err) }, nil
}

// where names the upstream in logs: its URL, or its command's program.
func (u *upstream) where() string {
	if u.cfg.Command == nil {
		return u.cfg.URL
	}
	return "stdio"
}

func (u *upstream) maxProcesses() int {
	if u.cfg.MaxProcesses > 0 {
		return u.cfg.MaxProcesses
	}
	return DefaultMaxProcesses
}

func (u *upstream) processIdle() time.Duration {
	if u.cfg.ProcessIdle > 0 {
		return u.cfg.ProcessIdle
	}
	return DefaultProcessIdle
}

func (u *upstream) revision() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.rev
}

func (u *upstream) close() {
	u.pool.closeAll()
	if u.procs != nil {
		u.procs.closeAll()
	}
}

// defaultTransport is the upstreams' connection pool when Upstream gives
// no HTTPClient: net/http's defaults, but keeping enough connections to
// each upstream idle that requests at once reuse them instead of dialing
// (http.DefaultTransport keeps 2 per host).
var defaultTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 256
	return t
}()

// principalKey carries the user a request to an upstream is made for.
type principalKey struct{}

func withPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// upstreamAuth gives each request the token of its user at the upstream
// (mcpclient.Authorizer). It cannot sign anyone in: a refusal ends the
// request.
type upstreamAuth struct{ u *upstream }

func (a upstreamAuth) Token(ctx context.Context) (string, error) {
	return a.u.creds.Token(ctx, principalOf(ctx))
}

func (a upstreamAuth) Authorize(context.Context, *mcpclient.Challenge) error {
	return errUpstreamRefused
}

var errUpstreamRefused = errors.New("gateway: the upstream refused the gateway's credentials for this user")

// find finds out the upstream's revision, once: Upstream.Revision when
// set, else a server/discover at 2026-07-28, else a 2025-11-25 session.
func (u *upstream) find(ctx context.Context) (string, error) {
	if rev := u.revision(); rev != "" {
		return rev, nil
	}
	rev := u.cfg.Revision
	if u.procs != nil {
		// The gateway's own process says: it is refused unless it speaks
		// 2026-07-28.
		_, done, err := u.client(ctx, CatalogPrincipal)
		if err != nil {
			return "", err
		}
		done(nil)
		rev = Revision2026
	}
	if rev == "" {
		d, err := u.modern.Discover(withPrincipal(ctx, CatalogPrincipal))
		switch {
		case err == nil && slices.Contains(d.SupportedVersions, Revision2026):
			rev = Revision2026
		case unreachable(err):
			return "", err
		case refusedStatus(err) != 0:
			return "", u.refused(ctx, refusedStatus(err))
		case errors.Is(err, ErrNoCredentials):
			return "", fmt.Errorf("no credentials configured for the gateway's own requests to it (principal %s in --upstream-tokens, CatalogPrincipal in Upstream.Credentials)", CatalogToken)
		default:
			// A 2025-era server answers discover with an error (no
			// session, unknown method, another version), an odd status,
			// or (go-sdk's stateful server) a result without 2026-07-28
			// among its supportedVersions.
			if err2 := u.pool.probe(ctx); err2 != nil {
				return "", fmt.Errorf("neither server/discover at %s (%v) nor initialize at %s (%v) worked", Revision2026, err, Revision2025, err2)
			}
			rev = Revision2025
		}
	}
	u.mu.Lock()
	u.rev = rev
	u.mu.Unlock()
	return rev, nil
}

// refusedStatus is the HTTP status (401 or 403) of an upstream that
// answered but refused the gateway's credential, 0 for any other err.
func refusedStatus(err error) int {
	var ae *mcpclient.AuthError
	if errors.As(err, &ae) && (ae.StatusCode == http.StatusUnauthorized || ae.StatusCode == http.StatusForbidden) {
		return ae.StatusCode
	}
	return 0
}

// refused is the error of an upstream that refused the gateway's own
// request with status: whether the gateway sent no credential or one the
// upstream did not take (the token itself never in it).
func (u *upstream) refused(ctx context.Context, status int) error {
	if tok, err := u.creds.Token(ctx, CatalogPrincipal); err != nil || tok == "" {
		return fmt.Errorf("it refused the gateway (HTTP %d): no credentials configured for it; give its token for the gateway's own requests (principal %s) and each user's (--upstream-tokens, Upstream.Credentials)", status, CatalogToken)
	}
	return fmt.Errorf("it refused the gateway's own credential (principal %s) (HTTP %d); check the token configured for it (--upstream-tokens, Upstream.Credentials)", CatalogToken, status)
}

// unreachable reports whether err means the upstream could not be
// reached at all (no answer), as opposed to an answer the gateway did not
// like.
func unreachable(err error) bool {
	var ce *mcpclient.ConnectionError
	var pe *errProcess
	return errors.As(err, &ce) || errors.As(err, &pe) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// item is one element of an upstream's list: its raw object, its name
// (tool or prompt name, resource URI or URI template) and, for a tool,
// its x-mcp-header parameters.
type item struct {
	name    string
	obj     *object
	headers []mcp.HeaderParam
}

// listing is what one upstream offers.
type listing struct {
	tools, prompts, resources, templates []item
	caps                                 mcp.ServerCapabilities
	instructions                         string
	ttl                                  time.Duration // shortest list ttl; 0 = unknown
	private                              bool
}

// listModern reads a 2026-07-28 upstream's catalog.
func (u *upstream) listModern(ctx context.Context) (l *listing, err error) {
	ctx = withPrincipal(ctx, CatalogPrincipal)
	c, done, err := u.client(ctx, CatalogPrincipal)
	if err != nil {
		return nil, err
	}
	defer func() { done(err) }()
	d, err := c.Discover(ctx)
	if err != nil {
		return nil, err
	}
	l = &listing{caps: d.Capabilities, instructions: d.Instructions, ttl: time.Duration(d.TTLMs) * time.Millisecond, private: d.CacheScope != mcp.CacheScopePublic}
	lists := []struct {
		on     bool
		method string
		member string
		key    string
		into   *[]item
	}{
		{d.Capabilities.Tools != nil, mcp.MethodToolsList, "tools", "name", &l.tools},
		{d.Capabilities.Prompts != nil, mcp.MethodPromptsList, "prompts", "name", &l.prompts},
		{d.Capabilities.Resources != nil, mcp.MethodResourcesList, "resources", "uri", &l.resources},
		{d.Capabilities.Resources != nil, mcp.MethodResourceTemplatesList, "resourceTemplates", "uriTemplate", &l.templates},
	}
	for _, li := range lists {
		if !li.on {
			continue
		}
		if err := walk(ctx, c, li.method, li.member, li.key, l, li.into); err != nil {
			return nil, fmt.Errorf("%s: %w", li.method, err)
		}
	}
	l.tools = keepToolsWithValidHeaders(u.g.log, u.cfg.Name, l.tools)
	return l, nil
}

// maxPages bounds one list walk.
const maxPages = 1000

// walk reads every page of a list method into items, keyed by the key
// member of each element.
func walk(ctx context.Context, c *mcpclient.Client, method, member, key string, l *listing, into *[]item) error {
	cursor := ""
	seen := map[string]bool{}
	for range maxPages {
		raw, err := c.SendRaw(ctx, &mcpclient.RawRequest{Method: method, Cursor: cursor})
		if err != nil {
			return err
		}
		o, err := parseObject(raw)
		if err != nil {
			return err
		}
		var head struct {
			NextCursor string `json:"nextCursor"`
			TTLMs      *int64 `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return err
		}
		if head.TTLMs != nil {
			if t := time.Duration(*head.TTLMs) * time.Millisecond; l.ttl == 0 || t < l.ttl {
				l.ttl = t
			}
		}
		if head.CacheScope != mcp.CacheScopePublic {
			l.private = true
		}
		items, err := readItems(o.get(member), key)
		if err != nil {
			return err
		}
		*into = append(*into, items...)
		if head.NextCursor == "" {
			return nil
		}
		if seen[head.NextCursor] {
			return errors.New("nextCursor repeats an earlier cursor")
		}
		seen[head.NextCursor] = true
		cursor = head.NextCursor
	}
	return fmt.Errorf("more than %d pages", maxPages)
}

// readItems reads a list member (an array of objects) keeping each
// element's raw members.
func readItems(arr jsontext.Value, key string) ([]item, error) {
	if arr == nil {
		return nil, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(arr, &elems); err != nil {
		return nil, err
	}
	out := make([]item, 0, len(elems))
	for _, e := range elems {
		o, err := parseObject(e)
		if err != nil {
			return nil, err
		}
		var name string
		if v := o.get(key); v == nil || json.Unmarshal(v, &name) != nil || name == "" {
			return nil, fmt.Errorf("an element without a %s", key)
		}
		out = append(out, item{name: name, obj: o})
	}
	return out, nil
}

// answer is an upstream's reply to one round of a call.
type answer struct {
	// result is a complete result's raw object; nil for an interim one.
	result *object
	// interim: the raw inputRequests (may be nil), the upstream's
	// requestState, and the result's raw object for its _meta.
	requests map[string]jsontext.Value
	asked    []asked // what each of requests asks
	rawReqs  jsontext.Value
	hasState bool
	state    string
	interim  *object
	// held is set for a 2025 upstream's request, which the gateway holds.
	held *heldRound
}

// forwardModern sends one round of r to a 2026-07-28 upstream: the
// upstream's own name for the target, the arguments and answers as the
// client sent them, the upstream's requestState from the gateway's state,
// the client's capabilities, progress token and log level in _meta, and
// MetaCall. Notifications and keep-alives on the upstream's stream reach
// the client as they come.
func (u *upstream) forwardModern(ctx context.Context, r *request, target string, headers []mcp.HeaderParam, st *payload, call string) (*answer, error) {
	rr := &mcpclient.RawRequest{
		Method:         r.method,
		Arguments:      r.args,
		InputResponses: r.responses,
		Capabilities:   &r.meta.ClientCapabilities,
		HeaderParams:   headers,
		Meta:           map[string]json.RawMessage{},
		OnMessage:      r.relay,
	}
	if call != "" {
		rr.Meta[MetaCall] = quote(call)
	}
	if headers == nil && r.method == mcp.MethodToolsCall {
		rr.HeaderParams = []mcp.HeaderParam{}
	}
	if r.meta.ProgressToken != nil {
		rr.Meta[mcp.MetaProgressToken] = r.meta.ProgressToken
	}
	if r.meta.LogLevel != "" {
		rr.Meta[mcp.MetaLogLevel] = quote(r.meta.LogLevel)
	}
	switch r.method {
	case mcp.MethodResourcesRead:
		rr.URI = target
	case mcp.MethodCompletionComplete:
		rr.Ref, rr.Argument = r.ref, r.argument
	default:
		rr.Name = target
	}
	if st != nil && st.hasState {
		s := st.state
		rr.RequestState = &s
	}
	c, done, err := u.client(ctx, r.principal)
	if err != nil {
		return nil, u.wireError(r, err)
	}
	raw, err := c.SendRaw(withPrincipal(ctx, r.principal), rr)
	done(err)
	if err != nil {
		return nil, u.wireError(r, err)
	}
	return readAnswer(raw)
}

// readAnswer classifies an upstream's raw result (MRTR-C-07, MRTR-C-08).
// A malformed interim result (a requestState that is not a string,
// inputRequests that are not an object of {method, params}) is the
// upstream's fault: -32603, never coerced.
func readAnswer(raw json.RawMessage) (*answer, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, upstreamBroke("its result is not a JSON object")
	}
	rt := mcp.ResultTypeComplete
	if v := o.get("resultType"); v != nil && string(v) != "null" {
		if json.Unmarshal(v, &rt) != nil {
			return nil, upstreamBroke("resultType is not a string")
		}
	}
	switch rt {
	case mcp.ResultTypeComplete:
		return &answer{result: o}, nil
	case mcp.ResultTypeInputRequired:
		return readInterim(o)
	}
	return nil, upstreamBroke(fmt.Sprintf("unknown resultType %s", strconv.Quote(clip(rt, 40))))
}

// readInterim reads an input_required result: its requestState (a string
// when present) and its inputRequests; at least one of them.
func readInterim(o *object) (*answer, error) {
	a := &answer{interim: o}
	if v := o.get("requestState"); v != nil && string(v) != "null" {
		if v.Kind() != '"' || json.Unmarshal(v, &a.state) != nil {
			return nil, upstreamBroke("requestState is not a string")
		}
		a.hasState = true
	}
	if v := o.get("inputRequests"); v != nil && string(v) != "null" {
		reqs, all, err := readInputRequests(v)
		if err != nil {
			return nil, err
		}
		a.requests, a.asked, a.rawReqs = reqs, all, v
	}
	if len(a.requests) == 0 && !a.hasState {
		return nil, upstreamBroke("input_required with neither inputRequests nor requestState")
	}
	return a, nil
}

// readInputRequests reads inputRequests: an object whose every member is
// an object with a method; and what each asks.
func readInputRequests(v jsontext.Value) (map[string]jsontext.Value, []asked, error) {
	var reqs map[string]jsontext.Value
	if v.Kind() != '{' || json.Unmarshal(v, &reqs) != nil {
		return nil, nil, upstreamBroke("inputRequests is not an object")
	}
	all := make([]asked, 0, len(reqs))
	for k, rv := range reqs {
		a, ok := askedOf(rv)
		if !ok {
			return nil, nil, upstreamBroke(fmt.Sprintf("input request %s is not {method, params}", strconv.Quote(clip(k, 40))))
		}
		all = append(all, a)
	}
	return reqs, all, nil
}

// upstreamBroke is the error of an upstream that broke the protocol.
func upstreamBroke(why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The upstream server broke the protocol: " + why}
}

// wireError turns a failed upstream request into the client's error: the
// upstream's JSON-RPC error as it came (code, message, data); an upstream
// that cannot be reached, a retryable -32603; refused credentials or a
// user without any, -32603 saying so; anything else, -32603 with the
// cause logged.
func (u *upstream) wireError(r *request, err error) *jsonrpc.Error {
	var rpc *mcpclient.RPCError
	var ae *mcpclient.AuthError
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		e := &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message}
		if rpc.Data != nil {
			e.Data = retryData(rpc.Data)
		}
		return e
	case errors.As(err, &je): // the gateway's own, e.g. no process free
		return je
	case errors.Is(err, ErrNoCredentials):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("The gateway holds no credentials for you at upstream %q; ask its operator", u.cfg.Name)}
	case errors.As(err, &ae):
		u.g.log.Warn("gateway: upstream refused the credentials", "upstream", u.cfg.Name, "status", ae.StatusCode, "principal", r.principal)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Upstream %q refused the gateway's credentials for you (HTTP %d)", u.cfg.Name, ae.StatusCode)}
	case errors.Is(err, context.Canceled):
		return jsonrpc.NewError(jsonrpc.CodeInternalError, "Request cancelled")
	case unreachable(err) || errors.Is(err, mcpclient.ErrStreamEnded):
		u.g.log.Warn("gateway: upstream unreachable", "upstream", u.cfg.Name, "method", r.method, "err", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Upstream %q is unreachable; retry later", u.cfg.Name),
			Data: transport.RetryData{Retryable: true, RetryAfterMs: 1000}}
	}
	u.g.log.Error("gateway: upstream request failed", "upstream", u.cfg.Name, "method", r.method, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Upstream %q failed to answer", u.cfg.Name)}
}

// retryData keeps an upstream error's data as it came, except that a
// retryable -32603's data becomes transport.RetryData, so the client gets
// the same HTTP 503 and Retry-After the upstream gave.
func retryData(raw json.RawMessage) any {
	var rd transport.RetryData
	if json.Unmarshal(raw, &rd) == nil && rd.Retryable {
		var all map[string]json.RawMessage
		if json.Unmarshal(raw, &all) == nil && len(all) <= 3 {
			return rd
		}
	}
	return raw
}

// clip cuts s to n bytes at most, for messages that quote upstream text.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
