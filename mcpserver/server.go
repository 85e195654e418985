// Package mcpserver is an MCP 2026-07-28 server whose tools, prompts and
// resources can ask the user something in the middle of a request (multi
// round-trip requests, basic/patterns/mrtr.mdx), with the safety work done
// by the library: requestState sealed and bound to the user and the
// request, the client capability gate (-32021), answers checked against
// the question, repeated prompting limited, decline and cancel kept apart.
//
// # Typed tools
//
// AddTool registers a tool whose input and output schemas are inferred
// from Go types, refined by struct tags. The handler gets its arguments
// decoded and checked, and returns a result, or an InputRequired built with
// Ask when it needs the user first:
//
//	type Who struct {
//		Name string `json:"name" title:"Your name" minLength:"1"`
//	}
//
//	func greet(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
//		switch a := elicit.Decode[Who](req.Elicitation("who")); a.Outcome {
//		case elicit.Accepted:
//			return mcpserver.Text("Hello, " + a.Value.Name + "!"), nil, nil
//		case elicit.Declined, elicit.Cancelled:
//			return mcpserver.ToolError("No name, no greeting."), nil, nil
//		}
//		return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Who]()), nil, nil
//	}
//
//	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
//	mcpserver.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets the user by name."}, greet)
//	http.ListenAndServe("127.0.0.1:8080", streamhttp.NewHandler(s, nil))
//
// With a struct as the second result type instead of any, the tool
// declares an outputSchema and a nil Reply sends that value as
// structuredContent (see ToolHandlerFor).
//
// # Asking the user
//
// A handler asks by returning Ask() with one or more input requests under
// keys of its choosing: ElicitFormSchema (a form built with elicit.FormFor
// or elicit.FormSchema), ElicitForm (raw JSON), ElicitURL (a page of the
// server's own, for what must not pass through the client), Sample and
// ListRoots. The client answers and calls again; the handler then runs
// again from the top, with the same arguments, and reads each answer with
// Request.Elicitation (elicit.Decode[T] for a typed form), Request.Sampling
// or Request.Roots. Nothing stays in server memory between rounds: what
// earlier rounds decided travels in the sealed state (InputRequired.
// WithState, Request.State), so any instance can serve the next round. The
// library refuses to ask what the client did not declare (-32021), asks an
// invalid form answer again with the reason (at most MaxReasks times),
// refuses to ask again after a decline or a cancel, and caps the rounds
// (Options.MaxRounds).
//
// # Raw handlers
//
// Server.AddTool takes a hand-written inputSchema and a Handler that reads
// its arguments with Request.BindArguments (strict: unknown members are
// refused) and answers with a Reply (Text, ToolResult, ToolError, or an
// InputRequired). Prompts and resources use the same Handler.
//
// # Tasks
//
// EnableTasks serves the tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663) for tools registered with HandlerOptions.Tasks: when the
// request's _meta declares the extension, the handler may return
// RunAsTask, the client gets a task id at once and the handler runs again
// in the background; tasks/get shows its status and, at the end, the
// result. A task that needs the user returns Ask() like a call does: the
// same typed questions, capability gate and answer checks, with the
// answers coming through tasks/update. Tasks belong to the user who
// started them and expire after TaskOptions.TTL. They live in a TaskStore
// (the contract is on that interface; MemoryTaskStore for one instance).
// See docs/tasks.md for what is supported and what is not yet.
//
// # Transports
//
// The server is transport-neutral and stateless: package streamhttp
// serves it over Streamable HTTP, and package legacy adds 2025-11-25
// clients (initialize and a session) on the same endpoint. What a
// transport needs from the server — parsing a request, the version and
// method checks, serving it for a principal with a notification sink — is
// not part of this API; it lives in the module's internal packages.
//
// # Public surface
//
//   - The server: New, Options, Server (AddTool, AddPrompt, AddResource,
//     AddResourceTemplate, each with a …With variant taking
//     HandlerOptions; SetCompletionHandler and CompletionHandler; Info,
//     Capabilities), CacheHint.
//   - Typed tools: AddTool, AddToolWith, ToolHandlerFor.
//   - A handler's side: Handler, Request, Reply (Text, ToolResult,
//     ToolError, PromptResult, ResourceResult), InputRequired and Ask,
//     MissingCapability, RestartReason, MaxReasks.
//   - Extensions and tasks: AddExtension; EnableTasks, TaskOptions
//     (DefaultMaxTasksPerUser), TaskSupport, RunAsTask, WaitTasks,
//     StopTasks, SweepTasks; TaskStore, MemoryTaskStore (records are store.Task).
//   - Failures: ErrUnavailable, ReasonStorageFull.
//   - Observation for audit and metrics: Observer, Round, Outcome, Outcomes.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/mcp-elicit/elicit/internal/delegate"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/reqstate"
)

// Options configure a Server. A nil *Options means the defaults.
type Options struct {
	// Instructions are sent in server/discover.
	Instructions string
	// Sealer seals requestState. Nil means a fresh random key for this
	// process only, with a random id ("ephemeral-" and 10 characters): fine
	// for one instance, but a restart then refuses the questions in
	// progress (-32602, logged as reason=unknown_key) and several instances
	// must share keys. reqstate/keyring keeps a ring in a file across
	// restarts.
	Sealer *reqstate.Sealer
	// Logger receives the real reasons of refused requestState and handler
	// failures. Nil means slog.Default().
	Logger *slog.Logger
	// SupportedVersions lists served protocol versions; nil means {"2026-07-28"}.
	SupportedVersions []string
	// ListCache is the caching hint on discover and list results; the zero
	// value means 5 minutes, "private".
	ListCache CacheHint
	// ReadCache is the default caching hint on resources/read; the zero value
	// means ttlMs 0, "private".
	ReadCache CacheHint
	// MaxRounds caps the rounds of one MRTR operation; 0 means 32. A retry
	// past it is refused with -32602.
	MaxRounds int
	// Observer, when set, is called once per round of tools/call,
	// prompts/get and resources/read, after the response is built and
	// before it is sent, with the round's operation id, principal, name,
	// outcome category and latency (see Round and Outcome): the hook for
	// audit records and metrics. It runs on the request's goroutine, so it
	// should be quick; a panic in it is logged and ignored. With
	// EnableTasks it is also called once per run of a task's handler in
	// the background (Round.TaskID set), on the run's goroutine, once the
	// run's outcome is stored.
	Observer Observer
}

// CacheHint is the ttlMs / cacheScope pair of cacheable results
// (server/utilities/caching.mdx).
type CacheHint struct {
	TTL   time.Duration
	Scope string // mcp.CacheScopePublic or mcp.CacheScopePrivate
}

// Handler answers one tools/call, prompts/get or resources/read. It
// returns a complete result (Text, ToolResult, PromptResult, ResourceResult…)
// or an *InputRequired built with Ask. A returned *jsonrpc.Error goes to
// the client as is; any other error becomes -32603 and is logged.
type Handler func(ctx context.Context, req *Request) (Reply, error)

// Server is an MCP server. Register everything before serving; it is then
// safe for concurrent use.
type Server struct {
	info      mcp.Implementation
	opts      Options
	sealer    *reqstate.Sealer
	log       *slog.Logger
	versions  []string
	maxRounds int
	// endpoint lists every version the endpoint serves: versions, then
	// those served beside this server (alsoServed). Under mu.
	endpoint []string

	mu        sync.RWMutex
	tools     []*toolEntry
	toolIndex map[string]*toolEntry
	prompts   []*promptEntry
	promptIdx map[string]*promptEntry
	resources []*resourceEntry
	resIdx    map[string]*resourceEntry
	templates []*templateEntry
	complete  CompletionHandler
	// extensions are advertised under capabilities.extensions (AddExtension).
	extensions map[string]json.RawMessage
	// tasks serves the tasks extension; nil until EnableTasks.
	tasks *tasks

	// encoded holds the JSON of server/discover and the list results,
	// which change only on registration; caps the advertised capabilities.
	// Both are built on first use and dropped by every registration.
	encoded map[string]json.RawMessage
	caps    *mcp.ServerCapabilities
	gen     uint64
	// anonymous: ServeAnonymously was called (principal.go).
	anonymous bool
	// core, when set (internal/delegate), answers every request in the
	// registry's place (delegate.go).
	core delegate.Core
}

type toolEntry struct {
	tool    *mcp.Tool
	handler Handler
	opts    HandlerOptions
	headers []mcp.HeaderParam
}

type promptEntry struct {
	prompt  *mcp.Prompt
	handler Handler
	opts    HandlerOptions
}

type resourceEntry struct {
	res     *mcp.Resource
	handler Handler
	opts    HandlerOptions
}

type templateEntry struct {
	tmpl    *mcp.ResourceTemplate
	handler Handler
	opts    HandlerOptions
}

// HandlerOptions tune how the library serves one tool, prompt or
// resource. A nil *HandlerOptions means the zero value, the defaults.
type HandlerOptions struct {
	// RestartStale serves a retry as a fresh first call (Request.Restart
	// says why) when its requestState is authentic and was sealed for this
	// user and this tool, prompt or resource, but has expired or was made
	// for other arguments. The old answers are then not read, and the
	// handler asks afresh, bound to the current arguments (ELICIT-STEP-04: expired
	// input is not applied, a fresh question is asked; ELICIT-STEP-05: an
	// answer for other arguments is not applied to these). False
	// (the default) refuses such a retry with -32602 "invalid or expired
	// requestState" (RS-S-06, RS-S-07). Any other bad state (tampered,
	// another user's, another target's) is refused either way.
	RestartStale bool
	// RequirePrincipal says the handler needs an authenticated user
	// (Request.Principal not empty), as a URL-mode step does: its flow
	// and page belong to a user (connect.Step registers its tools so). A
	// server with such a handler cannot be served without
	// authentication: ServeAnonymously reports it (streamhttp.NewHandler
	// then panics), and registering one after ServeAnonymously panics.
	RequirePrincipal bool
	// Tasks says whether a tool may run as a task of the tasks extension
	// (EnableTasks, RunAsTask); TaskNever (the default) for prompts and
	// resources, which never do.
	Tasks TaskSupport
}

func optsOf(o *HandlerOptions) HandlerOptions {
	if o == nil {
		return HandlerOptions{}
	}
	return *o
}

// CompletionHandler answers completion/complete: ref is the raw "ref"
// object, argName/argValue the argument being completed. At most 100 values
// are sent.
type CompletionHandler func(ctx context.Context, ref json.RawMessage, argName, argValue string) ([]string, error)

// New returns a server that identifies itself as info.
func New(info mcp.Implementation, opts *Options) *Server {
	s := &Server{info: info, toolIndex: map[string]*toolEntry{}, promptIdx: map[string]*promptEntry{}, resIdx: map[string]*resourceEntry{}}
	if opts != nil {
		s.opts = *opts
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.sealer = s.opts.Sealer
	if s.sealer == nil {
		// The id is random too: after a restart, a state sealed by the
		// old process is then an unknown key in the log, not a forgery.
		s.sealer, _ = reqstate.New([]reqstate.Key{reqstate.NewKey("ephemeral-" + rand.Text()[:10])}, nil)
	}
	s.versions = s.opts.SupportedVersions
	if len(s.versions) == 0 {
		s.versions = []string{mcp.ProtocolVersion}
	}
	s.endpoint = s.versions
	if s.opts.ListCache.Scope == "" {
		s.opts.ListCache = CacheHint{TTL: 5 * time.Minute, Scope: mcp.CacheScopePrivate}
	}
	if s.opts.ReadCache.Scope == "" {
		s.opts.ReadCache.Scope = mcp.CacheScopePrivate
	}
	s.maxRounds = s.opts.MaxRounds
	if s.maxRounds <= 0 {
		s.maxRounds = 32
	}
	return s
}

// Info returns the server's identity.
func (s *Server) Info() mcp.Implementation { return s.info }

// alsoServed records protocol versions that another handler serves on the
// same endpoint, such as package legacy's bridge for 2025-11-25 clients,
// which calls it when it is mounted. They are listed, after this
// server's own, in server/discover's supportedVersions and in the
// data.supported of -32022 (VER-S-02), so a client learns every version
// the endpoint takes; checkVersion still refuses them in this server's
// request shape, saying where they are served. Call it before serving.
func (s *Server) alsoServed(versions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := slices.Clone(s.endpoint)
	for _, v := range versions {
		if !slices.Contains(all, v) {
			all = append(all, v)
		}
	}
	s.endpoint = all
	s.encoded = nil
	s.gen++
}

// endpointVersions returns every version the endpoint serves.
func (s *Server) endpointVersions() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.endpoint
}

// AddTool registers a tool. It panics if the name is not 1–64 characters of
// [A-Za-z0-9_./-], is already registered, the input schema is not a JSON
// object with "type":"object", or an x-mcp-header annotation breaks the
// rules of server/tools.mdx §x-mcp-header (HTTP-S-19): these are
// programming errors. A nil InputSchema means {"type":"object"}.
func (s *Server) AddTool(t *mcp.Tool, h Handler) { s.AddToolWith(t, h, nil) }

// AddToolWith is AddTool with handler options (nil means the defaults).
func (s *Server) AddToolWith(t *mcp.Tool, h Handler, o *HandlerOptions) {
	if !validToolName(t.Name) {
		panic(fmt.Sprintf("mcpserver: invalid tool name %q", t.Name))
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	headers, err := parseHeaderParams(t.InputSchema)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: tool %q: %v", t.Name, err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseAnonymousLocked("tool", t.Name, o)
	s.encoded, s.caps = nil, nil
	s.gen++
	if _, dup := s.toolIndex[t.Name]; dup {
		panic(fmt.Sprintf("mcpserver: tool %q registered twice", t.Name))
	}
	e := &toolEntry{tool: t, handler: h, opts: optsOf(o), headers: headers}
	s.tools = append(s.tools, e)
	s.toolIndex[t.Name] = e
}

// AddPrompt registers a prompt; it panics on a repeated name.
func (s *Server) AddPrompt(p *mcp.Prompt, h Handler) { s.AddPromptWith(p, h, nil) }

// AddPromptWith is AddPrompt with handler options (nil means the defaults).
func (s *Server) AddPromptWith(p *mcp.Prompt, h Handler, o *HandlerOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseAnonymousLocked("prompt", p.Name, o)
	s.encoded, s.caps = nil, nil
	s.gen++
	if _, dup := s.promptIdx[p.Name]; dup || p.Name == "" {
		panic(fmt.Sprintf("mcpserver: prompt %q empty or registered twice", p.Name))
	}
	e := &promptEntry{prompt: p, handler: h, opts: optsOf(o)}
	s.prompts = append(s.prompts, e)
	s.promptIdx[p.Name] = e
}

// AddResource registers a resource with a fixed URI; it panics on a repeated URI.
func (s *Server) AddResource(r *mcp.Resource, h Handler) { s.AddResourceWith(r, h, nil) }

// AddResourceWith is AddResource with handler options (nil means the defaults).
func (s *Server) AddResourceWith(r *mcp.Resource, h Handler, o *HandlerOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseAnonymousLocked("resource", r.URI, o)
	s.encoded, s.caps = nil, nil
	s.gen++
	if _, dup := s.resIdx[r.URI]; dup || r.URI == "" {
		panic(fmt.Sprintf("mcpserver: resource %q empty or registered twice", r.URI))
	}
	e := &resourceEntry{res: r, handler: h, opts: optsOf(o)}
	s.resources = append(s.resources, e)
	s.resIdx[r.URI] = e
}

// AddResourceTemplate registers a URI template of RFC 6570 level 1
// ("test://template/{id}/data"); variables match one or more characters
// other than "/" and reach the handler through Request.TemplateVars.
func (s *Server) AddResourceTemplate(t *mcp.ResourceTemplate, h Handler) {
	s.AddResourceTemplateWith(t, h, nil)
}

// AddResourceTemplateWith is AddResourceTemplate with handler options (nil
// means the defaults).
func (s *Server) AddResourceTemplateWith(t *mcp.ResourceTemplate, h Handler, o *HandlerOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseAnonymousLocked("resource template", t.URITemplate, o)
	s.encoded, s.caps = nil, nil
	s.gen++
	s.templates = append(s.templates, &templateEntry{tmpl: t, handler: h, opts: optsOf(o)})
}

// SetCompletionHandler sets the completion/complete handler and advertises
// the completions capability.
func (s *Server) SetCompletionHandler(h CompletionHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.encoded, s.caps = nil, nil
	s.gen++
	s.complete = h
}

// toolHeaderParams returns the x-mcp-header parameters of a tool, for the
// HTTP binding's Mcp-Param-* checks, and whether the tool exists.
func (s *Server) toolHeaderParams(name string) ([]mcp.HeaderParam, bool) {
	if s.core != nil {
		return s.core.ToolHeaderParams(name)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.toolIndex[name]
	if !ok {
		return nil, false
	}
	return e.headers, true
}

func validToolName(n string) bool {
	if len(n) == 0 || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// Capabilities returns what server/discover advertises: tools, prompts,
// resources and completions when something of that kind is registered.
func (s *Server) Capabilities() mcp.ServerCapabilities {
	if s.core != nil {
		return s.core.Capabilities()
	}
	s.mu.RLock()
	if c := s.caps; c != nil {
		s.mu.RUnlock()
		return *c
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.capabilitiesLocked()
	s.caps = &c
	return c
}

func (s *Server) capabilitiesLocked() mcp.ServerCapabilities {
	var c mcp.ServerCapabilities
	if len(s.tools) > 0 {
		c.Tools = &mcp.ListChangedCapability{}
	}
	if len(s.prompts) > 0 {
		c.Prompts = &mcp.ListChangedCapability{}
	}
	if len(s.resources) > 0 || len(s.templates) > 0 {
		c.Resources = &mcp.ResourcesCapability{}
	}
	if s.complete != nil {
		c.Completions = &mcp.Empty{}
	}
	if len(s.extensions) > 0 {
		c.Extensions = make(map[string]json.RawMessage, len(s.extensions))
		for id, v := range s.extensions {
			c.Extensions[id] = v
		}
	}
	return c
}

// AddExtension advertises the extension id in server/discover's
// capabilities.extensions with its settings, a JSON object (nil means
// {}): basic/versioning.mdx §Extension Negotiation. It panics when id is
// not an extension identifier (mcp.ValidExtensionID) or settings is not
// an object: programming errors. The tasks extension is advertised by
// EnableTasks, which also serves its methods.
func (s *Server) AddExtension(id string, settings json.RawMessage) {
	settings, err := mcp.CheckExtension(id, settings)
	if err != nil {
		panic("mcpserver: " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.encoded, s.caps = nil, nil
	s.gen++
	if s.extensions == nil {
		s.extensions = map[string]json.RawMessage{}
	}
	s.extensions[id] = settings
}

// known reports whether method is served: server/discover always; the
// list/get/call/read methods only when their capability is advertised
// (basic/index.mdx: -32601 for a method gated by an unadvertised capability).
func (s *Server) known(method string) bool {
	if s.core != nil {
		return s.core.Known(method)
	}
	switch method {
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		return s.tasksRuntime() != nil
	}
	c := s.Capabilities()
	return c.Serves(method)
}

// checkVersion returns nil when v is served, else -32022 with
// data {supported, requested} (VER-S-02); supported lists every version
// the endpoint serves (alsoServed).
func (s *Server) checkVersion(v string) *jsonrpc.Error {
	if slices.Contains(s.versions, v) {
		return nil
	}
	all := s.endpointVersions()
	msg := "Unsupported protocol version"
	if slices.Contains(all, v) {
		msg += ": " + v + " is served on this endpoint through initialize and a session, not in this request's form"
	}
	return &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: msg,
		Data: mcp.UnsupportedVersionData{Supported: all, Requested: v}}
}

// serve answers one parsed request whose transport-level checks passed. It
// never panics: a handler panic becomes -32603. Every result carries
// resultType and the server's identity in _meta (MRTR-S-15, META-S-03).
func (s *Server) serve(ctx context.Context, in *transport.Incoming, principal string, notify transport.Notifier) (resp *jsonrpc.Response) {
	if s.core != nil {
		return s.core.Serve(ctx, in, principal, notify)
	}
	resp = &jsonrpc.Response{ID: in.ID}
	var ri *roundInfo
	if s.opts.Observer != nil && mcp.MRTRMethod(in.Method) {
		ri = &roundInfo{start: time.Now(), round: -1}
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("mcpserver: panic serving request", "method", in.Method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp.Result = nil
			resp.Error = jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
		}
		if ri != nil {
			s.observe(ctx, in, principal, ri, resp)
		}
	}()
	result, err := s.dispatch(ctx, in, principal, notify, ri)
	if err != nil {
		resp.Error = s.wireError(in, err)
		return resp
	}
	resp.Result = result
	return resp
}

func (s *Server) wireError(in *transport.Incoming, err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	if errors.Is(err, context.Canceled) {
		return jsonrpc.NewError(jsonrpc.CodeInternalError, "Request cancelled")
	}
	if unavailable(err) {
		s.log.Warn("mcpserver: a dependency is unavailable", "method", in.Method, "name", in.Name, "err", err)
		data := transport.RetryData{Retryable: true, RetryAfterMs: 1000}
		msg := "Temporarily unavailable; retry later"
		var ur interface{ UnavailableReason() string }
		if errors.As(err, &ur) && ur.UnavailableReason() == ReasonStorageFull {
			data.Reason, msg = ReasonStorageFull, "Temporarily unavailable: the server's storage is full; retry later"
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}
	}
	s.log.Error("mcpserver: handler failed", "method", in.Method, "name", in.Name, "err", err)
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
}

// ErrUnavailable marks a handler error as a passing outage (a database or
// upstream that cannot be reached): wrap it, and the client gets a
// retryable -32603 (HTTP 503 with Retry-After on Streamable HTTP) instead
// of a plain internal error.
var ErrUnavailable = errors.New("temporarily unavailable")

// ReasonStorageFull is the reason member of a retryable -32603's data
// ({"retryable":true,"retryAfterMs":1000,"reason":"storage_full"}) when
// the server's storage is full: nothing was written, and a retry works
// once space is freed. A handler error says so with an
// UnavailableReason() string method returning it (store.ErrStorageFull).
const ReasonStorageFull = "storage_full"

// unavailable reports whether err means a dependency could not be reached:
// ErrUnavailable, an error with an Unavailable() true method, a network error (refused, reset, timed out), or a
// connection cut mid-answer. Drivers wrap these, so errors.As sees them.
func unavailable(err error) bool {
	var ne net.Error
	var ue interface{ Unavailable() bool }
	if errors.As(err, &ue) && ue.Unavailable() {
		return true // e.g. store/postgres marks connection and shutdown errors
	}
	return errors.Is(err, ErrUnavailable) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded)
}

func (s *Server) serverMeta() mcp.ResultMeta {
	return mcp.ResultMeta{mcp.MetaServerInfo: s.info}
}

func ttlMs(d time.Duration) int64 { return d.Milliseconds() }

// dispatch serves in; ri, when not nil, collects what Observe needs.
func (s *Server) dispatch(ctx context.Context, in *transport.Incoming, principal string, notify transport.Notifier, ri *roundInfo) (any, error) {
	if !s.known(in.Method) {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", in.Method)
	}
	if staticMethods[in.Method] {
		return s.staticResult(in)
	}
	c := &call{in: in, principal: principal, notify: notify, ri: ri}
	switch in.Method {
	case mcp.MethodCompletionComplete:
		return s.serveComplete(ctx, in)
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		return s.serveTasks(ctx, in, principal)
	case mcp.MethodToolsCall:
		s.mu.RLock()
		e := s.toolIndex[in.Name]
		s.mu.RUnlock()
		if e == nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Unknown tool: %s", clipName(in.Name))
		}
		c.h, c.opts = e.handler, e.opts
		var err error
		if c.taskAllowed, err = s.taskGate(in, e.opts.Tasks); err != nil {
			return nil, err
		}
	case mcp.MethodPromptsGet:
		s.mu.RLock()
		e := s.promptIdx[in.Name]
		s.mu.RUnlock()
		if e == nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Unknown prompt: %s", clipName(in.Name))
		}
		if err := checkPromptArgs(e.prompt, in.Arguments); err != nil {
			return nil, err
		}
		c.h, c.opts = e.handler, e.opts
	case mcp.MethodResourcesRead:
		c.h, c.opts, c.vars = s.findResource(in.Name)
		if c.h == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found", Data: map[string]string{"uri": clipName(in.Name)}}
		}
	default:
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", in.Method)
	}
	return s.serveMRTR(ctx, c)
}

func checkCursor(in *transport.Incoming) error {
	if c := in.Params.Cursor; c != nil && *c != "" {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: unknown cursor")
	}
	return nil
}

func checkPromptArgs(p *mcp.Prompt, raw json.RawMessage) error {
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := jsonv2.Unmarshal(raw, &args); err != nil {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: prompt arguments must be an object of strings")
		}
	}
	for k, v := range args {
		if _, ok := v.(string); !ok {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: prompt argument %q must be a string", k)
		}
	}
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: missing required argument %q", a.Name)
		}
	}
	return nil
}

func (s *Server) findResource(uri string) (Handler, HandlerOptions, map[string]string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e, ok := s.resIdx[uri]; ok {
		return e.handler, e.opts, nil
	}
	for _, t := range s.templates {
		if vars, ok := matchTemplate(t.tmpl.URITemplate, uri); ok {
			return t.handler, t.opts, vars
		}
	}
	return nil, HandlerOptions{}, nil
}

// matchTemplate matches uri against a level-1 URI template.
func matchTemplate(tmpl, uri string) (map[string]string, bool) {
	vars := map[string]string{}
	for len(tmpl) > 0 {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			return vars, tmpl == uri
		}
		if !strings.HasPrefix(uri, tmpl[:open]) {
			return nil, false
		}
		uri = uri[open:]
		tmpl = tmpl[open:]
		end := strings.IndexByte(tmpl, '}')
		if end < 0 {
			return nil, false
		}
		name := tmpl[1:end]
		tmpl = tmpl[end+1:]
		stop := len(uri)
		if len(tmpl) > 0 {
			next := strings.IndexByte(tmpl, '{')
			lit := tmpl
			if next >= 0 {
				lit = tmpl[:next]
			}
			i := strings.Index(uri, lit)
			if i < 0 {
				return nil, false
			}
			stop = i
		}
		val := uri[:stop]
		if val == "" || strings.Contains(val, "/") {
			return nil, false
		}
		vars[name] = val
		uri = uri[stop:]
	}
	return vars, uri == ""
}

func (s *Server) serveComplete(ctx context.Context, in *transport.Incoming) (any, error) {
	p := in.Params
	if len(p.Ref) == 0 || p.Argument == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: ref and argument are required")
	}
	s.mu.RLock()
	h := s.complete
	s.mu.RUnlock()
	values, err := h(ctx, p.Ref, p.Argument.Name, p.Argument.Value)
	if err != nil {
		return nil, err
	}
	if values == nil {
		values = []string{}
	}
	total, more := len(values), false
	if len(values) > 100 {
		values, more = values[:100], true
	}
	return &mcp.CompleteResult{ResultType: mcp.ResultTypeComplete, Completion: mcp.Completion{Values: values, Total: total, HasMore: more}, Meta: s.serverMeta()}, nil
}

func newOperationID() [16]byte {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic("mcpserver: crypto/rand failed: " + err.Error())
	}
	return id
}

// staticMethods are answered from registrations alone, so their encoded
// results are kept until the next registration.
var staticMethods = map[string]bool{
	mcp.MethodDiscover: true, mcp.MethodToolsList: true, mcp.MethodPromptsList: true,
	mcp.MethodResourcesList: true, mcp.MethodResourceTemplatesList: true,
}

func (s *Server) staticResult(in *transport.Incoming) (any, error) {
	if err := checkCursor(in); err != nil {
		return nil, err
	}
	s.mu.RLock()
	b, gen := s.encoded[in.Method], s.gen
	s.mu.RUnlock()
	if b != nil {
		return b, nil
	}
	res, err := s.buildStatic(in)
	if err != nil {
		return nil, err
	}
	enc, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.gen == gen { // no registration since we started
		if s.encoded == nil {
			s.encoded = map[string]json.RawMessage{}
		}
		s.encoded[in.Method] = enc
	}
	s.mu.Unlock()
	return json.RawMessage(enc), nil
}

func (s *Server) buildStatic(in *transport.Incoming) (any, error) {
	lc := s.opts.ListCache
	switch in.Method {
	case mcp.MethodDiscover:
		return &mcp.DiscoverResult{ResultType: mcp.ResultTypeComplete, SupportedVersions: s.endpointVersions(),
			Capabilities: s.Capabilities(), Instructions: s.opts.Instructions,
			TTLMs: ttlMs(lc.TTL), CacheScope: lc.Scope, Meta: s.serverMeta()}, nil
	case mcp.MethodToolsList:
		if err := checkCursor(in); err != nil {
			return nil, err
		}
		s.mu.RLock()
		tools := make([]*mcp.Tool, len(s.tools))
		for i, e := range s.tools {
			tools[i] = e.tool
		}
		s.mu.RUnlock()
		return &mcp.ListToolsResult{ResultType: mcp.ResultTypeComplete, Tools: tools, TTLMs: ttlMs(lc.TTL), CacheScope: lc.Scope, Meta: s.serverMeta()}, nil
	case mcp.MethodPromptsList:
		if err := checkCursor(in); err != nil {
			return nil, err
		}
		s.mu.RLock()
		prompts := make([]*mcp.Prompt, len(s.prompts))
		for i, e := range s.prompts {
			prompts[i] = e.prompt
		}
		s.mu.RUnlock()
		return &mcp.ListPromptsResult{ResultType: mcp.ResultTypeComplete, Prompts: prompts, TTLMs: ttlMs(lc.TTL), CacheScope: lc.Scope, Meta: s.serverMeta()}, nil
	case mcp.MethodResourcesList:
		if err := checkCursor(in); err != nil {
			return nil, err
		}
		s.mu.RLock()
		res := make([]*mcp.Resource, len(s.resources))
		for i, e := range s.resources {
			res[i] = e.res
		}
		s.mu.RUnlock()
		return &mcp.ListResourcesResult{ResultType: mcp.ResultTypeComplete, Resources: res, TTLMs: ttlMs(lc.TTL), CacheScope: lc.Scope, Meta: s.serverMeta()}, nil
	case mcp.MethodResourceTemplatesList:
		if err := checkCursor(in); err != nil {
			return nil, err
		}
		s.mu.RLock()
		ts := make([]*mcp.ResourceTemplate, len(s.templates))
		for i, e := range s.templates {
			ts[i] = e.tmpl
		}
		s.mu.RUnlock()
		return &mcp.ListResourceTemplatesResult{ResultType: mcp.ResultTypeComplete, ResourceTemplates: ts, TTLMs: ttlMs(lc.TTL), CacheScope: lc.Scope, Meta: s.serverMeta()}, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", in.Method)
}
