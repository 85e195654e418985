package mcpserver

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"maps"
	"slices"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/reqstate"
)

// Reply is a handler's answer: a complete result or an *InputRequired.
type Reply interface{ isReply() }

type toolReply struct{ r *mcp.CallToolResult }
type promptReply struct{ r *mcp.GetPromptResult }
type resourceReply struct{ r *mcp.ReadResourceResult }

func (toolReply) isReply()      {}
func (promptReply) isReply()    {}
func (resourceReply) isReply()  {}
func (*InputRequired) isReply() {}

// ToolResult is a complete tools/call result.
func ToolResult(r *mcp.CallToolResult) Reply { return toolReply{r} }

// Text is a complete tools/call result with one text block.
func Text(text string) Reply {
	return toolReply{&mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}}
}

// ToolError is a tools/call result with isError set: a failure of the tool
// (bad values, refused, upstream down), not of the protocol (TOOL-S-02).
func ToolError(text string) Reply {
	return toolReply{&mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}, IsError: true}}
}

// PromptResult is a complete prompts/get result.
func PromptResult(r *mcp.GetPromptResult) Reply { return promptReply{r} }

// ResourceResult is a complete resources/read result; zero caching hints
// are filled from Options.ReadCache.
func ResourceResult(r *mcp.ReadResourceResult) Reply { return resourceReply{r} }

// Input kinds remembered in the sealed state, so that each answer is decoded
// as the result of the request issued under its key (docs/protocol.md §InputRequests and InputResponses).
const (
	kindForm     byte = 1
	kindURL      byte = 2
	kindSampling byte = 3
	kindRoots    byte = 4
)

type issued struct {
	kind   byte
	reasks byte            // how often this key was asked again after an invalid answer
	schema json.RawMessage // form mode only
	parsed *elicit.Schema
	// wire is, in a task, the key the question went out under: the
	// handler's key the first time, another one when the task used that
	// key before (taskKeys). "" in MRTR, where it is the handler's key.
	wire string
}

// MaxReasks is how often the library lets a handler ask the same form
// question again after an invalid answer in one operation; the next invalid
// answer ends the operation (see InputRequired).
const MaxReasks = 2

// InputRequired is an interim result: input requests for the client and
// application state that the library seals into requestState. Build it
// with Ask. The zero value asks nothing and only carries state ("come back
// later", MRTR-S-07 is met by the sealed state the library always adds).
//
// When a handler asks a key again that it asked in the previous round, the
// library applies the rules of repeated prompting (ELICIT-ASK-01, ELICIT-ASK-02, ELI-S-08):
//
//   - after an invalid form answer (Request.Elicitation reads Invalid), the
//     question goes out again with the problem appended to its message, at
//     most MaxReasks times per key and operation; past that the operation
//     ends with an isError tools/call result (a -32602 error for
//     prompts/get and resources/read), and the handler's reply is dropped;
//   - after a decline or a cancel, asking the same key again in the same
//     operation is refused as a handler bug (-32603, logged): a refusal is
//     not to be met with insistence;
//   - after an accepted or missing answer, the key may be asked again
//     freely (MRTR-S-14).
type InputRequired struct {
	keys     []string
	requests map[string]mcp.InputRequest
	issued   map[string]issued
	state    []byte
	status   string // the task's statusMessage while it waits (WithStatusMessage)
	err      error
}

// Ask starts an InputRequired.
func Ask() *InputRequired {
	return &InputRequired{requests: map[string]mcp.InputRequest{}, issued: map[string]issued{}}
}

func (a *InputRequired) add(key string, r mcp.InputRequest, is issued) *InputRequired {
	if a.requests == nil {
		a.requests, a.issued = map[string]mcp.InputRequest{}, map[string]issued{}
	}
	if key == "" || len(key) > 255 {
		a.err = errors.Join(a.err, fmt.Errorf("input request key %q must be 1 to 255 bytes", key))
		return a
	}
	if _, dup := a.requests[key]; dup {
		a.err = errors.Join(a.err, fmt.Errorf("input request key %q used twice (MRTR-S-05)", key))
		return a
	}
	a.keys = append(a.keys, key)
	a.requests[key] = r
	a.issued[key] = is
	return a
}

// ElicitForm asks the user to fill a flat form (form mode) whose
// requestedSchema is raw JSON. The schema must pass elicit.ParseSchema:
// primitives only (ELI-S-06), and nothing that looks like a secret
// (ELI-S-01); otherwise the handler's reply fails with -32603, the reason
// is logged and nothing is sent. ElicitFormSchema takes a schema built with
// elicit.FormSchema instead.
func (a *InputRequired) ElicitForm(key, message string, requestedSchema json.RawMessage) *InputRequired {
	parsed, err := elicit.ParseSchema(requestedSchema)
	if err != nil {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: %w", key, err))
	}
	if message == "" {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: message is required (ELI-S-03)", key))
	}
	return a.add(key, mcp.InputRequest{Method: mcp.MethodElicitationCreate,
		Params: &mcp.ElicitRequestParams{Mode: mcp.ElicitationModeForm, Message: message, RequestedSchema: requestedSchema}},
		issued{kind: kindForm, schema: requestedSchema, parsed: parsed})
}

// ElicitFormSchema asks the user to fill the form schema built with
// elicit.FormSchema (or parsed with elicit.ParseSchema), in form mode. A
// nil schema or an empty message makes the handler's reply fail with
// -32603 (logged); nothing is sent.
func (a *InputRequired) ElicitFormSchema(key, message string, schema *elicit.Schema) *InputRequired {
	if schema == nil {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: nil form schema", key))
	}
	if message == "" {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: message is required (ELI-S-03)", key))
	}
	raw := schema.JSON()
	return a.add(key, mcp.InputRequest{Method: mcp.MethodElicitationCreate,
		Params: &mcp.ElicitRequestParams{Mode: mcp.ElicitationModeForm, Message: message, RequestedSchema: raw}},
		issued{kind: kindForm, schema: raw, parsed: schema})
}

// ElicitURL asks the user to open url, the server's own page, for an
// interaction that must not pass through the client (URL mode). The URL
// must pass elicit.CheckURL. On the retry, accept means only that the user
// consented to open it (ELI-RA-01); the handler learns completion from its
// own store.
func (a *InputRequired) ElicitURL(key, message, url string) *InputRequired {
	if err := elicit.CheckURL(url); err != nil {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: %w", key, err))
	}
	if message == "" {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: message is required (ELI-S-03)", key))
	}
	return a.add(key, mcp.InputRequest{Method: mcp.MethodElicitationCreate,
		Params: &mcp.ElicitRequestParams{Mode: mcp.ElicitationModeURL, Message: message, URL: url}},
		issued{kind: kindURL})
}

// Sample asks for a model completion (sampling/createMessage; deprecated
// feature, SAMP-01). MaxTokens must be positive.
func (a *InputRequired) Sample(key string, p *mcp.CreateMessageRequestParams) *InputRequired {
	if p == nil || p.MaxTokens <= 0 || len(p.Messages) == 0 {
		a.err = errors.Join(a.err, fmt.Errorf("input %q: sampling needs messages and maxTokens > 0", key))
	}
	return a.add(key, mcp.InputRequest{Method: mcp.MethodSamplingCreate, Params: p}, issued{kind: kindSampling})
}

// ListRoots asks for the client's roots (roots/list; deprecated feature).
func (a *InputRequired) ListRoots(key string) *InputRequired {
	return a.add(key, mcp.InputRequest{Method: mcp.MethodRootsList, Params: struct{}{}}, issued{kind: kindRoots})
}

// WithState attaches application state; it is sealed (encrypted and bound
// to this user, request and expiry) and handed back as Request.State on
// the retry.
func (a *InputRequired) WithState(state []byte) *InputRequired {
	a.state = state
	return a
}

// WithStatusMessage sets the statusMessage a task shows while it waits
// for these answers (SEP-2663 Task.statusMessage, e.g. "Waiting for the
// recipient"), cleaned as Request.SetStatusMessage cleans it. Without it
// the task moves to input_required with no message: the one the run set
// while working no longer says what the task is doing. A call that is
// not a task has no status: there it changes nothing.
func (a *InputRequired) WithStatusMessage(msg string) *InputRequired {
	a.status = msg
	return a
}

// requiredCapabilities returns what the requests need that caps lacks.
func (a *InputRequired) requiredCapabilities(caps *mcp.ClientCapabilities) (mcp.ClientCapabilities, bool) {
	var need mcp.ClientCapabilities
	missing := false
	for _, k := range a.keys {
		switch a.issued[k].kind {
		case kindForm:
			if !caps.ElicitationForm() {
				if need.Elicitation == nil {
					need.Elicitation = &mcp.ElicitationCapability{}
				}
				need.Elicitation.Form, missing = &mcp.Empty{}, true
			}
		case kindURL:
			if !caps.ElicitationURL() {
				if need.Elicitation == nil {
					need.Elicitation = &mcp.ElicitationCapability{}
				}
				need.Elicitation.URL, missing = &mcp.Empty{}, true
			}
		case kindSampling:
			if !caps.HasSampling() {
				need.Sampling, missing = &mcp.SamplingCapability{}, true
			}
		case kindRoots:
			if !caps.HasRoots() {
				need.Roots, missing = &mcp.RootsCapability{}, true
			}
		}
	}
	return need, missing
}

// MissingCapabilityMessage is the message of every -32021 error the
// library sends: the capability gate before a question, Request.Require
// (connect.Step's check) and MissingCapability with no message of its own.
const MissingCapabilityMessage = "Missing required client capability"

// MissingCapability returns the -32021 error naming what the request
// needs (CAP-S-03). The HTTP binding answers it with status 400. message
// "" means MissingCapabilityMessage, which clients and users then see the
// same from every tool; give another only to say something it does not.
func MissingCapability(need mcp.ClientCapabilities, message string) *jsonrpc.Error {
	if message == "" {
		message = MissingCapabilityMessage
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapability, Message: message,
		Data: mcp.MissingCapabilityData{RequiredCapabilities: need}}
}

// errInvalidState is the single message a client sees for any bad requestState.
var errInvalidState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: reqstate.ErrInvalid.Error()}

// RestartReason says why a retry was served as a fresh call (Request.Restart).
type RestartReason string

// Restart reasons.
const (
	// RestartExpired: the requestState had expired (reqstate.ReasonExpired).
	RestartExpired RestartReason = "expired"
	// RestartArgumentsChanged: the requestState was sealed for other
	// arguments (reqstate.ReasonArguments), e.g. another report period.
	RestartArgumentsChanged RestartReason = "arguments_changed"
)

// Request is one tools/call, prompts/get or resources/read as a handler sees it.
type Request struct {
	// Method is the MCP method; Name the tool or prompt name, or the resource URI.
	Method, Name string
	// Principal is the authenticated user's id, auth.Principal.ID: a user
	// name, or issuer#subject for a token ("" without authentication).
	Principal string
	// Meta is the request's _meta; capabilities are per request (META-S-02).
	Meta *mcp.RequestMeta
	// Arguments is the raw arguments object (nil when absent).
	Arguments json.RawMessage
	// TemplateVars holds the variables of a matched resource template.
	TemplateVars map[string]string
	// Round is 0 on a first call and n on the retry after the n-th interim result.
	Round int
	// OperationID identifies the logical operation across rounds (hex, 32
	// characters); a fresh one is made on the first call.
	OperationID string
	// State is the application state of the previous round (nil on a first call).
	State []byte
	// Restart is set when the handler was registered with
	// HandlerOptions.RestartStale and this call carried a requestState
	// that was authentic and sealed for this user and target but had
	// expired or was made for other arguments: the call is then served as a
	// fresh first call (Round 0, no State, a new OperationID, answers
	// ignored), and Restart says why, so the handler can say that the
	// earlier answer was not used. Empty otherwise.
	Restart RestartReason
	// TaskID is the task's id when the handler runs inside a task of the
	// tasks extension (RunAsTask), "" in a call.
	TaskID string

	taskAllowed bool // see TaskAllowed
	opID        [16]byte
	responses   map[string]json.RawMessage
	issued      map[string]issued
	notify      transport.Notifier
	reported    Outcome     // ReportOutcome
	taskStatus  *taskStatus // inside a task: SetStatusMessage (taskstatus.go)
}

// Capabilities returns the client capabilities declared on this request.
func (r *Request) Capabilities() *mcp.ClientCapabilities { return &r.Meta.ClientCapabilities }

// Require returns nil when the request declared need, else the -32021 error
// to return from the handler before doing anything (CAP-S-03). Extensions
// in need count as declared when the request's _meta lists them with an
// object (mcp.ClientCapabilities.HasExtension); their settings are not
// compared.
func (r *Request) Require(need mcp.ClientCapabilities) error {
	c := r.Capabilities()
	var missing mcp.ClientCapabilities
	lack := false
	if e := need.Elicitation; e != nil {
		m := &mcp.ElicitationCapability{}
		if (e.Form != nil || e.URL == nil) && !c.ElicitationForm() {
			m.Form, lack = &mcp.Empty{}, true
		}
		if e.URL != nil && !c.ElicitationURL() {
			m.URL, lack = &mcp.Empty{}, true
		}
		if m.Form != nil || m.URL != nil {
			missing.Elicitation = m
		}
	}
	if need.Sampling != nil && !c.HasSampling() {
		missing.Sampling, lack = &mcp.SamplingCapability{}, true
	}
	if need.Roots != nil && !c.HasRoots() {
		missing.Roots, lack = &mcp.RootsCapability{}, true
	}
	for id, v := range need.Extensions {
		if !c.HasExtension(id) {
			if missing.Extensions == nil {
				missing.Extensions = map[string]json.RawMessage{}
			}
			missing.Extensions[id], lack = v, true
		}
	}
	if !lack {
		return nil
	}
	return MissingCapability(missing, "")
}

// Elicitation returns the answer to the elicitation issued under key in
// the previous round. Answers are only read on a retry whose sealed state
// shows that this key was asked, so an answer the server never asked for
// reads as Missing (MRTR-S-13). An accepted form answer is validated
// against the schema that was asked (ELI-S-07): keys the schema does not
// name are dropped, and an answer that does not fit reads as Invalid with
// Problem saying what was wrong; asking the key again then carries that
// problem to the user (see InputRequired). Decline and cancel are never
// validated. For a form built with elicit.FormFor[T], elicit.Decode[T]
// reads the answer as a T.
func (r *Request) Elicitation(key string) elicit.Answer {
	is, ok := r.issued[key]
	if !ok || (is.kind != kindForm && is.kind != kindURL) {
		return elicit.Answer{Outcome: elicit.Missing}
	}
	if is.kind == kindForm && is.parsed == nil {
		parsed, err := elicit.ParseSchemaForAnswers(is.schema)
		if err != nil {
			// The sealed state is ours, so only a bug gets here; never read
			// the answer as URL-mode consent.
			return elicit.Answer{Outcome: elicit.Invalid, Problem: "the question's schema could not be read back"}
		}
		is.parsed = parsed
		r.issued[key] = is
	}
	return elicit.DecodeAnswer(r.responses[key], is.parsed)
}

// Sampling returns the answer to the sampling request issued under key,
// and whether there is a well-formed one.
func (r *Request) Sampling(key string) (*mcp.CreateMessageResult, bool) {
	if is, ok := r.issued[key]; !ok || is.kind != kindSampling {
		return nil, false
	}
	var res mcp.CreateMessageResult
	if err := jsonv2.Unmarshal(r.responses[key], &res); err != nil || res.Role == "" || len(res.Content) == 0 {
		return nil, false
	}
	return &res, true
}

// Roots returns the answer to the roots request issued under key, and
// whether there is a well-formed one.
func (r *Request) Roots(key string) (*mcp.ListRootsResult, bool) {
	if is, ok := r.issued[key]; !ok || is.kind != kindRoots {
		return nil, false
	}
	var res mcp.ListRootsResult
	if err := jsonv2.Unmarshal(r.responses[key], &res); err != nil || res.Roots == nil {
		return nil, false
	}
	return &res, true
}

// Progress sends notifications/progress when the request carried a
// progressToken; otherwise it does nothing. On HTTP the first call switches
// the response to an SSE stream. Inside a task (Request.TaskID set) there
// is no request to notify: the progress becomes the task's statusMessage
// instead, as SetStatusMessage sets it ("message (progress/total)").
func (r *Request) Progress(progress, total float64, message string) error {
	if r.taskStatus != nil {
		return r.taskStatus.progress(progress, total, message)
	}
	if r.notify == nil || r.Meta.ProgressToken == nil {
		return nil
	}
	return r.notify(&jsonrpc.Notification{Method: mcp.NotificationProgress,
		Params: &mcp.ProgressParams{ProgressToken: r.Meta.ProgressToken, Progress: progress, Total: total, Message: message}})
}

var logLevels = map[string]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7}

// Log sends notifications/message at level when the request asked for
// logging at that level or below with _meta logLevel; without it nothing is
// sent (META-S-04).
func (r *Request) Log(level string, data any) error {
	want, ok := logLevels[r.Meta.LogLevel]
	got, ok2 := logLevels[level]
	if r.notify == nil || !ok || !ok2 || got < want {
		return nil
	}
	return r.notify(&jsonrpc.Notification{Method: mcp.NotificationMessage, Params: map[string]any{"level": level, "data": data}})
}

// BindArguments decodes the arguments into v (absent arguments decode as
// {}). Member names match exactly, and a member v does not have, a
// repeated member or a value of the wrong type is a -32602 error naming
// the member, to return as is. A typed tool (AddTool) needs none of this:
// its handler gets the arguments decoded and checked against its schema.
func (r *Request) BindArguments(v any) error {
	raw := r.Arguments
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	return bindStrict(raw, v)
}

// call is one round of tools/call, prompts/get or resources/read being
// served: the parsed request, who sent it, and the registration it reaches.
type call struct {
	in        *transport.Incoming
	principal string
	notify    transport.Notifier
	h         Handler
	opts      HandlerOptions
	vars      map[string]string // a matched resource template's variables
	// taskAllowed: the handler may return RunAsTask (Request.TaskAllowed).
	taskAllowed bool
	ri          *roundInfo // what Observe will need; nil when not observed
	scratch     roundInfo  // ri when not observed
	// binding is set by bind, when a state is opened or sealed; the
	// argument digest is paid for only then.
	binding reqstate.Binding
}

// bind computes the binding a requestState is opened and sealed with:
// this user, method, target and arguments (RS-S-05).
func (c *call) bind() error {
	digest, err := reqstate.DigestArguments(c.in.Arguments)
	if err != nil {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: arguments are not valid JSON")
	}
	c.binding = reqstate.Binding{Principal: c.principal, Method: c.in.Method, Name: c.in.Name, ArgsDigest: digest}
	return nil
}

// serveMRTR serves one round (basic/patterns/mrtr.mdx): a first call
// starts an operation, a retry resumes the one its requestState names;
// the handler runs from the top; its reply becomes the complete result or
// the next input_required.
func (s *Server) serveMRTR(ctx context.Context, c *call) (any, error) {
	if c.ri == nil {
		c.ri = &c.scratch
	}
	in := c.in
	req := &Request{Method: in.Method, Name: in.Name, Principal: c.principal, Meta: in.Meta, Arguments: in.Arguments,
		TemplateVars: c.vars, notify: c.notify, taskAllowed: c.taskAllowed}
	if in.RequestState == nil {
		req.opID = newOperationID()
	} else if err := s.resume(c, req); err != nil {
		return nil, err
	}
	req.OperationID = hex.EncodeToString(req.opID[:])
	c.ri.opID, c.ri.round = req.OperationID, req.Round
	reply, err := c.h(ctx, req)
	if err != nil {
		return nil, err
	}
	if c.ri.start != (time.Time{}) {
		c.ri.summarize(req, reply)
	}
	return s.finish(ctx, c, req, reply)
}

// resume opens a retry's requestState for this user, method, target and
// arguments and hands the handler what earlier rounds sealed: the round,
// the operation, the application state, and the answers to the questions
// that were asked (MRTR-S-13). A state that does not open is refused with
// one message (-32602, RS-S-06, RS-S-07) unless restart allows a fresh call.
func (s *Server) resume(c *call, req *Request) error {
	if err := c.bind(); err != nil {
		return err
	}
	claims, err := s.sealer.Open(*c.in.RequestState, c.binding)
	if err != nil {
		return s.restart(c, req, err)
	}
	c.ri.opID, c.ri.round = hex.EncodeToString(claims.OperationID[:]), int(claims.Round)
	if int(claims.Round) >= s.maxRounds {
		s.log.Warn("mcpserver: too many rounds", "method", c.in.Method, "name", c.in.Name, "round", claims.Round)
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Too many rounds for one request")
	}
	iss, state, ok := decodePayload(claims.Payload)
	if !ok {
		s.log.Error("mcpserver: unreadable sealed payload", "method", c.in.Method, "name", c.in.Name)
		return errInvalidState
	}
	req.Round, req.opID, req.State, req.issued = int(claims.Round), claims.OperationID, state, iss
	req.responses = c.in.InputResponses
	return checkResponses(iss, c.in.InputResponses)
}

// restart decides about a requestState that did not open. reqstate checks
// principal, method and target before expiry and arguments, so an expired
// state or one made for other arguments is an authentic state of this user
// for this target: with HandlerOptions.RestartStale it is served as a
// fresh call, which gives nothing a call without state would not. Anything
// else is refused.
func (s *Server) restart(c *call, req *Request, openErr error) error {
	reason := reqstate.Reason("unknown")
	var re *reqstate.Error
	if errors.As(openErr, &re) {
		reason = re.Reason
	}
	switch {
	case c.opts.RestartStale && reason == reqstate.ReasonExpired:
		req.Restart = RestartExpired
	case c.opts.RestartStale && reason == reqstate.ReasonArguments:
		req.Restart = RestartArgumentsChanged
	default:
		c.ri.refused = reason
		s.log.Warn("mcpserver: requestState refused", "reason", string(reason), "method", c.in.Method, "name", c.in.Name, "principal", c.principal)
		return errInvalidState
	}
	c.ri.restart = req.Restart
	s.log.Info("mcpserver: stale requestState, serving a fresh call", "reason", string(reason), "method", c.in.Method, "name", c.in.Name, "principal", c.principal)
	req.opID = newOperationID()
	return nil
}

// finish turns the handler's reply into the round's result: the next
// input_required, or the complete result of the method that was called.
// A reply of another method's kind is a handler bug (-32603).
func (s *Server) finish(ctx context.Context, c *call, req *Request, reply Reply) (any, error) {
	method := c.in.Method
	switch r := reply.(type) {
	case *InputRequired:
		if c.binding.Method == "" {
			if err := c.bind(); err != nil {
				return nil, err
			}
		}
		return s.inputRequired(c.in, req, c.binding, r)
	case taskReply:
		if req.TaskAllowed() {
			return s.startTask(ctx, c, req)
		}
	case toolReply:
		if method == mcp.MethodToolsCall && r.r != nil {
			return s.toolResult(r.r), nil
		}
	case promptReply:
		if method == mcp.MethodPromptsGet && r.r != nil {
			return s.promptResult(r.r), nil
		}
	case resourceReply:
		if method == mcp.MethodResourcesRead && r.r != nil {
			return s.resourceResult(c.in, r.r), nil
		}
	}
	return nil, fmt.Errorf("handler for %s %q returned %T, which does not answer this method", method, c.in.Name, reply)
}

// Complete results carry resultType "complete" (MRTR-S-15), empty lists
// rather than null, and the server's identity in _meta (META-S-03).

func (s *Server) toolResult(r *mcp.CallToolResult) *mcp.CallToolResult {
	res := *r
	res.ResultType = mcp.ResultTypeComplete
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	res.Meta = mergeMeta(res.Meta, s.serverMeta())
	return &res
}

func (s *Server) promptResult(r *mcp.GetPromptResult) *mcp.GetPromptResult {
	res := *r
	res.ResultType = mcp.ResultTypeComplete
	if res.Messages == nil {
		res.Messages = []mcp.PromptMessage{}
	}
	res.Meta = mergeMeta(res.Meta, s.serverMeta())
	return &res
}

// resourceResult also fills the caching hints: Options.ReadCache when the
// handler set none, and never cacheable for a retry (MRTR-C-09).
func (s *Server) resourceResult(in *transport.Incoming, r *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	res := *r
	res.ResultType = mcp.ResultTypeComplete
	if res.CacheScope == "" {
		res.TTLMs, res.CacheScope = ttlMs(s.opts.ReadCache.TTL), s.opts.ReadCache.Scope
	}
	if in.RequestState != nil || in.InputResponses != nil {
		res.TTLMs, res.CacheScope = 0, mcp.CacheScopePrivate
	}
	if res.Contents == nil {
		res.Contents = []mcp.ResourceContents{}
	}
	res.Meta = mergeMeta(res.Meta, s.serverMeta())
	return &res
}

func mergeMeta(m, server mcp.ResultMeta) mcp.ResultMeta {
	if m == nil {
		return server
	}
	out := make(mcp.ResultMeta, len(m)+len(server))
	for k, v := range server {
		out[k] = v
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *Server) inputRequired(in *transport.Incoming, req *Request, binding reqstate.Binding, a *InputRequired) (any, error) {
	if a.err != nil {
		return nil, fmt.Errorf("invalid input requests: %w", a.err)
	}
	// MRTR-S-08 / CAP-S-01: never ask for what this request did not declare.
	if need, missing := a.requiredCapabilities(req.Capabilities()); missing {
		return nil, MissingCapability(need, "")
	}
	if stop, err := s.applyReaskRules(in, req, a); stop != nil || err != nil {
		return stop, err
	}
	payload := encodePayload(a)
	tok, err := s.sealer.Seal(&reqstate.Claims{Binding: binding, OperationID: req.opID, Round: uint32(req.Round + 1), Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("sealing requestState: %w", err)
	}
	res := &mcp.InputRequiredResult{ResultType: mcp.ResultTypeInputRequired, RequestState: tok, Meta: s.serverMeta()}
	if len(a.requests) > 0 {
		res.InputRequests = a.requests
	}
	return res, nil
}

// applyReaskRules enforces the rules of repeated prompting on the keys a
// reply asks again (see InputRequired): it counts re-asks after invalid
// answers and appends the problem to the message, refuses re-asks after a
// decline or cancel, and past MaxReasks returns the result that ends the
// operation instead.
func (s *Server) applyReaskRules(in *transport.Incoming, req *Request, a *InputRequired) (any, error) {
	for _, k := range a.keys {
		prev, asked := req.issued[k]
		cur := a.issued[k]
		if !asked || (prev.kind != kindForm && prev.kind != kindURL) || cur.kind != prev.kind {
			continue
		}
		ans := req.Elicitation(k)
		switch ans.Outcome {
		case elicit.Declined, elicit.Cancelled:
			return nil, fmt.Errorf("handler asked %q again after the user %s it (ELICIT-ASK-01: no repeated prompting after a refusal)", k, ans.Outcome)
		case elicit.Invalid:
			if int(prev.reasks) >= MaxReasks {
				s.log.Info("mcpserver: answer still invalid after the last correction", "method", in.Method, "name", in.Name, "key", k, "reasks", prev.reasks)
				return s.tooManyCorrections(in, k, ans.Problem)
			}
			cur.reasks = prev.reasks + 1
			if p, ok := a.requests[k].Params.(*mcp.ElicitRequestParams); ok {
				np := *p
				np.Message = p.Message + "\n\nYour previous answer was not accepted: " + ans.Problem + ". Please correct it."
				a.requests[k] = mcp.InputRequest{Method: a.requests[k].Method, Params: &np}
			}
		default:
			cur.reasks = prev.reasks
		}
		a.issued[k] = cur
	}
	return nil, nil
}

// tooManyCorrections ends an operation whose answer to key stayed invalid.
// It does not claim that nothing happened: only the handler knows.
func (s *Server) tooManyCorrections(in *transport.Incoming, key, problem string) (any, error) {
	text := fmt.Sprintf("Stopped: the answer to %q was still not valid after %d corrections (%s). Make a new request to start over.", key, MaxReasks, problem)
	if in.Method != mcp.MethodToolsCall {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "%s", text)
	}
	return &mcp.CallToolResult{ResultType: mcp.ResultTypeComplete, Content: []mcp.Content{mcp.TextContent(text)}, IsError: true, Meta: s.serverMeta()}, nil
}

// Payload layout: uvarint(n) then n × (uvarint(len key) key kindByte
// [uvarint(len schema) schema] [uvarint(len wire) wire]) then the
// application state. kindByte holds the kind in its low nibble, the
// re-ask count in bits 4-6, and in bit 7 whether the wire key follows
// (tasks only), so states sealed before re-asks were counted still read
// (count 0). An entry of kind kindUsed is no question: its key is one a
// task has used on the wire (tasks only).
func encodePayload(a *InputRequired) []byte { return encodeAsked(a.issued, a.state) }

// encodeAsked is encodePayload of the questions issued and the state.
func encodeAsked(issued map[string]issued, state []byte) []byte {
	return encodeTaskAsked(issued, nil, state)
}

const (
	// kindUsed marks a payload entry that names a key a task has used.
	kindUsed byte = 0x0f
	// flagWire marks a payload entry followed by its key on the wire.
	flagWire byte = 0x80
)

// encodeTaskAsked is encodeAsked with the wire keys a task has used.
func encodeTaskAsked(issued map[string]issued, used map[string]bool, state []byte) []byte {
	keys := slices.Sorted(maps.Keys(issued))
	usedKeys := slices.Sorted(maps.Keys(used))
	n := 2 + len(state)
	for _, k := range keys {
		n += 2 + len(k) + 1 + len(issued[k].schema) + 2 + len(issued[k].wire) + 2
	}
	for _, k := range usedKeys {
		n += 2 + len(k) + 1
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(keys)+len(usedKeys)))
	for _, k := range keys {
		is := issued[k]
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		kb := is.kind | is.reasks<<4
		if is.wire != "" {
			kb |= flagWire
		}
		b = append(b, kb)
		if is.kind == kindForm {
			b = binary.AppendUvarint(b, uint64(len(is.schema)))
			b = append(b, is.schema...)
		}
		if is.wire != "" {
			b = binary.AppendUvarint(b, uint64(len(is.wire)))
			b = append(b, is.wire...)
		}
	}
	for _, k := range usedKeys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = append(b, kindUsed)
	}
	return append(b, state...)
}

func decodePayload(b []byte) (map[string]issued, []byte, bool) {
	iss, _, state, ok := decodeTaskPayload(b)
	return iss, state, ok
}

// maxPayloadEntries bounds the entries of a payload: questions and the
// keys a task has used (Options.MaxRounds rounds of them).
const maxPayloadEntries = 1 << 14

// decodeTaskPayload is decodePayload with the wire keys a task has used.
func decodeTaskPayload(b []byte) (map[string]issued, map[string]bool, []byte, bool) {
	readBytes := func() ([]byte, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, false
		}
		v := b[n : n+int(l)]
		b = b[n+int(l):]
		return v, true
	}
	count, n := binary.Uvarint(b)
	if n <= 0 || count > maxPayloadEntries {
		return nil, nil, nil, false
	}
	b = b[n:]
	iss := make(map[string]issued, min(count, 64))
	var used map[string]bool
	for i := uint64(0); i < count; i++ {
		k, ok := readBytes()
		if !ok || len(b) < 1 {
			return nil, nil, nil, false
		}
		kb := b[0]
		b = b[1:]
		if kb&0x0f == kindUsed {
			if kb != kindUsed {
				return nil, nil, nil, false
			}
			if used == nil {
				used = map[string]bool{}
			}
			used[string(k)] = true
			continue
		}
		is := issued{kind: kb & 0x0f, reasks: kb >> 4 & 0x07}
		if is.kind == kindForm {
			if is.schema, ok = readBytes(); !ok {
				return nil, nil, nil, false
			}
		}
		if kb&flagWire != 0 {
			w, ok := readBytes()
			if !ok || len(w) == 0 {
				return nil, nil, nil, false
			}
			is.wire = string(w)
		}
		iss[string(k)] = is
	}
	var state []byte
	if len(b) > 0 {
		state = b
	}
	return iss, used, state, true
}

// checkResponses refuses, with -32602, an answer to a request this server
// issued that is not the result type of that request (MRTR-S-11,
// MRTR-S-12): a client bug must surface, not read as "no answer". Entries
// under keys the server did not ask are ignored (MRTR-S-13), and so are null
// entries. A well-formed form answer whose content does not fit the schema
// is not refused here: the handler reads it as Invalid and asks again.
// validResult reports whether raw is a valid result of an input request
// of kind.
func validResult(kind byte, raw json.RawMessage) bool { return resultProblem(kind, raw) == "" }

// resultProblem says why raw is not a valid result of an input request of
// kind, "" when it is one.
func resultProblem(kind byte, raw json.RawMessage) string {
	switch kind {
	case kindForm, kindURL:
		if a := elicit.DecodeAnswer(raw, nil); a.Outcome == elicit.Invalid {
			return a.Problem
		}
	case kindSampling:
		var res mcp.CreateMessageResult
		if jsonv2.Unmarshal(raw, &res) != nil || res.Role == "" || len(res.Content) == 0 || res.Model == "" {
			return "a sampling result needs role, content and model"
		}
	case kindRoots:
		var res mcp.ListRootsResult
		if jsonv2.Unmarshal(raw, &res) != nil || res.Roots == nil {
			return "a roots result needs a roots array"
		}
	}
	return ""
}

// validInputResponse reports whether raw is a valid result of an input
// request of method (elicitation/create, sampling/createMessage,
// roots/list): what the server checks of each inputResponses entry before
// the handler runs (an invalid one is refused with -32602).
func validInputResponse(method string, raw json.RawMessage) bool {
	switch method {
	case mcp.MethodElicitationCreate:
		return validResult(kindForm, raw)
	case mcp.MethodSamplingCreate:
		return validResult(kindSampling, raw)
	case mcp.MethodRootsList:
		return validResult(kindRoots, raw)
	}
	return true
}

func checkResponses(issued map[string]issued, responses map[string]json.RawMessage) error {
	for key, is := range issued {
		raw, ok := responses[key]
		if !ok || len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if problem := resultProblem(is.kind, raw); problem != "" {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: inputResponses[%q] is not a valid result of the request issued under that key: %s", key, problem)
		}
	}
	return nil
}
