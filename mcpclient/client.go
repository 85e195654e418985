// Package mcpclient is an MCP 2026-07-28 client over the stateless
// Streamable HTTP binding (basic/transports/streamable-http.mdx, New) or
// the stdio binding to a command it launches (basic/transports/stdio.mdx,
// NewCommand): discover, list, call, get and read, with the multi
// round-trip (MRTR) input loop done for the caller
// (basic/patterns/mrtr.mdx §Client Requirements). Both bindings share
// everything above the transport: the input loop, the version fallback,
// the typed errors.
//
// Over HTTP every request is its own POST carrying the standard headers
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-* for
// x-mcp-header arguments) and a fresh _meta with the protocol version, the
// client capabilities derived from Handlers, and clientInfo. Responses may
// be JSON or SSE. Over stdio the same request is one line on the server's
// standard input; a server that predates 2026-07-28 is reached through
// the initialize handshake instead (see NewCommand).
//
// When a call answers input_required, CallTool, GetPrompt and ReadResource
// answer every input request through Handlers and retry: a new JSON-RPC id
// each round (MRTR-C-03), the same name and arguments, the answers in
// inputResponses, and the requestState echoed byte for byte, or left out
// when the server sent none (RS-C-01..03). The loop is capped
// (Options.MaxRounds). CallToolOnce and its siblings send one round only,
// for callers that drive the loop themselves.
//
// Errors: *RPCError for JSON-RPC errors, *MissingCapabilityError for
// -32021, *UnsupportedVersionError when no common version exists,
// *ConnectionError, *AuthError, *NotMCPError for an endpoint that is not an
// MCP server, *ProtocolError for a server that broke the protocol;
// ErrRoundLimit, ErrStateOnlyLimit, ErrStreamEnded and ErrToolDropped are
// sentinels. Bad server input is an error, never a panic.
//
// # Public surface
//
// New, Client and Options; Handlers (what the client answers, and the
// capabilities it declares) and Asker (who asks, for a consent screen);
// InputRequired, InputRequest and Retry for callers that drive the rounds
// themselves; Progress; the error types and sentinels above; RawRequest
// and Client.SendRaw, which break the echo rules on purpose, for tools
// that test servers; DefaultClientInfo and the Default* limits.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxRounds          = 10
	DefaultMaxStateOnlyRounds = 3
	DefaultStateOnlyDelay     = 200 * time.Millisecond
	DefaultMaxMessageBytes    = 16 << 20
)

// DefaultClientInfo is sent as clientInfo when Options.ClientInfo is zero.
var DefaultClientInfo = mcp.Implementation{Name: "elicit-mcpclient", Version: "0.1.0"}

// maxPages bounds one list walk, against a server whose cursors never end.
const maxPages = 1000

// Options configure a Client. A nil *Options means the defaults.
type Options struct {
	// HTTPClient sends the requests; nil means a new &http.Client{}. Give
	// it no Timeout shorter than your longest tool call: SSE answers stay
	// open while the server works. Cancel through the context instead.
	HTTPClient *http.Client
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	// Authorizer, when set, takes its place.
	Token string
	// Authorizer, when set, gives every request its bearer token and
	// answers the server's 401 and 403 insufficient_scope refusals (sign
	// in, refresh, step up), after which the request is sent again
	// (basic/authorization.mdx). Package mcpclient/oauth has one for
	// OAuth 2.1. A refusal it cannot answer is an *AuthError with Err set.
	Authorizer Authorizer
	// MaxAuthorizations caps the Authorize calls for one request; 0 means
	// DefaultMaxAuthorizations. When the server still refuses after that,
	// the request fails with ErrAuthorizeLimit.
	MaxAuthorizations int
	// ClientInfo is sent as _meta clientInfo on every request (META-C-02);
	// the zero value means DefaultClientInfo.
	ClientInfo mcp.Implementation
	// Handlers answer input requests. The client declares exactly the
	// capabilities whose handlers are set (Handlers.Capabilities); nil
	// declares none ({}), and any input request is then an error. The
	// struct is copied by New.
	Handlers *Handlers
	// Extensions are declared in every request's _meta under
	// clientCapabilities.extensions, each identifier with its settings
	// object (nil means {}): basic/versioning.mdx §Extension Negotiation.
	// A server uses an extension's methods and result types only for a
	// request that declares it. New panics on an identifier that is not
	// one (mcp.ValidExtensionID) or settings that are not an object.
	Extensions map[string]json.RawMessage
	// MaxRounds caps the retries of one call: when the server still
	// answers input_required after MaxRounds retries, the call fails with
	// ErrRoundLimit. 0 means DefaultMaxRounds.
	MaxRounds int
	// MaxStateOnlyRounds caps consecutive state-only interim results (no
	// inputRequests: "come back later"); 0 means DefaultMaxStateOnlyRounds.
	MaxStateOnlyRounds int
	// StateOnlyDelay is the wait before the first retry of a state-only
	// interim result; it doubles for each consecutive one (200 ms, 400 ms,
	// 800 ms by default). 0 means DefaultStateOnlyDelay; negative means no
	// wait.
	StateOnlyDelay time.Duration
	// ProtocolVersion is the version sent first; "" means
	// mcp.ProtocolVersion. On -32022 the client retries once with a
	// version from data.supported that it speaks: ProtocolVersion or
	// mcp.ProtocolVersion (VER-C-02).
	ProtocolVersion string
	// OnProgress, when set, makes every request carry a progressToken and
	// receives the notifications/progress that arrive on SSE answers. It is
	// called on the calling goroutine, between reads.
	OnProgress func(Progress)
	// OnTaskUpdate, when set, is told about each task a call became
	// (tasks extension, declared in Extensions) while the client follows
	// it: once when the task is created (Polls 0), then whenever a
	// tasks/get shows another status or statusMessage, terminal statuses
	// included. It is called on the calling goroutine, before the client
	// acts on what it learnt (answers the task's input requests, returns
	// the result), so a host can update a status line, and take the
	// terminal back before a prompt. To cancel the task, end the call's
	// context: the client sends tasks/cancel and returns the context's
	// error. See TaskUpdate.
	OnTaskUpdate func(TaskUpdate)
	// Logger receives why a tool was dropped from ListTools (HTTP-C-12)
	// and other server oddities; nil means slog.Default().
	Logger *slog.Logger
	// MaxMessageBytes bounds one response message (JSON body, SSE event,
	// or stdio line); 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// ProbeTimeout (NewCommand only) is how long the server/discover probe
	// may go unanswered before the server is taken for an initialize-era
	// one; 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// TerminateGrace (NewCommand only) is how long Close waits for the
	// server to exit after closing its input, and again after SIGTERM,
	// before it kills it; 0 means DefaultTerminateGrace.
	TerminateGrace time.Duration
}

// Progress is one notifications/progress for a request of this client.
type Progress struct {
	// Method is the request's method; Target its tool or prompt name or
	// resource URI ("" for other methods).
	Method, Target string
	// Progress, Total (0 when unknown) and Message are the notification's.
	Progress, Total float64
	Message         string
}

// Client talks to one MCP endpoint. It is safe for concurrent use; each
// call is independent (stateless protocol).
type Client struct {
	endpoint     string
	http         *http.Client
	token        string
	authorizer   Authorizer
	maxAuth      int
	info         mcp.Implementation
	handlers     Handlers
	caps         mcp.ClientCapabilities
	maxRounds    int
	maxStateOnly int
	stateDelay   time.Duration
	versions     []string // spoken versions, preferred first
	onProgress   func(Progress)
	onTask       func(TaskUpdate)
	log          *slog.Logger
	maxMsg       int64

	nextID  atomic.Int64
	tr      transport
	command string // the command line of a NewCommand client

	mu      sync.Mutex
	version string
	server  *mcp.Implementation
	listed  bool
	tools   map[string]toolEntry
}

// toolEntry is what ListTools learnt about a tool: its x-mcp-header
// parameters, or why it was dropped.
type toolEntry struct {
	params  []mcp.HeaderParam
	dropped error
}

// New returns a client for the MCP endpoint URL (e.g.
// "http://127.0.0.1:3000/mcp"). It does no I/O; a bad URL is reported by
// the first call. NewCommand makes a client of a local command instead.
func New(endpoint string, opts *Options) *Client {
	c := newClient(opts)
	c.endpoint = endpoint
	c.tr = httpTransport{c}
	return c
}

// newClient applies the options; the caller sets the transport.
func newClient(opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{http: o.HTTPClient, token: o.Token, authorizer: o.Authorizer, maxAuth: o.MaxAuthorizations, info: o.ClientInfo,
		maxRounds: o.MaxRounds, maxStateOnly: o.MaxStateOnlyRounds, stateDelay: o.StateOnlyDelay,
		onProgress: o.OnProgress, onTask: o.OnTaskUpdate, log: o.Logger, maxMsg: o.MaxMessageBytes}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.info == (mcp.Implementation{}) {
		c.info = DefaultClientInfo
	}
	if o.Handlers != nil {
		c.handlers = *o.Handlers
	}
	c.caps = c.handlers.Capabilities()
	c.caps.Extensions = extensions(o.Extensions)
	if c.maxRounds <= 0 {
		c.maxRounds = DefaultMaxRounds
	}
	if c.maxAuth <= 0 {
		c.maxAuth = DefaultMaxAuthorizations
	}
	if c.maxStateOnly <= 0 {
		c.maxStateOnly = DefaultMaxStateOnlyRounds
	}
	if c.stateDelay == 0 {
		c.stateDelay = DefaultStateOnlyDelay
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.maxMsg <= 0 {
		c.maxMsg = DefaultMaxMessageBytes
	}
	c.version = o.ProtocolVersion
	if c.version == "" {
		c.version = mcp.ProtocolVersion
	}
	c.versions = []string{c.version}
	if c.version != mcp.ProtocolVersion {
		c.versions = append(c.versions, mcp.ProtocolVersion)
	}
	return c
}

// extensions checks and copies Options.Extensions.
func extensions(in map[string]json.RawMessage) map[string]json.RawMessage {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(in))
	for id, v := range in {
		settings, err := mcp.CheckExtension(id, v)
		if err != nil {
			panic("mcpclient: " + err.Error())
		}
		out[id] = settings
	}
	return out
}

// Endpoint returns the endpoint URL given to New ("" for NewCommand).
func (c *Client) Endpoint() string { return c.endpoint }

// Close releases the client: for NewCommand it stops the server process
// (see NewCommand) and returns why it had to be signalled or how it
// failed, if it did; later calls fail with ErrClosed. For an HTTP client
// it does nothing.
func (c *Client) Close() error { return c.tr.close() }

// Exited returns a channel closed once the server process NewCommand
// started has exited (its calls then fail with *ConnectionError), so a
// caller holding a client for later can tell it is dead before using
// it. For an HTTP client it is nil: it never closes.
func (c *Client) Exited() <-chan struct{} {
	if t, ok := c.tr.(*stdioTransport); ok {
		return t.exited
	}
	return nil
}

// Capabilities returns the client capabilities sent in every request's
// _meta, derived from Options.Handlers and Options.Extensions.
func (c *Client) Capabilities() mcp.ClientCapabilities { return c.caps }

// Version returns the protocol version the client sends: Options.
// ProtocolVersion until a -32022 answer made it switch.
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

func (c *Client) setVersion(v string) {
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
}

// Server returns the server's self-reported identity from the last result
// that carried _meta serverInfo, or nil. It is not verified (META-SC-01).
func (c *Client) Server() *mcp.Implementation {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server == nil {
		return nil
	}
	s := *c.server
	return &s
}

// Asker returns who is asking, for Handlers: the endpoint and the server's
// self-reported identity.
func (c *Client) Asker() Asker {
	return Asker{Endpoint: c.endpoint, Command: c.command, Server: c.Server()}
}

// resultHead is the part of every result the client looks at first.
type resultHead struct {
	ResultType    json.RawMessage            `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  json.RawMessage            `json:"requestState"`
	Meta          map[string]json.RawMessage `json:"_meta"`
}

// classify splits a raw result into a complete one or an interim one. A
// result without resultType is complete (MRTR-C-07); an unknown resultType
// is an error (MRTR-C-08).
func (c *Client) classify(method string, raw json.RawMessage) (json.RawMessage, *InputRequired, error) {
	perr := func(rule, format string, args ...any) error {
		return &ProtocolError{Method: method, Rule: rule, Reason: fmt.Sprintf(format, args...)}
	}
	var head resultHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, nil, perr("", "malformed result: %v", err)
	}
	c.noteServer(head.Meta)
	rt := mcp.ResultTypeComplete
	if len(head.ResultType) > 0 && string(head.ResultType) != "null" {
		if err := json.Unmarshal(head.ResultType, &rt); err != nil {
			return nil, nil, perr("", "resultType is not a string")
		}
	}
	switch rt {
	case mcp.ResultTypeComplete:
		return raw, nil, nil
	case mcp.ResultTypeTask:
		// Only a tools/call from a client that declared the tasks
		// extension may get one (VER-SC-01); once follows it.
		if method != mcp.MethodToolsCall || !c.caps.HasExtension(mcp.ExtensionTasks) {
			return nil, nil, perr("VER-SC-01", "resultType %q without the %s extension declared", rt, mcp.ExtensionTasks)
		}
		return raw, nil, nil
	case mcp.ResultTypeInputRequired:
	default:
		return nil, nil, perr("MRTR-C-08", "unknown resultType %q", clip(rt, 60))
	}
	if !mcp.MRTRMethod(method) {
		return nil, nil, perr("MRTR-S-04", "input_required is not allowed for %s", method)
	}
	requests, err := parseInputRequests(method, head.InputRequests)
	if err != nil {
		return nil, nil, err
	}
	ir := &InputRequired{InputRequests: requests}
	if len(head.RequestState) > 0 && string(head.RequestState) != "null" {
		if err := json.Unmarshal(head.RequestState, &ir.RequestState); err != nil {
			return nil, nil, perr("", "requestState is not a string")
		}
		// Kept as received: the retry echoes these bytes (RS-C-01).
		ir.state = bytes.Clone(head.RequestState)
	}
	if len(ir.InputRequests) == 0 && ir.state == nil {
		return nil, nil, perr("MRTR-S-07", "input_required with neither inputRequests nor requestState")
	}
	if head.Meta != nil {
		_ = json.Unmarshal(raw, &struct {
			Meta *mcp.ResultMeta `json:"_meta"`
		}{&ir.Meta})
	}
	return nil, ir, nil
}

// parseInputRequests reads the inputRequests of an input_required result
// or task: each entry {method, params}.
func parseInputRequests(method string, raw map[string]json.RawMessage) (map[string]InputRequest, error) {
	out := make(map[string]InputRequest, len(raw))
	for k, v := range raw {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(v, &r); err != nil || r.Method == "" {
			return nil, &ProtocolError{Method: method, Rule: "MRTR-S-06", Reason: fmt.Sprintf("input request %q is not {method, params}", clip(k, 60))}
		}
		if string(r.Params) == "null" {
			r.Params = nil
		}
		out[k] = InputRequest{Method: r.Method, Params: r.Params}
	}
	return out, nil
}

// noteServer remembers _meta serverInfo.
func (c *Client) noteServer(meta map[string]json.RawMessage) {
	raw, ok := meta[mcp.MetaServerInfo]
	if !ok {
		return
	}
	var info mcp.Implementation
	if json.Unmarshal(raw, &info) != nil || info.Name == "" {
		return
	}
	c.mu.Lock()
	c.server = &info
	c.mu.Unlock()
}

// simple sends a request that must answer complete and decodes it into v.
func (c *Client) simple(ctx context.Context, out *outgoing, v any) error {
	raw, err := c.send(ctx, out)
	if err != nil {
		return err
	}
	res, _, err := c.classify(out.method, raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res, v); err != nil {
		return &ProtocolError{Method: out.method, Reason: "malformed result: " + err.Error()}
	}
	return nil
}

// Discover calls server/discover (server/discover.mdx): the versions the
// server serves, its capabilities and instructions. Calling it is optional
// (VER-C-01).
func (c *Client) Discover(ctx context.Context) (*mcp.DiscoverResult, error) {
	var r mcp.DiscoverResult
	if err := c.simple(ctx, &outgoing{method: mcp.MethodDiscover}, &r); err != nil {
		return nil, err
	}
	r.ResultType = mcp.ResultTypeComplete
	return &r, nil
}

// list walks every page of a list method, following nextCursor.
func (c *Client) list(ctx context.Context, method string, page func(raw json.RawMessage) (next string, err error)) error {
	cursor := ""
	seen := map[string]bool{}
	for range maxPages {
		raw, err := c.send(ctx, &outgoing{method: method, params: reqParams{Cursor: cursor}})
		if err != nil {
			return err
		}
		res, _, err := c.classify(method, raw)
		if err != nil {
			return err
		}
		next, err := page(res)
		if err != nil {
			return &ProtocolError{Method: method, Reason: "malformed result: " + err.Error()}
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return &ProtocolError{Method: method, Reason: "nextCursor repeats an earlier cursor"}
		}
		seen[next] = true
		cursor = next
	}
	return &ProtocolError{Method: method, Reason: fmt.Sprintf("more than %d pages", maxPages)}
}

// ListTools returns every tool of tools/list, following nextCursor. Over
// HTTP, tools whose x-mcp-header annotations break the rules
// (mcp.ToolHeaderParams) are left out and logged with the reason
// (HTTP-C-12); stdio has no headers, so they stay. Each tool's
// inputSchema is kept verbatim, and no $ref in it is ever fetched. The
// client remembers the annotations for CallTool.
func (c *Client) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	var (
		kept    []*mcp.Tool
		entries = map[string]toolEntry{}
	)
	err := c.list(ctx, mcp.MethodToolsList, func(raw json.RawMessage) (string, error) {
		var r mcp.ListToolsResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return "", err
		}
		for _, t := range r.Tools {
			if t == nil {
				continue
			}
			params, err := mcp.ToolHeaderParams(t.InputSchema)
			if err != nil && !c.tr.headers() {
				// No headers on this transport: the annotations are inert.
				params, err = nil, nil
			}
			if err != nil {
				c.log.Warn("mcpclient: dropping tool with invalid x-mcp-header (HTTP-C-12)", "tool", clip(t.Name, 100), "reason", err.Error())
				entries[t.Name] = toolEntry{dropped: err}
				continue
			}
			entries[t.Name] = toolEntry{params: params}
			kept = append(kept, t)
		}
		return r.NextCursor, nil
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tools, c.listed = entries, true
	c.mu.Unlock()
	return kept, nil
}

// ListPrompts returns every prompt of prompts/list, following nextCursor.
func (c *Client) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	err := c.list(ctx, mcp.MethodPromptsList, func(raw json.RawMessage) (string, error) {
		var r mcp.ListPromptsResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return "", err
		}
		for _, p := range r.Prompts {
			if p != nil {
				out = append(out, p)
			}
		}
		return r.NextCursor, nil
	})
	return out, err
}

// ListResources returns every resource of resources/list, following
// nextCursor.
func (c *Client) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	var out []*mcp.Resource
	err := c.list(ctx, mcp.MethodResourcesList, func(raw json.RawMessage) (string, error) {
		var r mcp.ListResourcesResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return "", err
		}
		for _, res := range r.Resources {
			if res != nil {
				out = append(out, res)
			}
		}
		return r.NextCursor, nil
	})
	return out, err
}

// toolHeaders returns the x-mcp-header parameters of a tool, listing the
// tools first if this client never did: mirroring them is a MUST
// (HTTP-C-11). A dropped tool is ErrToolDropped; an unknown tool has none
// (the server will say it does not exist).
func (c *Client) toolHeaders(ctx context.Context, name string, refresh bool) ([]mcp.HeaderParam, error) {
	c.mu.Lock()
	listed := c.listed
	c.mu.Unlock()
	if !listed || refresh {
		if _, err := c.ListTools(ctx); err != nil {
			return nil, fmt.Errorf("mcpclient: listing tools for their x-mcp-header annotations: %w", err)
		}
	}
	c.mu.Lock()
	e := c.tools[name]
	c.mu.Unlock()
	if e.dropped != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrToolDropped, name, e.dropped)
	}
	return e.params, nil
}

// operation is one logical MRTR request: the same name and arguments on
// every round.
type operation struct {
	out       outgoing
	args      json.RawMessage // tools/call arguments, for Mcp-Param-* on refresh
	refreshed bool
}

// encodeArgs encodes tool arguments once, so every round sends the same
// bytes and the caller's value is never touched. nil means {}.
func encodeArgs(args any) (json.RawMessage, error) {
	var b []byte
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		if !json.Valid(a) {
			return nil, errors.New("mcpclient: arguments are not valid JSON")
		}
		b = bytes.Clone(a)
	default:
		var err error
		if b, err = marshal(a); err != nil {
			return nil, fmt.Errorf("mcpclient: encoding arguments: %w", err)
		}
	}
	t := bytes.TrimSpace(b)
	if string(t) == "null" {
		return json.RawMessage("{}"), nil
	}
	if len(t) == 0 || t[0] != '{' {
		return nil, errors.New("mcpclient: arguments must be a JSON object")
	}
	return t, nil
}

func (c *Client) toolOp(ctx context.Context, name string, args any) (*operation, error) {
	raw, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	var hdr http.Header
	if c.tr.headers() {
		params, err := c.toolHeaders(ctx, name, false)
		if err != nil {
			return nil, err
		}
		if hdr, err = paramHeaders(params, raw); err != nil {
			return nil, fmt.Errorf("mcpclient: tool %q: %w", name, err)
		}
	}
	n := name
	return &operation{
		out:  outgoing{method: mcp.MethodToolsCall, name: name, hasName: true, target: name, headers: hdr, params: reqParams{Name: &n, Arguments: raw}},
		args: raw,
	}, nil
}

func promptOp(name string, args map[string]string) (*operation, error) {
	n := name
	op := &operation{out: outgoing{method: mcp.MethodPromptsGet, name: name, hasName: true, target: name, params: reqParams{Name: &n}}}
	if args != nil {
		b, err := marshal(args)
		if err != nil {
			return nil, err
		}
		op.out.params.Arguments = b
	}
	return op, nil
}

func resourceOp(uri string) *operation {
	u := uri
	return &operation{out: outgoing{method: mcp.MethodResourcesRead, name: uri, hasName: true, target: uri, params: reqParams{URI: &u}}}
}

// once sends one round of op: the original params plus, on a retry, the
// answers and the echoed state.
func (c *Client) once(ctx context.Context, op *operation, retry *Retry) (json.RawMessage, *InputRequired, error) {
	out := op.out // a copy: op is the same on every round
	origin := out.method + " " + out.target
	if retry != nil {
		if err := retry.addTo(&out.params, origin); err != nil {
			return nil, nil, err
		}
	}
	raw, err := c.sendRound(ctx, op, &out)
	if err != nil {
		return nil, nil, err
	}
	res, ir, err := c.classify(out.method, raw)
	if ir != nil {
		ir.origin = origin
	}
	if err == nil && ir == nil && isTask(res) {
		res, err = c.followTask(ctx, &out, res)
	}
	return res, ir, err
}

// addTo adds rt's answers (encoded) and echoed state to p, the
// params of the request origin ("method target").
func (rt *Retry) addTo(p *reqParams, origin string) error {
	if rt.origin != "" && rt.origin != origin {
		// MRTR-C-04: answers and state belong to the request that got them.
		return fmt.Errorf("mcpclient: a retry of %s used for %s (MRTR-C-04)", clip(rt.origin, 120), clip(origin, 120))
	}
	if len(rt.InputResponses) > 0 {
		p.InputResponses = make(map[string]json.RawMessage, len(rt.InputResponses))
		for k, v := range rt.InputResponses {
			b, err := marshal(v)
			if err != nil {
				return fmt.Errorf("mcpclient: encoding the answer to %q: %w", k, err)
			}
			p.InputResponses[k] = b
		}
	}
	p.RequestState = rt.state
	return nil
}

// sendRound sends out, a round of op. A tools/call refused for its
// Mcp-Param-* headers is sent once more if listing the tools again
// changes them (HTTP-C-13: the tool's annotations may have changed).
func (c *Client) sendRound(ctx context.Context, op *operation, out *outgoing) (json.RawMessage, error) {
	raw, err := c.send(ctx, out)
	var rpc *RPCError
	if err != nil && out.method == mcp.MethodToolsCall && !op.refreshed && errors.As(err, &rpc) && rpc.Code == mcp.CodeHeaderMismatch {
		op.refreshed = true
		if hdr, changed := c.refreshHeaders(ctx, op); changed {
			op.out.headers, out.headers = hdr, hdr
			raw, err = c.send(ctx, out)
		}
	}
	return raw, err
}

// refreshHeaders lists the tools again and returns op's Mcp-Param-*
// headers from the new annotations, and whether they differ from the
// ones sent.
func (c *Client) refreshHeaders(ctx context.Context, op *operation) (http.Header, bool) {
	params, err := c.toolHeaders(ctx, *op.out.params.Name, true)
	if err != nil {
		return nil, false
	}
	hdr, err := paramHeaders(params, op.args)
	if err != nil || headersEqual(hdr, op.out.headers) {
		return nil, false
	}
	return hdr, true
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// run drives the input loop of op until a complete result.
func (c *Client) run(ctx context.Context, op *operation) (json.RawMessage, error) {
	var retry *Retry
	var prev *InputRequired // the interim result retry answers
	rounds, stateOnly := 0, 0
	for {
		res, ir, err := c.round(ctx, op, retry, prev)
		if err != nil {
			return nil, err
		}
		if ir == nil {
			return res, nil
		}
		if rounds >= c.maxRounds {
			return nil, fmt.Errorf("%w: %s %q still needs input after %d retries", ErrRoundLimit, op.out.method, clip(op.out.target, 100), rounds)
		}
		rounds++
		if len(ir.InputRequests) == 0 {
			// State only: "come back later" (MRTR-C-02), with back-off.
			stateOnly++
			if stateOnly > c.maxStateOnly {
				return nil, fmt.Errorf("%w: %d times in a row for %s %q", ErrStateOnlyLimit, stateOnly, op.out.method, clip(op.out.target, 100))
			}
			if c.stateDelay > 0 {
				t := time.NewTimer(c.stateDelay << (stateOnly - 1))
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, ctx.Err()
				case <-t.C:
				}
			}
			retry, prev = ir.Retry(nil), ir
			continue
		}
		stateOnly = 0
		answers, err := c.Answer(ctx, ir)
		if err != nil {
			return nil, err
		}
		retry, prev = ir.Retry(answers), ir
	}
}

// decodeComplete decodes a complete result into v and marks it complete.
func decodeComplete(method string, raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return &ProtocolError{Method: method, Reason: "malformed result: " + err.Error()}
	}
	return nil
}

// CallTool calls a tool and answers its input requests until the result
// is complete. args is anything that encodes as a JSON object
// (map[string]any, a struct, json.RawMessage), or nil for {}; it is encoded
// once and never modified. Arguments annotated with x-mcp-header are
// mirrored into Mcp-Param-* headers (HTTP-C-11), from the annotations
// of the last ListTools (made first if there was none). A tool-level
// failure is a result with IsError set, not an error.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	op, err := c.toolOp(ctx, name, args)
	if err != nil {
		return nil, err
	}
	raw, err := c.run(ctx, op)
	if err != nil {
		return nil, err
	}
	return decodeTool(raw)
}

func decodeTool(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r mcp.CallToolResult
	if err := decodeComplete(mcp.MethodToolsCall, raw, &r); err != nil {
		return nil, err
	}
	r.ResultType = mcp.ResultTypeComplete
	return &r, nil
}

// CallToolOnce sends one tools/call round and answers nothing: it returns
// either the complete result or the interim *InputRequired. For the first
// round retry is nil; for the next, pass ir.Retry(answers) (Answer gives
// the answers from Handlers), with the same name and args. Each round has
// a new JSON-RPC id and fresh _meta.
func (c *Client) CallToolOnce(ctx context.Context, name string, args any, retry *Retry) (*mcp.CallToolResult, *InputRequired, error) {
	op, err := c.toolOp(ctx, name, args)
	if err != nil {
		return nil, nil, err
	}
	raw, ir, err := c.once(ctx, op, retry)
	if err != nil || ir != nil {
		return nil, ir, err
	}
	r, err := decodeTool(raw)
	return r, nil, err
}

// GetPrompt gets a prompt with string arguments (nil for none), answering
// input requests until the result is complete.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	op, err := promptOp(name, args)
	if err != nil {
		return nil, err
	}
	raw, err := c.run(ctx, op)
	if err != nil {
		return nil, err
	}
	return decodePrompt(raw)
}

func decodePrompt(raw json.RawMessage) (*mcp.GetPromptResult, error) {
	var r mcp.GetPromptResult
	if err := decodeComplete(mcp.MethodPromptsGet, raw, &r); err != nil {
		return nil, err
	}
	r.ResultType = mcp.ResultTypeComplete
	return &r, nil
}

// GetPromptOnce is GetPrompt for one round, as CallToolOnce.
func (c *Client) GetPromptOnce(ctx context.Context, name string, args map[string]string, retry *Retry) (*mcp.GetPromptResult, *InputRequired, error) {
	op, err := promptOp(name, args)
	if err != nil {
		return nil, nil, err
	}
	raw, ir, err := c.once(ctx, op, retry)
	if err != nil || ir != nil {
		return nil, ir, err
	}
	r, err := decodePrompt(raw)
	return r, nil, err
}

// ReadResource reads a resource by URI, answering input requests until the
// result is complete.
func (c *Client) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	raw, err := c.run(ctx, resourceOp(uri))
	if err != nil {
		return nil, err
	}
	return decodeResource(raw)
}

func decodeResource(raw json.RawMessage) (*mcp.ReadResourceResult, error) {
	var r mcp.ReadResourceResult
	if err := decodeComplete(mcp.MethodResourcesRead, raw, &r); err != nil {
		return nil, err
	}
	r.ResultType = mcp.ResultTypeComplete
	return &r, nil
}

// ReadResourceOnce is ReadResource for one round, as CallToolOnce.
func (c *Client) ReadResourceOnce(ctx context.Context, uri string, retry *Retry) (*mcp.ReadResourceResult, *InputRequired, error) {
	raw, ir, err := c.once(ctx, resourceOp(uri), retry)
	if err != nil || ir != nil {
		return nil, ir, err
	}
	r, err := decodeResource(raw)
	return r, nil, err
}

// InputRequired is an interim result (docs/protocol.md §InputRequiredResult) as received: input
// requests for the client, a requestState, or both.
type InputRequired struct {
	// InputRequests are the server's requests by key; empty for a
	// state-only result ("come back later").
	InputRequests map[string]InputRequest
	// RequestState is the decoded state, for display only: the client
	// must not read meaning into it (RS-C-02). Retry echoes the bytes as
	// received, not this string.
	RequestState string
	// Meta is the result's _meta (serverInfo…), nil when absent.
	Meta mcp.ResultMeta

	state  json.RawMessage // the JSON string as received; nil when absent
	origin string          // method and target of the request that got it
}

// HasRequestState reports whether the server sent a requestState (an
// empty string counts); only then does the retry carry one (RS-C-03).
func (ir *InputRequired) HasRequestState() bool { return ir.state != nil }

// Keys returns the input request keys, sorted.
func (ir *InputRequired) Keys() []string {
	keys := make([]string, 0, len(ir.InputRequests))
	for k := range ir.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Retry returns what the retry of this interim result adds to the
// original request: responses (one answer per input request key: an
// *mcp.ElicitResult, *mcp.CreateMessageResult, *mcp.ListRootsResult or
// json.RawMessage; nil for a state-only result) and this result's
// requestState, byte for byte, or none if it had none. It is only for the
// retry of the request that got this result (MRTR-C-04): the *Once
// methods refuse it for another method, tool, prompt or resource.
func (ir *InputRequired) Retry(responses map[string]any) *Retry {
	return &Retry{InputResponses: responses, state: ir.state, origin: ir.origin}
}

// Retry is what an MRTR retry adds to the original params: inputResponses
// and the echoed requestState. Build it with InputRequired.Retry; a Retry
// built by hand carries no requestState, as a client never invents one.
type Retry struct {
	// InputResponses maps each input request key to its answer.
	InputResponses map[string]any

	state  json.RawMessage
	origin string
}

// InputRequest is one request of an interim result: its method
// (elicitation/create, sampling/createMessage, roots/list) and raw params.
type InputRequest struct {
	Method string
	Params json.RawMessage
}

// ElicitParams decodes the params of an elicitation/create request.
func (r InputRequest) ElicitParams() (*mcp.ElicitRequestParams, error) {
	if r.Method != mcp.MethodElicitationCreate {
		return nil, fmt.Errorf("mcpclient: %s is not elicitation/create", clip(r.Method, 60))
	}
	var p mcp.ElicitRequestParams
	if len(r.Params) == 0 {
		return nil, errors.New("mcpclient: elicitation/create without params")
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, fmt.Errorf("mcpclient: elicitation/create params: %w", err)
	}
	return &p, nil
}
