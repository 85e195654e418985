package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
)

// request is one client request as the gateway serves it, whichever
// transport brought it.
type request struct {
	method string
	// name is params.name (tools/call, prompts/get) or params.uri
	// (resources/read), as the client named it.
	name      string
	args      json.RawMessage
	responses map[string]json.RawMessage
	state     *string
	meta      *mcp.RequestMeta
	cursor    string
	ref       json.RawMessage // completion/complete
	argument  json.RawMessage
	principal string
	// revision is the client's protocol revision: 2026-07-28, or the
	// 2025-era version of the session package legacy serves it on.
	revision string
	notify   func(*jsonrpc.Notification) error
}

// relay passes one message of an upstream's response stream to the
// client: a notification as it came (its progressToken is the client's
// own, which the gateway forwarded), a keep-alive (method "") as one.
func (r *request) relay(method string, params json.RawMessage) {
	if r.notify == nil {
		return
	}
	if method == "" {
		_ = r.notify(nil)
		return
	}
	n := &jsonrpc.Notification{Method: method}
	if len(params) > 0 {
		n.Params = params
	}
	_ = r.notify(n)
}

// errInvalidState is what a client learns of any requestState the
// gateway refuses (ELICIT-STATE-01): the reason goes to the log.
var errInvalidState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: reqstate.ErrInvalid.Error()}

// serve answers one request: the result's JSON, or the error to send.
func (g *Gateway) serve(ctx context.Context, r *request) (json.RawMessage, *jsonrpc.Error) {
	switch r.method {
	case mcp.MethodDiscover:
		return g.discover(), nil
	case mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourceTemplatesList:
		if r.cursor != "" {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: unknown cursor")
		}
		return g.list(r.method), nil
	case mcp.MethodCompletionComplete:
		return g.complete(ctx, r)
	case mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead:
		return g.call(ctx, r)
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", r.method)
}

// round is what the audit learns of one round.
type round struct {
	start    time.Time
	call     [16]byte
	n        uint32
	up       *upstream
	target   string
	asked    []string
	refused  string
	peer     bool
	outcome  string
	code     int
	hasClaim bool
}

// call forwards one round of an MRTR request to the upstream that owns
// its target.
func (g *Gateway) call(ctx context.Context, r *request) (res json.RawMessage, jerr *jsonrpc.Error) {
	rd := &round{start: g.now()}
	defer func() { g.audit(ctx, r, rd, jerr) }()
	rt, jerr := g.route(ctx, r)
	if jerr != nil {
		return nil, jerr
	}
	rd.up, rd.target = rt.up, rt.name
	binding := &binder{r: r}
	st, jerr := g.openState(r, rt, binding, rd)
	if jerr != nil {
		return nil, jerr
	}
	if st != nil && st.kind == kindHeld && st.instance != g.instance {
		rd.peer = true
		return g.peers.forward(ctx, r, rt, st)
	}
	a, jerr := g.forward(ctx, r, rt, st, hex.EncodeToString(rd.call[:]))
	if jerr != nil {
		return nil, jerr
	}
	if a.result != nil {
		return g.withGatewayMeta(a.result, rt.up), nil
	}
	return g.relayInterim(r, rt, a, binding, rd)
}

// binder is a request's reqstate.Binding, made when a state is to be
// opened or sealed: a call that does neither (no state came, none goes)
// needs no digest of its arguments.
type binder struct {
	r    *request
	b    reqstate.Binding
	done bool
}

func (bd *binder) binding() (reqstate.Binding, *jsonrpc.Error) {
	if !bd.done {
		digest, err := reqstate.DigestArguments(bd.r.args)
		if err != nil {
			return reqstate.Binding{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: arguments are not valid JSON")
		}
		bd.b = reqstate.Binding{Principal: bd.r.principal, Method: bd.r.method, Name: bd.r.name, ArgsDigest: digest}
		bd.done = true
	}
	return bd.b, nil
}

// openState opens the client's requestState, if it sent one, and notes
// its call id and round in rd; a first round gets a new call id. A state
// that does not open, or was sealed for another upstream, is refused
// with the one opaque error (ELICIT-STATE-01), the reason logged.
func (g *Gateway) openState(r *request, rt target, bd *binder, rd *round) (*payload, *jsonrpc.Error) {
	if r.state == nil {
		if _, err := rand.Read(rd.call[:]); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
		}
		rd.hasClaim = true
		return nil, nil
	}
	binding, jerr := bd.binding()
	if jerr != nil {
		return nil, jerr
	}
	claims, err := g.sealer.Open(*r.state, binding)
	if err != nil {
		reason := reqstate.Reason("unknown")
		var re *reqstate.Error
		if errors.As(err, &re) {
			reason = re.Reason
		}
		rd.refused = string(reason)
		g.log.Warn("gateway: requestState refused", "reason", string(reason), "method", r.method, "principal", r.principal)
		return nil, errInvalidState
	}
	st, err := decodePayload(claims.Payload)
	if err != nil || st.upstream != rt.up.cfg.Name {
		// Sealed for another upstream: the catalog moved the name.
		rd.refused = "other_upstream"
		g.log.Warn("gateway: requestState for another upstream", "method", r.method, "principal", r.principal)
		return nil, errInvalidState
	}
	rd.call, rd.n, rd.hasClaim = claims.OperationID, claims.Round, true
	return st, nil
}

// forward sends one round to the upstream as its revision needs: a held
// 2025 call's retry resumes it, a 2025 upstream's first round starts
// one, and a 2026-07-28 upstream gets the request relayed.
func (g *Gateway) forward(ctx context.Context, r *request, rt target, st *payload, callID string) (*answer, *jsonrpc.Error) {
	switch {
	case st != nil && st.kind == kindHeld:
		return g.held.resume(ctx, r, rt, st, callID)
	case rt.up.revision() == Revision2025:
		return g.held.start(ctx, r, rt, callID)
	}
	a, err := rt.up.forwardModern(ctx, r, rt.name, rt.headers, st, callID)
	if err != nil {
		return nil, asRPC(err)
	}
	return a, nil
}

// relayInterim answers an upstream's interim result: refused when it asks
// what the client did not declare; else the questions as they came, with
// the gateway's sealed state carrying the upstream's (or naming the held
// call).
func (g *Gateway) relayInterim(r *request, rt target, a *answer, bd *binder, rd *round) (json.RawMessage, *jsonrpc.Error) {
	rd.asked = askedKinds(a.asked)
	if need, missing := missingCapabilities(&r.meta.ClientCapabilities, a.asked); missing {
		// MRTR-S-08, CAP-S-01: what the client did not declare is not
		// relayed, whoever asks. A 2025 upstream's held call ends here.
		if a.held != nil {
			a.held.abandon()
		}
		g.log.Warn("gateway: upstream asked for an undeclared capability", "upstream", rt.up.cfg.Name, "asked", strings.Join(rd.asked, ","))
		return nil, mcpserver.MissingCapability(need, "")
	}
	binding, jerr := bd.binding()
	if jerr != nil {
		if a.held != nil {
			a.held.abandon()
		}
		return nil, jerr
	}
	p := &payload{kind: kindRelayed, upstream: rt.up.cfg.Name, hasState: a.hasState, state: a.state}
	if a.held != nil {
		p = a.held.payload(rt.up.cfg.Name)
	}
	tok, err := g.sealer.Seal(&reqstate.Claims{Binding: binding, OperationID: rd.call, Round: rd.n + 1, Payload: p.encode()})
	if err != nil {
		g.log.Error("gateway: sealing requestState", "err", err)
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
	}
	if len(tok) > reqstate.MaxTokenLen {
		// The upstream's state is too long to carry inside the gateway's.
		if a.held != nil {
			a.held.abandon()
		}
		g.log.Error("gateway: upstream requestState too long to relay", "upstream", rt.up.cfg.Name, "bytes", len(a.state))
		return nil, upstreamBroke("its requestState is too long for the gateway to carry")
	}
	out := a.interim
	out.set("requestState", quote(tok))
	if a.rawReqs != nil {
		out.set("inputRequests", a.rawReqs)
	}
	return g.withGatewayMeta(out, rt.up), nil
}

// asRPC returns err as a JSON-RPC error (forwardModern's errors are).
func asRPC(err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
}

// withGatewayMeta sets, in a result's _meta, the gateway as serverInfo
// (the server the client talks to) and MetaUpstream; the upstream's
// other _meta members stay.
func (g *Gateway) withGatewayMeta(o *object, up *upstream) json.RawMessage {
	meta := &object{}
	if v := o.get("_meta"); v != nil && v.Kind() == '{' {
		if m, err := parseObject(v); err == nil {
			meta = m
		}
	}
	meta.set(mcp.MetaServerInfo, g.infoJSON)
	if up != nil {
		meta.set(MetaUpstream, up.nameJSON)
	}
	o.set("_meta", meta.encode())
	return o.encode()
}

// asked is what one input request asks: its method and, for
// elicitation, its mode (form when absent, ELI-C-04).
type asked struct{ method, mode string }

// askedOf reads what an input request asks; ok is false when it is not
// an object with a method (a string). A mode that is not a string reads
// as absent.
func askedOf(raw jsontext.Value) (a asked, ok bool) {
	var r struct {
		Method string `json:"method"`
		Params struct {
			Mode string `json:"mode"`
		} `json:"params"`
	}
	if raw.Kind() != '{' {
		return asked{}, false
	}
	// A member of another type is skipped, the rest read (encoding/json).
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, &r); (err != nil && !errors.As(err, &te)) || r.Method == "" {
		return asked{}, false
	}
	a.method = r.Method
	if r.Method == mcp.MethodElicitationCreate {
		a.mode = r.Params.Mode
		if a.mode == "" {
			a.mode = mcp.ElicitationModeForm
		}
	}
	return a, true
}

// askedKinds names what each input request asks, sorted:
// "elicitation/create:form", "elicitation/create:url",
// "sampling/createMessage", "roots/list", or the method.
func askedKinds(all []asked) []string {
	out := make([]string, 0, len(all))
	for _, a := range all {
		k := a.method
		if a.mode != "" {
			k += ":" + a.mode
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// missingCapabilities returns what the input requests need that caps
// lacks, in the spec's object form, and whether anything is missing.
func missingCapabilities(caps *mcp.ClientCapabilities, all []asked) (mcp.ClientCapabilities, bool) {
	var need mcp.ClientCapabilities
	missing := false
	elicit := func() *mcp.ElicitationCapability {
		if need.Elicitation == nil {
			need.Elicitation = &mcp.ElicitationCapability{}
		}
		return need.Elicitation
	}
	for _, a := range all {
		method, mode := a.method, a.mode
		switch {
		case method == mcp.MethodElicitationCreate && mode == mcp.ElicitationModeURL:
			if !caps.ElicitationURL() {
				elicit().URL, missing = &mcp.Empty{}, true
			}
		case method == mcp.MethodElicitationCreate:
			if !caps.ElicitationForm() {
				elicit().Form, missing = &mcp.Empty{}, true
			}
		case method == mcp.MethodSamplingCreate:
			if !caps.HasSampling() {
				need.Sampling, missing = &mcp.SamplingCapability{}, true
			}
		case method == mcp.MethodRootsList:
			if !caps.HasRoots() {
				need.Roots, missing = &mcp.RootsCapability{}, true
			}
		}
	}
	return need, missing
}

func hexID(id [16]byte) string { return hex.EncodeToString(id[:]) }
