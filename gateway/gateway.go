// Package gateway is an MCP gateway that keeps elicitation intact: one
// endpoint in front of named upstream servers, serving 2026-07-28
// clients (stateless, multi round-trip requests) and 2025-11-25 clients
// (sessions) on the same URL, with the tools, prompts and resources of
// every upstream, where a request that needs the user — an
// input_required result, or a 2025 server's elicitation/create — reaches
// the user and the answer reaches the upstream that asked.
//
// What it guarantees (docs/gateway.md has the whole list):
//
//   - A 2026-07-28 upstream's input_required passes through with its
//     inputRequests unchanged (URL-mode URLs included: the user sees the
//     real site); the upstream's requestState travels inside the
//     gateway's own sealed requestState (package reqstate), bound to the
//     user, the upstream, the request and an expiry, and goes back to the
//     same upstream unchanged on the retry. The result's _meta names the
//     upstream that asked (MetaUpstream).
//   - A 2025-11-25 upstream's elicitation/create (and sampling, roots)
//     arrives on a session the gateway holds for that user; the gateway
//     holds the upstream call and presents the request as an
//     input_required result (to a 2025 client, package legacy turns that
//     into a request over its own session); the retry answers the
//     upstream's request. The held call lives on one instance
//     (Options.PeerURL says how other instances reach it).
//   - The end client's capabilities, declared on each request, reach the
//     upstream with that request (a 2025 upstream gets a session per
//     distinct capability set), so an upstream's -32021 reaches the
//     client as the same error, and the gateway itself refuses to relay a
//     request the client did not declare (a form-only client never gets
//     a URL). Errors keep their code, message and data.
//   - Each user has their own identity at each upstream (Credentials),
//     their own 2025 sessions and their own process of a stdio upstream
//     (Upstream.Command); the client's token never leaves the gateway.
//   - Every round is reported (Options.Audit) with an id the upstream
//     sees in _meta (MetaCall) and the protocol revisions of both sides.
//
// Names: with one upstream, tool and prompt names pass unchanged; with
// several, a name two upstreams share is prefixed with the upstream's
// name and "_" (Options.PrefixAll prefixes every name). Resource URIs are
// never renamed; a URI two upstreams list is served by the first.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
)

// _meta keys the gateway adds.
const (
	// MetaUpstream, in a result's _meta, is the name of the upstream that
	// answered (and, in an input_required result, asked).
	MetaUpstream = "io.github.mcp-elicit/upstream"
	// MetaCall, in the _meta of a request the gateway sends upstream, is
	// the gateway's id of the user's call (32 hex characters), the same on
	// every round: the audit records of the gateway and of the upstream
	// can be joined on it.
	MetaCall = "io.github.mcp-elicit/call"
)

// Revisions the gateway speaks with upstreams.
const (
	Revision2026 = mcp.ProtocolVersion
	Revision2025 = "2025-11-25"
)

// Upstream is one server behind the gateway.
type Upstream struct {
	// Name names the upstream: 1 to 32 lower-case ASCII letters, digits
	// and hyphens, starting with a letter; unique. It prefixes colliding
	// names (Name + "_" + name) and appears in MetaUpstream and the audit.
	Name string
	// URL is the upstream's MCP endpoint, http or https. Either URL or
	// Command is set.
	URL string
	// Command, instead of URL, runs the upstream as a local program that
	// speaks MCP 2026-07-28 over its standard input and output: one
	// process per user (never a process shared between users), started
	// on the user's first request with the cmd Command returns for them:
	// principal is the user's id (CatalogPrincipal for the gateway's own
	// process, which reads the catalog) and token their credential from
	// Credentials ("" when none; a user with ErrNoCredentials gets no
	// process). The cmd must not be started and must leave Stdin and
	// Stdout nil (package mcpclient, NewCommand, drives them). CommandLine
	// builds one from a program and its arguments. A process that exits
	// fails the requests in progress with a retryable -32603, and the next
	// request starts a new one.
	Command func(principal, token string) *exec.Cmd
	// MaxProcesses bounds a Command upstream's processes; 0 means
	// DefaultMaxProcesses. A new user's request at the bound closes the
	// process idle the longest, or, when every process is busy, is refused
	// with a retryable -32603.
	MaxProcesses int
	// ProcessIdle closes a Command upstream's process unused this long;
	// 0 means DefaultProcessIdle.
	ProcessIdle time.Duration
	// Credentials give each user's token at this upstream; nil means
	// Anonymous.
	Credentials Credentials
	// Revision is the protocol revision to speak: "" finds out (a
	// server/discover at 2026-07-28 first; an upstream that does not
	// answer it gets 2025-11-25 sessions), Revision2026 or Revision2025
	// (not for a Command upstream).
	Revision string
	// HTTPClient sends the requests to URL; nil means one with no overall
	// timeout (a tool call may take long; contexts bound each request)
	// that keeps up to 256 connections to each upstream idle for reuse.
	HTTPClient *http.Client
}

// Options configure a Gateway.
type Options struct {
	// Info is the gateway's identity: its serverInfo to clients and its
	// clientInfo to upstreams. The zero value means name "elicit-gateway".
	Info mcp.Implementation
	// Upstreams are the servers behind the gateway, at least one.
	Upstreams []Upstream
	// PrefixAll prefixes every tool and prompt name with its upstream's
	// name, not only those two upstreams share.
	PrefixAll bool
	// Sealer seals the gateway's requestState. Nil means a random key of
	// this process (fine for one instance; instances behind one load
	// balancer must share keys).
	Sealer *reqstate.Sealer
	// Logger receives operational events; nil means slog.Default(). No
	// argument, answer, token or state is ever logged.
	Logger *slog.Logger
	// Audit, when set, receives one Record per round of tools/call,
	// prompts/get and resources/read, after the answer is built. It runs
	// on the request's goroutine and should be quick.
	Audit func(ctx context.Context, r *Record)
	// CatalogRefresh is how often the upstreams' lists are read again; 0
	// means 5 minutes. A call naming something unknown reads them again at
	// once, at most every 10 seconds.
	CatalogRefresh time.Duration
	// HeldTimeout bounds how long a 2025 upstream's call waits for the
	// client's answer to its request; 0 means the sealer's TTL (the time a
	// client has to retry). Past it, the upstream's request is answered
	// with cancel (elicitation) or an error, and the call ends.
	HeldTimeout time.Duration
	// SessionIdle closes a 2025 upstream session unused this long; 0 means
	// 5 minutes.
	SessionIdle time.Duration
	// MaxSessionsPerUser caps the 2025 sessions one user holds at one
	// upstream (one per call in progress); 0 means 8. A call beyond it is
	// refused with a retryable error.
	MaxSessionsPerUser int
	// PeerURL is this instance's MCP endpoint as the other gateway
	// instances reach it (e.g. http://10.0.0.5:3000/mcp). When set, a
	// held 2025 call's state carries it, and an instance that gets the
	// retry forwards it there (authenticated with PeerSecret). When empty,
	// such a retry is refused with an error naming this instance.
	PeerURL string
	// PeerSecret authenticates retries forwarded between instances; every
	// instance needs the same one (at least 32 bytes). Required with
	// PeerURL.
	PeerSecret []byte
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Gateway serves the upstreams' tools, prompts and resources on one
// endpoint. Build it with New, call Start, mount Handler, and Close it at
// shutdown.
type Gateway struct {
	opts      Options
	info      mcp.Implementation
	infoJSON  json.RawMessage // info, encoded once
	log       *slog.Logger
	sealer    *reqstate.Sealer
	upstreams []*upstream
	byName    map[string]*upstream
	instance  [16]byte
	peers     *peers
	now       func() time.Time

	catMu       sync.RWMutex
	cat         *catalog
	lastRefresh time.Time
	refreshMu   sync.Mutex // one refresh at a time

	held    *heldCalls
	cancel  context.CancelFunc
	closeMu sync.Mutex
	closed  bool
	// validInput checks a client's answer to a held call's request as
	// mcpserver checks inputResponses.
	validInput func(method string, raw json.RawMessage) bool
	// legacyVersions are the 2025-era versions the endpoint also serves
	// (Handler mounts package legacy), for server/discover.
	legacyVersions []string
}

// New checks the options and returns a gateway that has not contacted
// any upstream yet (Start does).
func New(opts Options) (*Gateway, error) {
	if len(opts.Upstreams) == 0 {
		return nil, errors.New("gateway: no upstream")
	}
	g := &Gateway{opts: opts, info: opts.Info, log: opts.Logger, sealer: opts.Sealer, byName: map[string]*upstream{}, now: opts.Now}
	if g.info.Name == "" {
		g.info = mcp.Implementation{Name: "elicit-gateway", Version: "0.1.0"}
	}
	g.infoJSON = mustJSON(g.info)
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.sealer == nil {
		var err error
		if g.sealer, err = reqstate.New([]reqstate.Key{reqstate.NewKey("gateway")}, &reqstate.Options{Now: g.now}); err != nil {
			return nil, err
		}
	}
	if g.opts.CatalogRefresh <= 0 {
		g.opts.CatalogRefresh = 5 * time.Minute
	}
	if g.opts.HeldTimeout <= 0 {
		g.opts.HeldTimeout = g.sealer.TTL()
	}
	if g.opts.SessionIdle <= 0 {
		g.opts.SessionIdle = 5 * time.Minute
	}
	if g.opts.MaxSessionsPerUser <= 0 {
		g.opts.MaxSessionsPerUser = 8
	}
	if _, err := rand.Read(g.instance[:]); err != nil {
		return nil, err
	}
	if opts.PeerURL != "" {
		if err := checkURL(opts.PeerURL); err != nil {
			return nil, fmt.Errorf("gateway: PeerURL: %w", err)
		}
		if len(opts.PeerSecret) < 32 {
			return nil, errors.New("gateway: PeerURL needs a PeerSecret of at least 32 bytes, the same on every instance")
		}
	}
	g.peers = newPeers(g, opts.PeerSecret)
	g.held = newHeldCalls(g)
	for i, u := range opts.Upstreams {
		if err := g.addUpstream(u); err != nil {
			return nil, fmt.Errorf("gateway: upstream %d: %w", i+1, err)
		}
	}
	g.cat = emptyCatalog()
	g.validInput = transport.Of(mcpserver.New(g.info, &mcpserver.Options{Sealer: g.sealer})).ValidInputResponse
	return g, nil
}

// addUpstream checks u and adds it.
func (g *Gateway) addUpstream(u Upstream) error {
	if err := validUpstreamName(u.Name); err != nil {
		return err
	}
	if _, dup := g.byName[u.Name]; dup {
		return fmt.Errorf("name %q given twice", u.Name)
	}
	switch {
	case u.Command != nil && u.URL != "":
		return fmt.Errorf("%q: both a URL and a Command", u.Name)
	case u.Command != nil && u.Revision == Revision2025:
		return fmt.Errorf("%q: a Command upstream speaks %s", u.Name, Revision2026)
	case u.Command == nil:
		if err := checkURL(u.URL); err != nil {
			return fmt.Errorf("%q: %w", u.Name, err)
		}
	}
	switch u.Revision {
	case "", Revision2026, Revision2025:
	default:
		return fmt.Errorf("%q: revision %q: want %s or %s (or empty to find out)", u.Name, u.Revision, Revision2026, Revision2025)
	}
	up := newUpstream(g, u)
	g.upstreams = append(g.upstreams, up)
	g.byName[u.Name] = up
	return nil
}

// validUpstreamName checks an Upstream.Name.
func validUpstreamName(n string) error {
	if n == "" || len(n) > 32 {
		return fmt.Errorf("name %q: want 1 to 32 characters", n)
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' && i > 0 || c == '-' && i > 0) {
			return fmt.Errorf("name %q: want lower-case letters, digits and hyphens, starting with a letter", n)
		}
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not an http(s) URL without user info or fragment", s)
	}
	return nil
}

// Start contacts every upstream: it finds out each one's protocol
// revision and reads its catalog. An upstream that cannot be reached is
// logged and tried again with every refresh; Start fails only when none
// answers. The catalog is refreshed in the background until Close.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.refresh(ctx, true); err != nil {
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go g.refreshLoop(bg)
	go g.sweepLoop(bg)
	return nil
}

// Close ends the background refresh, every held call (its upstream
// request is cancelled) and every 2025 upstream session.
func (g *Gateway) Close() error {
	g.closeMu.Lock()
	if g.closed {
		g.closeMu.Unlock()
		return nil
	}
	g.closed = true
	g.closeMu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
	g.held.closeAll()
	for _, up := range g.upstreams {
		up.close()
	}
	return nil
}

// sweepLoop closes idle upstream processes until ctx ends: it looks
// every tenth of the shortest ProcessIdle (at least every second, at
// most every minute).
func (g *Gateway) sweepLoop(ctx context.Context) {
	every := time.Minute
	for _, up := range g.upstreams {
		if up.procs != nil {
			every = min(every, max(up.processIdle()/10, time.Second))
		}
	}
	ctxtime.Every(ctx, every, func(context.Context) { g.sweepProcesses() })
}

// sweepProcesses closes the upstream processes idle for their
// ProcessIdle or longer.
func (g *Gateway) sweepProcesses() {
	for _, up := range g.upstreams {
		if up.procs != nil {
			up.procs.sweep()
		}
	}
}

// Instance returns this instance's id (32 hex characters), as held calls
// name it.
func (g *Gateway) Instance() string { return hexID(g.instance) }
