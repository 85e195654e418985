package legacy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// bridge runs mcpserver handlers for go-sdk sessions.
type bridge struct {
	srv  *mcpserver.Server
	core transport.Server // srv as a transport sees it
	opts Options
	log  *slog.Logger
	reg  *registry
	ids  atomic.Int64 // JSON-RPC ids of the internal requests (never on the wire)
}

// call is one 2025 request being served: what stays the same across rounds.
type call struct {
	ss        *sdk.ServerSession
	principal string
	method    string          // tools/call, prompts/get, resources/read, completion/complete
	target    map[string]any  // name or uri, and for completion ref/argument
	arguments json.RawMessage // nil when absent
	progress  any             // the client's progressToken, nil when absent
	// lastInvoke is how long the last handler call took: one that held
	// the request waiting for a page (connect.Step) needs no pause after.
	lastInvoke time.Duration
	// held is set when the last handler call kept the request alive
	// (mcpserver.Request.KeepAlive, progress included): it waited for the
	// page itself, so the bridge does not wait again with polls.
	held atomic.Bool
}

// pendingURL is a URL-mode elicitation the user accepted.
type pendingURL struct {
	id, url, message string
	polls            int
}

// serve runs c through the registered handler, answering input requests
// over the session, and returns the complete result's JSON or the error to
// send (a *sdkjsonrpc.Error for protocol errors).
func (b *bridge) serve(ctx context.Context, c *call) (_ json.RawMessage, err error) {
	servedErr := false // err is a response of Serve, already observed
	if s := sessionOf(ctx); s != nil {
		// go-sdk never cancels a handler when its session closes (its close
		// waits for handlers): the session's own context does.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })()
		defer func() {
			if err != nil && s.ctx.Err() != nil {
				err = &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Session closed: " + context.Cause(s.ctx).Error()}
			}
		}()
	}
	caps := capabilitiesOf(c.ss)
	var state *string
	var responses map[string]json.RawMessage
	accepted := map[string]pendingURL{} // URL keys accepted in the previous round
	// An ending the bridge decides itself (the client's error, the round
	// cap) is audited as a round of the operation; Serve reports the rest.
	defer func() {
		if err != nil && ctx.Err() == nil && !servedErr {
			code := jsonrpc.CodeInternalError
			var se *sdkjsonrpc.Error
			if errors.As(err, &se) {
				code = int(se.Code)
			}
			in, _ := b.incoming(c, caps, nil, state)
			b.core.ReportFault(ctx, in, c.principal, code)
		}
	}()
	for round := 0; ; round++ {
		if round >= b.opts.MaxRounds {
			b.log.Warn("legacy: too many rounds", "method", c.method, "rounds", round, "unfinished_pages", len(accepted))
			if len(accepted) > 0 {
				return nil, unfinishedPages(accepted)
			}
			return nil, &sdkjsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Too many rounds for one request"}
		}
		start := time.Now()
		c.held.Store(false)
		resp := b.invoke(ctx, c, caps, responses, state)
		c.lastInvoke = time.Since(start)
		if resp.Error != nil {
			servedErr = true
			return nil, toSDKError(resp.Error)
		}
		raw, err := json.Marshal(resp.Result)
		if err != nil {
			return nil, err
		}
		var ir struct {
			ResultType    string                      `json:"resultType"`
			InputRequests map[string]mcp.InputRequest `json:"inputRequests"`
			RequestState  *string                     `json:"requestState"`
		}
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, err
		}
		if ir.ResultType != mcp.ResultTypeInputRequired {
			b.completeURLs(ctx, c.ss, accepted, nil)
			return raw, nil
		}
		if ir.RequestState == nil {
			return nil, errors.New("input-required result without requestState")
		}
		state = ir.RequestState
		b.completeURLs(ctx, c.ss, accepted, ir.InputRequests)
		if len(ir.InputRequests) == 0 {
			// "Come back later": the same call again after a pause, with no answers.
			responses = nil
			if err := ctxtime.Sleep(ctx, b.opts.StatePoll); err != nil {
				return nil, err
			}
			continue
		}
		responses, accepted, err = b.answer(ctx, c, ir.InputRequests, accepted)
		if err != nil {
			return nil, err
		}
	}
}

// invoke calls the handler once through mcpserver's own parsing and
// serving, so the requestState is opened, checked and sealed exactly as for
// a 2026 request.
func (b *bridge) invoke(ctx context.Context, c *call, caps json.RawMessage, responses map[string]json.RawMessage, state *string) *jsonrpc.Response {
	in, resp := b.incoming(c, caps, responses, state)
	if resp != nil {
		return resp
	}
	if c.ss != nil {
		if ip := c.ss.InitializeParams(); ip != nil {
			ctx = context.WithValue(ctx, clientVersionKey{}, negotiated(ip.ProtocolVersion))
		}
	}
	return b.core.Serve(ctx, in, c.principal, b.notifier(ctx, c))
}

// clientVersionKey carries the session's protocol version into Serve.
type clientVersionKey struct{}

// ClientVersion returns the protocol version of the 2025-era session that
// a request came through, given the context the server's Serve (and so a
// handler) runs with, and false for a request that came otherwise (a
// 2026-07-28 request). For audit records that name both sides'
// revisions, such as the gateway's.
func ClientVersion(ctx context.Context) (string, bool) {
	v, ok := ctx.Value(clientVersionKey{}).(string)
	return v, ok
}

// negotiated is the version a session runs at when its client asked for
// v: v when served, else the newest (the server's answer to initialize).
func negotiated(v string) string {
	if isLegacyVersion(v) {
		return v
	}
	return Versions[0]
}

// incoming builds the 2026 request of one round of c: the original
// params, the client's capabilities in _meta, the answers and the state.
// On failure resp is the error response.
func (b *bridge) incoming(c *call, caps json.RawMessage, responses map[string]json.RawMessage, state *string) (_ *transport.Incoming, resp *jsonrpc.Response) {
	meta := map[string]any{
		mcp.MetaProtocolVersion:    mcp.ProtocolVersion,
		mcp.MetaClientCapabilities: caps,
		// Every level reaches ServerSession.Log, which filters by the level
		// the client set with logging/setLevel.
		"io.modelcontextprotocol/logLevel": "debug",
	}
	if c.progress != nil {
		meta["progressToken"] = c.progress
	}
	params := map[string]any{"_meta": meta}
	for k, v := range c.target {
		params[k] = v
	}
	if c.arguments != nil {
		params["arguments"] = c.arguments
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	if state != nil {
		params["requestState"] = *state
	}
	id := jsonrpc.IntID(b.ids.Add(1))
	p, err := json.Marshal(params)
	if err != nil {
		return nil, &jsonrpc.Response{ID: id, Error: jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params")}
	}
	in, jerr := transport.Parse(&jsonrpc.Request{ID: id, Method: c.method, Params: p})
	if jerr != nil {
		return nil, &jsonrpc.Response{ID: id, Error: jerr}
	}
	return in, nil
}

// notifier forwards the handler's progress and log notifications to the
// session, on the stream of the request being served.
func (b *bridge) notifier(ctx context.Context, c *call) transport.Notifier {
	ss := c.ss
	return func(n *jsonrpc.Notification) error {
		if n == nil || n.Method == mcp.NotificationProgress {
			c.held.Store(true)
		}
		if n == nil {
			return nil // a keep-alive: go-sdk's stream has its own
		}
		raw, err := json.Marshal(n.Params)
		if err != nil {
			return err
		}
		switch n.Method {
		case mcp.NotificationProgress:
			var p sdk.ProgressNotificationParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			return ss.NotifyProgress(ctx, &p)
		case mcp.NotificationMessage:
			var p sdk.LoggingMessageParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			return ss.Log(ctx, &p)
		}
		return nil
	}
}

// answer sends the input requests to the client, in key order, and returns
// the answers and the URL keys accepted in this round. A URL the user
// already accepted in the previous round is not asked again while polls
// remain: the same accept goes back after a pause, so a page finished
// meanwhile completes the call without a second prompt. A handler that
// held the request itself (connect.Step, connect.Service.HoldRetry: it
// kept the stream alive while waiting for the page) is not polled: its
// one wait is the whole hold, and the user is asked again at once, so an
// early accept is held for one wait, not one per poll.
func (b *bridge) answer(ctx context.Context, c *call, reqs map[string]mcp.InputRequest, prev map[string]pendingURL) (map[string]json.RawMessage, map[string]pendingURL, error) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rd := &roundAnswers{out: make(map[string]json.RawMessage, len(reqs)), accepted: map[string]pendingURL{}}
	for _, k := range keys {
		r := reqs[k]
		raw, err := json.Marshal(r.Params)
		if err != nil {
			return nil, nil, err
		}
		switch r.Method {
		case mcp.MethodElicitationCreate:
			err = b.elicit(ctx, c, k, raw, prev, rd)
		case mcp.MethodSamplingCreate:
			rd.out[k], err = b.sample(ctx, c, raw)
		case mcp.MethodRootsList:
			rd.out[k], err = b.ask(ctx, r.Method, func(ctx context.Context) error { _, err := c.ss.ListRoots(ctx, &sdk.ListRootsParams{}); return err })
		default:
			err = fmt.Errorf("input request %q has unknown method %q", k, r.Method)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return rd.out, rd.accepted, nil
}

// roundAnswers are one round's answers being collected, by input request key.
type roundAnswers struct {
	out map[string]json.RawMessage
	// accepted are the URL elicitations the user accepted this round.
	accepted map[string]pendingURL
	// polled: the round has paused once for the URLs it polls.
	polled bool
}

// elicit answers elicitation k (params raw): a URL the user accepted in
// the previous round (prev) is polled while polls remain; anything else
// is asked of the client.
func (b *bridge) elicit(ctx context.Context, c *call, k string, raw json.RawMessage, prev map[string]pendingURL, rd *roundAnswers) error {
	var p mcp.ElicitRequestParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	if !p.IsURL() {
		var err error
		rd.out[k], err = b.ask(ctx, mcp.MethodElicitationCreate, func(ctx context.Context) error {
			_, err := c.ss.Elicit(ctx, &sdk.ElicitParams{Mode: mcp.ElicitationModeForm, Message: p.Message, RequestedSchema: p.RequestedSchema})
			return err
		})
		return err
	}
	if pu, ok := prev[k]; ok && pu.url == p.URL && pu.polls < b.opts.URLPolls && !c.held.Load() {
		return b.poll(ctx, c, k, pu, rd)
	}
	id := newElicitationID()
	ans, err := b.ask(ctx, mcp.MethodElicitationCreate, func(ctx context.Context) error {
		_, err := c.ss.Elicit(ctx, &sdk.ElicitParams{Mode: mcp.ElicitationModeURL, Message: p.Message, URL: p.URL, ElicitationID: id})
		return err
	})
	if err != nil {
		return err
	}
	if actionOf(ans) == mcp.ActionAccept {
		rd.accepted[k] = pendingURL{id: id, url: p.URL, message: p.Message}
	}
	rd.out[k] = ans
	return nil
}

// poll answers URL elicitation k with the user's accept of the previous
// round again, after the round's one pause.
func (b *bridge) poll(ctx context.Context, c *call, k string, pu pendingURL, rd *roundAnswers) error {
	if !rd.polled {
		// A handler that waited for the page itself (and woke when it
		// was finished) has used the pause.
		if err := ctxtime.Sleep(ctx, b.opts.URLPoll-c.lastInvoke); err != nil {
			return err
		}
		rd.polled = true
	}
	pu.polls++
	rd.accepted[k] = pu
	rd.out[k] = json.RawMessage(`{"action":"accept"}`)
	return nil
}

// sample asks the client's model (params raw).
func (b *bridge) sample(ctx context.Context, c *call, raw json.RawMessage) (json.RawMessage, error) {
	var p sdk.CreateMessageParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return b.ask(ctx, mcp.MethodSamplingCreate, func(ctx context.Context) error { _, err := c.ss.CreateMessage(ctx, &p); return err })
}

// completeURLs sends notifications/elicitation/complete for each URL
// elicitation accepted in the previous round that the handler no longer
// asks for (next is the new round's requests; nil when the call is done):
// the handler found the page finished. An accept the handler asks again is
// still pending.
func (b *bridge) completeURLs(ctx context.Context, ss *sdk.ServerSession, accepted map[string]pendingURL, next map[string]mcp.InputRequest) {
	for k, pu := range accepted {
		if r, again := next[k]; again && r.Method == mcp.MethodElicitationCreate {
			continue
		}
		if err := ss.NotifyElicitationComplete(ctx, &sdk.ElicitationCompleteParams{ElicitationID: pu.id}); err != nil {
			b.log.Warn("legacy: notifications/elicitation/complete not sent", "err", err)
		}
		delete(accepted, k)
	}
}

// ask sends one server-to-client request of method with send, within
// Options.InputTimeout, and returns the client's result as it arrived. A
// result that is not a valid one for method is refused here with -32602
// worded for the 2025 client (the 2026 wording names inputResponses, which
// this client never sent).
func (b *bridge) ask(ctx context.Context, method string, send func(context.Context) error) (json.RawMessage, error) {
	actx, cancel := context.WithTimeout(ctx, b.opts.InputTimeout)
	defer cancel()
	raw, err := sent(actx, send)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			b.log.Warn("legacy: the client did not answer an input request in time", "method", method, "timeout", b.opts.InputTimeout)
			return nil, &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("The client did not answer %s within %v", method, b.opts.InputTimeout)}
		}
		return nil, b.clientFailed(method, err)
	}
	if !b.core.ValidInputResponse(method, raw) {
		msg := "Invalid " + method + " result from the client"
		if method == mcp.MethodElicitationCreate {
			msg = `Invalid elicitation answer: the client's result for elicitation/create must have action "accept", "decline" or "cancel", and content an object only with "accept"`
		}
		return nil, &sdkjsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	}
	return raw, nil
}

// unfinishedPages is the error of a request whose URL-mode pages the user
// accepted but did not complete, prompt after prompt, until the round cap:
// -32042 (URLElicitationRequiredError, 2025-11-25) with the pages, so the
// client can show them and call again once they are completed.
func unfinishedPages(accepted map[string]pendingURL) error {
	keys := make([]string, 0, len(accepted))
	for k := range accepted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pages := make([]*sdk.ElicitParams, 0, len(keys))
	for _, k := range keys {
		pu := accepted[k]
		pages = append(pages, &sdk.ElicitParams{Mode: mcp.ElicitationModeURL, Message: pu.message, URL: pu.url, ElicitationID: pu.id})
	}
	e := sdk.URLElicitationRequiredError(pages).(*sdkjsonrpc.Error)
	e.Message = "URL elicitation required: the user accepted but did not complete the page; complete it, then call again"
	return e
}

// actionOf returns the action of an elicitation answer.
func actionOf(raw json.RawMessage) string {
	var a struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(raw, &a)
	return a.Action
}

// clientFailed turns a failed server-to-client request into the error the
// 2025 client gets. An error the client answered with keeps its code and
// its message (made printable and clipped), so the user learns what the
// client itself objected to (go-sdk refuses, with -32602, a form answer
// that fails its own schema check); anything else is -32603.
func (b *bridge) clientFailed(method string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	b.log.Warn("legacy: the client did not answer an input request", "method", method, "err", err)
	var ce *sdkjsonrpc.Error
	if errors.As(err, &ce) {
		if ce.Code == 0 {
			// No code is no JSON-RPC error code (go-sdk sends 0 for a
			// handler's plain Go error): the message is still the client's.
			return &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("The client answered %s with an error: %s", method, clientText(ce.Message))}
		}
		return &sdkjsonrpc.Error{Code: ce.Code, Message: fmt.Sprintf("The client answered %s with error %d: %s", method, ce.Code, clientText(ce.Message))}
	}
	return &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The client did not answer " + method}
}

// maxClientText bounds, in bytes, the client's message quoted back.
const maxClientText = 200

// clientText makes a client's error message fit to quote: every rune that
// is not graphic (controls, bidi overrides, line breaks) becomes a space,
// invalid UTF-8 is dropped, and it is clipped at maxClientText bytes.
func clientText(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsGraphic(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	s = strings.TrimSpace(s)
	if len(s) <= maxClientText {
		return s
	}
	cut := maxClientText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// newElicitationID returns 128 random bits in hex: unique within the
// server, and unguessable, as the client treats it as opaque.
func newElicitationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
