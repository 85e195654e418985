package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// ClientInfo is the clientInfo the checker sends.
var ClientInfo = mcp.Implementation{Name: "elicit-check", Version: "0.1.0"}

// cases are the checks, in the order they run and are reported: each
// with the sentence saying what a safe server does.
var cases = []struct {
	id, expect string
	run        func(c *checker, ctx context.Context) Result
}{
	{CaseCapability, "a client that lacks the mode the tool asks in gets -32021 or an honest refusal (an error, or a question only in declared modes), never a success", (*checker).caseCapability},
	{CaseDecline, "declining ends the call without success, and the server does not keep asking", refusalCase(answerDecline)},
	{CaseCancel, "cancelling ends the call without success, and the server does not keep asking", refusalCase(answerCancel)},
	{CaseStateBitFlip, "a requestState with one character changed is refused (RS-S-03)",
		tamperCase(bitFlips, "the state has no letter or digit to change")},
	{CaseStateTruncated, "a truncated requestState is refused (RS-S-03)",
		tamperCase(truncations, "the state is too short to cut")},
	{CaseStateReencoded, "the same requestState bytes spelled another way (base64 alphabet, padding) are refused: one spelling per state",
		tamperCase(reencodings, "the state has no other spelling (no base64 alphabet or padding marks)")},
	{CaseStateSegments, "a requestState with its segments swapped is refused (RS-S-03)",
		tamperCase(segmentSwaps, "the state has no separated segments")},
	{CaseStatePlaintext, "the requestState is sealed: it does not decode to readable JSON or text and holds neither the token nor the arguments (RS-NOTE-01)", (*checker).casePlaintext},
	{CaseReplayOtherUser, "one user's requestState and answers, replayed under another user's token, are refused (RS-S-05, ELI-S-09)", (*checker).caseOtherUser},
	{CaseReplayChangedArgs, "a requestState replayed with changed arguments is refused or the question asked afresh (RS-S-07)", (*checker).caseChangedArgs},
	{CaseReplayOtherTool, "a requestState replayed against another tool is refused, or that tool asks its own question (RS-S-07)", (*checker).caseOtherTool},
	{CaseResponsesMissing, "a retry without the answers is asked again or refused, never taken as answered (MRTR-S-14)", (*checker).caseMissing},
	{CaseResponsesExtra, "an extra inputResponses entry is ignored (same outcome as without it) or refused (MRTR-S-13)", (*checker).caseExtra},
	{CaseResponsesWrongKey, "answers under keys the server did not issue are not taken as the answers (MRTR-C-05)", (*checker).caseWrongKey},
	{CaseReplayCompleted, "replaying a completed retry gives the same result or a refusal, and no second effect (RS-S-08)", (*checker).caseReplayCompleted},
	{CaseSwappedPending, "two pending operations of one user with their states and answers swapped are refused or asked afresh", (*checker).caseSwapped},
	{CaseFormInvalid, "form answers that break the requested schema (type, bounds, format, enum, required) are refused or asked again (ELI-S-07)", (*checker).caseFormInvalid},
	{CaseFormSecret, "form mode asks for nothing that looks like a password, API key, token or card data (ELI-S-01)", (*checker).caseFormSecret},
	{CaseURLSafe, "URL-mode links are https (http only on loopback), with no userinfo, no credential-looking parameter and none of the token or argument values", (*checker).caseURLSafe},
	{CaseURLNoLogin, "opening the link with no cookies leads to a login (or a refusal), not a signed-in session or a success page (SEC-U-S-04, SEC-U-S-06)", (*checker).caseURLNoLogin},
	{CaseURLUnfinished, "accepting a URL-mode request without finishing the page is not a success: the server asks again or reports it incomplete", (*checker).caseURLUnfinished},
}

// WaitNote is the Config.Progress message before a retry that accepts a
// URL-mode request whose page the checker does not finish.
const WaitNote = "accepting a URL-mode request without finishing its page: a server that holds the retry until the page is done answers after its wait (30 s by default for connect.Step)"

// checker is one run.
type checker struct {
	cfg Config
	// urlKeys are the input request keys the server used for URL mode.
	urlKeys map[string]bool
	a, b    *mcpclient.Client
	full    mcp.ClientCapabilities
	args    json.RawMessage
	tool    *mcp.Tool
	tools   []*mcp.Tool

	first *outcome
	// control is the answer whose genuine retry moved the call on, and
	// controlOut what it got; controlWhy says why there is none.
	control    answerKind
	controlOut *outcome
	controlWhy string
	// tamperAccepted lists the altered states the server accepted, for
	// state-plaintext ("accepted after a modification").
	tamperAccepted []string
	// changedArgs are other valid arguments (the call still asks), for
	// the changed-arguments and swapped-operations cases.
	changedArgs json.RawMessage
	changedWhat string
	changedWhy  string
	// acceptWithheld: the control is not accept because accepting could
	// have completed the tool (Config.AllowEffects false).
	acceptWithheld bool
	// acceptDeferred: accepting completes the tool and Config.AllowEffects
	// allows it; it is sent last (runDeferred), once.
	acceptDeferred bool
	// eff counts what the calls did (the report's Effects), and
	// completedStates the result of each state whose retry completed, so a replay is not counted as another operation.
	eff             *Effects
	completedStates map[string]string
}

// ErrConfig is wrapped by Run's errors about the Config itself.
var ErrConfig = errors.New("check: bad configuration")

// Run checks cfg.Tool on the server at cfg.URL and returns the report.
// An error means no report could be made: a bad Config (ErrConfig), or a
// *StartError — the server unreachable, the token refused (HTTP 401 or
// 403 on discovery, tools/list or the first call), an answer that is not
// MCP, the tool not listed. A server that answers JSON-RPC but does not
// speak 2026-07-28 gets a report whose cases are all "could not test",
// with Report.DiscoveryError set.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	args, err := cfg.check()
	if err != nil {
		return nil, err
	}
	newClient := func(token string) *mcpclient.Client {
		return mcpclient.New(cfg.URL, &mcpclient.Options{HTTPClient: cfg.HTTPClient, Token: token, ClientInfo: ClientInfo, Logger: cfg.Logger})
	}
	c := &checker{cfg: cfg, a: newClient(cfg.Token), args: args,
		full: mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapability{Form: &mcp.Empty{}, URL: &mcp.Empty{}},
			Sampling:    &mcp.SamplingCapability{},
			Roots:       &mcp.RootsCapability{},
		}}
	if cfg.OtherToken != "" {
		c.b = newClient(cfg.OtherToken)
	}
	rep := &Report{URL: cfg.URL, Tool: cfg.Tool, ProtocolVersion: mcp.ProtocolVersion,
		Effects: Effects{Allowed: cfg.AllowEffects, Completed: []string{}}}
	c.eff = &rep.Effects
	if _, err := c.a.Discover(ctx); err != nil {
		if se := c.cfg.startError(mcp.MethodDiscover, err); se != nil {
			return nil, se
		}
		rep.DiscoveryError = clip(c.redact(strings.TrimPrefix(err.Error(), "mcpclient: ")), 200)
		c.allCases(rep, CouldNotTest, "server/discover failed, so the server does not speak MCP "+mcp.ProtocolVersion+" here: "+rep.DiscoveryError)
		return c.finish(rep), nil
	}
	rep.Server = c.a.Server()
	if err := c.findTool(ctx); err != nil {
		return nil, err
	}
	rep.Effects.Annotations = c.tool.Annotations
	if done, err := c.firstCall(ctx, rep); err != nil {
		return nil, err
	} else if done {
		return rep, nil
	}
	c.findControl(ctx)
	c.findChangedArgs(ctx)
	results := make(map[string]Result, len(cases))
	for _, k := range cases {
		if c.acceptDeferred && deferredCases[k.id] {
			continue
		}
		results[k.id] = k.run(c, ctx)
	}
	if c.acceptDeferred {
		results[CaseFormInvalid], results[CaseReplayCompleted] = c.runDeferred(ctx)
	}
	for _, k := range cases {
		res := results[k.id]
		res.ID, res.Expectation = k.id, k.expect
		rep.add(res)
	}
	return c.finish(rep), nil
}

// check refuses a Config no check can start from, sets FetchLinks'
// default, and returns the arguments to call the tool with ({} when none).
func (cfg *Config) check() (json.RawMessage, error) {
	if cfg.URL == "" || cfg.Tool == "" {
		return nil, fmt.Errorf("%w: a URL and a tool are needed", ErrConfig)
	}
	switch cfg.FetchLinks {
	case "":
		cfg.FetchLinks = FetchSafe
	case FetchNever, FetchSafe, FetchAny:
	default:
		return nil, fmt.Errorf("%w: FetchLinks \"%s\" is not never, safe or any", ErrConfig, clipEscape(string(cfg.FetchLinks), 20))
	}
	if len(bytes.TrimSpace(cfg.Args)) == 0 {
		return json.RawMessage("{}"), nil
	}
	var m map[string]any
	if err := json.Unmarshal(cfg.Args, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: the arguments must be a JSON object", ErrConfig)
	}
	return bytes.TrimSpace(cfg.Args), nil
}

// findTool lists the tools and finds the one to check (and the other
// tool, when one is named); a *StartError when it cannot.
func (c *checker) findTool(ctx context.Context) error {
	tools, err := c.a.ListTools(ctx)
	if err != nil {
		if se := c.cfg.startError(mcp.MethodToolsList, err); se != nil {
			return se
		}
		return &StartError{Kind: KindListFailed, Err: err,
			Message: "tools/list failed: " + clipEscape(c.redact(strings.TrimPrefix(err.Error(), "mcpclient: ")), 200)}
	}
	c.tools = tools
	for _, t := range tools {
		if t.Name == c.cfg.Tool {
			c.tool = t
		}
	}
	if c.tool == nil {
		return &StartError{Kind: KindNoTool, Message: "the server lists no tool \"" + clipEscape(c.redact(c.cfg.Tool), 80) + "\""}
	}
	if c.cfg.OtherTool != "" && c.otherTool() == nil {
		return &StartError{Kind: KindNoTool, Message: "no tool \"" + clipEscape(c.redact(c.cfg.OtherTool), 80) + "\" on the server (named as the other tool, --other-tool)"}
	}
	return nil
}

// firstCall makes the first tools/call, which every case builds on. When
// it did not ask for input, no case can run: done is set and rep is
// finished with every case "could not test" or "not applicable". A
// *StartError means the call could not be made at all.
func (c *checker) firstCall(ctx context.Context, rep *Report) (done bool, err error) {
	c.first = c.start(ctx, c.a, c.args, &c.full)
	if c.first.err != nil {
		if se := c.cfg.startError("the first tools/call", c.first.err); se != nil {
			return false, se
		}
	}
	switch {
	case c.first.err != nil || c.first.rpc != nil:
		c.allCases(rep, CouldNotTest, "the first call failed: "+c.first.String())
	case c.first.complete && c.first.isError:
		c.allCases(rep, CouldNotTest, "the first call ended in an error result ("+c.first.String()+"), so the tool asked nothing to check; check the arguments, or call it as a user for which it asks")
	case c.first.complete:
		c.allCases(rep, NotApplicable, "the tool completed without asking for input ("+c.first.String()+"), so nothing can be checked for this user and these arguments; "+
			"check it as a user it still asks, such as a fresh user (another --token; on a demo server any new user name), or with other --args")
	default:
		return false, nil
	}
	c.finish(rep)
	return true, nil
}

// finish redacts the secrets (Config.Redact) from every string of the
// report: the server's text is redacted where it is read (do), before it
// is clipped, and this pass catches what the checker itself wrote.
func (c *checker) finish(rep *Report) *Report {
	rep.URL = c.redact(rep.URL)
	rep.Tool = c.redact(rep.Tool)
	if rep.Server != nil {
		srv := *rep.Server
		for _, f := range []*string{&srv.Name, &srv.Version, &srv.Title, &srv.Description, &srv.WebsiteURL} {
			*f = c.redact(*f)
		}
		rep.Server = &srv
	}
	for i := range rep.Results {
		rep.Results[i].Observed = c.redact(rep.Results[i].Observed)
	}
	for i, t := range rep.Effects.Completed {
		rep.Effects.Completed[i] = c.redact(t)
	}
	return rep
}

// redact is Config.Redact.
func (c *checker) redact(s string) string { return c.cfg.Redact(s) }

func (c *checker) allCases(rep *Report, v Verdict, why string) {
	for _, k := range cases {
		rep.add(Result{ID: k.id, Expectation: k.expect, Observed: why, Verdict: v})
	}
}

// start makes a first call of a new operation.
func (c *checker) start(ctx context.Context, cl *mcpclient.Client, args json.RawMessage, caps *mcp.ClientCapabilities) *outcome {
	return c.do(ctx, call{client: cl, tool: c.cfg.Tool, args: args, caps: caps})
}

// startAsk starts an operation that must ask; the string says why not.
func (c *checker) startAsk(ctx context.Context, args json.RawMessage) (*outcome, string) {
	op := c.start(ctx, c.a, args, &c.full)
	if !op.inputReq || len(op.requests) == 0 {
		return nil, "a fresh call did not ask for input: " + op.String()
	}
	return op, ""
}

// retry sends the retry of op with the given answers and state.
func (c *checker) retry(ctx context.Context, cl *mcpclient.Client, args json.RawMessage, responses map[string]json.RawMessage, state *string) *outcome {
	return c.do(ctx, call{client: cl, tool: c.cfg.Tool, args: args, caps: &c.full, responses: responses, state: state})
}

// genuine is op's retry with the control answers and op's own state.
func (c *checker) genuine(ctx context.Context, op *outcome, args json.RawMessage) *outcome {
	return c.retry(ctx, c.a, args, answers(op, c.control), op.state)
}

// deferredCases need an operation completed with accept; with
// Config.AllowEffects, when accepting completes the tool, they run last
// (runDeferred), so the tool's effect happens once, after every other case
// has had the tool as it was (a draft still unsent, say).
var deferredCases = map[string]bool{CaseFormInvalid: true, CaseReplayCompleted: true}

// findControl finds the answer whose genuine retry moves the call on:
// accept first, then decline, then cancel. Refusals of altered requests
// are evidence only when the unaltered request was accepted. An answer
// that could complete the tool is not tried without Config.AllowEffects;
// with it, such an accept is deferred to the end (runDeferred) and the
// other cases use decline or cancel, as without it.
func (c *checker) findControl(ctx context.Context) {
	var tried []string
	for _, k := range []answerKind{answerGood, answerDecline, answerCancel} {
		if c.withheld(c.first, k) {
			c.acceptWithheld = c.acceptWithheld || k == answerGood
			tried = append(tried, k.String()+" not sent: it could complete the tool (--allow-effects)")
			continue
		}
		if k == answerGood && couldComplete(c.first, k) {
			c.acceptDeferred = true
			tried = append(tried, k.String()+" sent last: it completes the tool")
			continue
		}
		op, why := c.startAsk(ctx, c.args)
		if op == nil {
			c.controlWhy = why
			return
		}
		r := c.retry(ctx, c.a, c.args, answers(op, k), op.state)
		// An accept must move the call on; a decline or cancel may end it
		// in an error result, which is then the outcome to compare with.
		if r.advanced(op) || (k != answerGood && r.complete) {
			c.control, c.controlOut = k, r
			return
		}
		tried = append(tried, k.String()+" → "+r.String())
	}
	c.controlWhy = "no genuine answer moved the call on (" + strings.Join(tried, "; ") + "), so a refusal of an altered retry cannot be told from a normal one"
}

// withheld reports whether answering every request of op with k could
// complete the tool, and Config.AllowEffects does not allow that. Only
// accepting URL-mode requests (consent, not completion) and declining or
// cancelling an elicitation cannot complete a safe server's operation;
// sampling and roots requests get a plain answer whatever k is.
func (c *checker) withheld(op *outcome, k answerKind) bool {
	return !c.cfg.AllowEffects && couldComplete(op, k)
}

// couldComplete reports whether answering every request of op with k
// could complete the tool (see withheld).
func couldComplete(op *outcome, k answerKind) bool {
	elicits, urls := 0, 0
	for _, r := range op.requests {
		switch r.mode() {
		case mcp.ElicitationModeURL:
			elicits++
			urls++
		case mcp.ElicitationModeForm:
			elicits++
		}
	}
	if k == answerGood {
		return urls < len(op.requests)
	}
	return elicits == 0
}

// notRun is the result of a case that needs an operation completed with
// accept, when Config.AllowEffects does not allow one; why says what for.
func (c *checker) notRun(why string) Result {
	return Result{Verdict: NotRun, Observed: "not run without --allow-effects: " + why + ", and accepting would complete " + quoted(c.cfg.Tool, 40) + " with its effect"}
}

// accepted reports whether o moved the call on, or, when the control
// ended in an error result (a decline), is that same result.
func (c *checker) accepted(o, op *outcome) bool {
	ctl := c.controlOut
	return o.err == nil && (o.advanced(op) || (ctl.complete && ctl.isError && o.sameResult(ctl)))
}

// refused reports whether o turned the retry down: a JSON-RPC error, the
// same question again, or an error result other than the control's.
func (c *checker) refused(o, op *outcome) bool {
	return o.rpc != nil || o.sameAsk(op) || (o.complete && o.isError && !o.sameResult(c.controlOut))
}

// attempt is one altered retry and what it got.
type attempt struct {
	what string
	o    *outcome
}

// judge turns altered attempts on op, followed by a genuine control retry,
// into a verdict: any accepted attempt fails; all refused with the control
// accepted passes; anything else could not be tested.
func (c *checker) judge(ctx context.Context, op *outcome, args json.RawMessage, attempts []attempt) Result {
	var seen []string
	for _, at := range attempts {
		if c.accepted(at.o, op) {
			return Result{Verdict: Fail, Observed: at.what + ": accepted, " + at.o.String()}
		}
		if !c.refused(at.o, op) {
			return Result{Verdict: CouldNotTest, Observed: at.what + ": " + at.o.String() + ", neither a refusal nor the control's outcome"}
		}
		seen = append(seen, at.what+": "+at.o.String())
	}
	ctl := c.genuine(ctx, op, args)
	if !c.accepted(ctl, op) {
		return Result{Verdict: CouldNotTest, Observed: strings.Join(seen, "; ") + "; but the genuine retry afterwards was not accepted either (" + ctl.String() + "), so the refusals prove nothing"}
	}
	return Result{Verdict: Pass, Observed: "refused: " + strings.Join(seen, "; ") + "; the genuine retry afterwards: " + ctl.String()}
}

func (c *checker) needControl() (Result, bool) {
	if c.controlOut == nil {
		return Result{Verdict: CouldNotTest, Observed: c.controlWhy}, false
	}
	return Result{}, true
}

// controlledOp starts an operation for a case that needs the control; when
// there is none, or the call did not ask, it returns nil and the case's
// "could not test" result.
func (c *checker) controlledOp(ctx context.Context) (*outcome, Result) {
	if r, ok := c.needControl(); !ok {
		return nil, r
	}
	op, why := c.startAsk(ctx, c.args)
	if op == nil {
		return nil, Result{Verdict: CouldNotTest, Observed: why}
	}
	return op, Result{}
}

// elicitations returns the first round's elicitation requests by mode.
func (c *checker) elicitations(mode string) []string {
	var keys []string
	for _, k := range c.first.keys() {
		if c.first.requests[k].mode() == mode {
			keys = append(keys, k)
		}
	}
	return keys
}

func (c *checker) caseCapability(ctx context.Context) Result {
	modes := map[string]bool{}
	for _, r := range c.first.requests {
		if m := r.mode(); m != "" {
			modes[m] = true
		}
	}
	if len(modes) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks no elicitation (" + c.first.String() + ")"}
	}
	type variant struct {
		what string
		caps mcp.ClientCapabilities
	}
	var vs []variant
	if modes[mcp.ElicitationModeForm] {
		vs = append(vs, variant{`elicitation {"url":{}} (no form)`, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}})
	}
	if modes[mcp.ElicitationModeURL] {
		vs = append(vs, variant{`elicitation {} (form only)`, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	}
	vs = append(vs, variant{"no elicitation capability", mcp.ClientCapabilities{}})
	var seen []string
	for _, v := range vs {
		o := c.start(ctx, c.a, c.args, &v.caps)
		note := v.what + ": " + o.String()
		switch {
		case o.err != nil:
			return Result{Verdict: CouldNotTest, Observed: note}
		case o.rpc != nil && o.rpc.Code == mcp.CodeMissingRequiredClientCapability:
		case o.rpc != nil:
			note += " (a refusal, but not -32021)"
		case o.success():
			return Result{Verdict: Fail, Observed: note + ": a success without the capability"}
		case o.complete:
			note += " (an honest refusal)"
		default:
			for _, k := range o.keys() {
				r := o.requests[k]
				if m := r.mode(); (m == mcp.ElicitationModeForm && !v.caps.ElicitationForm()) || (m == mcp.ElicitationModeURL && !v.caps.ElicitationURL()) {
					return Result{Verdict: Fail, Observed: note + ": asked in an undeclared mode (CAP-S-01)"}
				}
			}
			note += " (only declared modes)"
		}
		seen = append(seen, note)
	}
	return Result{Verdict: Pass, Observed: strings.Join(seen, "; ")}
}

// maxReasks is how many times the checker declines or cancels again
// before calling the server's asking endless.
const maxReasks = 3

func (c *checker) caseRefusal(ctx context.Context, k answerKind) Result {
	if len(c.elicitations(mcp.ElicitationModeForm))+len(c.elicitations(mcp.ElicitationModeURL)) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks no elicitation"}
	}
	op, why := c.startAsk(ctx, c.args)
	if op == nil {
		return Result{Verdict: CouldNotTest, Observed: why}
	}
	cur := op
	for round := 0; ; round++ {
		o := c.retry(ctx, c.a, c.args, answers(cur, k), cur.state)
		switch {
		case o.err != nil:
			return Result{Verdict: CouldNotTest, Observed: o.String()}
		case o.success():
			return Result{Verdict: Fail, Observed: k.String() + " answered: " + o.String() + ": a success"}
		case o.rpc != nil || o.complete:
			obs := k.String() + ": " + o.String()
			if round > 0 {
				obs += fmt.Sprintf(" (after asking again %d time(s))", round)
			}
			return Result{Verdict: Pass, Observed: obs}
		case !o.sameAsk(op):
			return Result{Verdict: Fail, Observed: k.String() + ": the call went on to " + o.String()}
		case round+1 >= maxReasks:
			return Result{Verdict: Fail, Observed: fmt.Sprintf("%s: asked again %d times in a row (%s)", k, round+1, o.String())}
		}
		cur = o
	}
}

func (c *checker) caseTamper(ctx context.Context, alter func(string) []tamper, none string) Result {
	if c.first.state == nil {
		return Result{Verdict: NotApplicable, Observed: "the server sent no requestState"}
	}
	if len(alter(*c.first.state)) == 0 {
		return Result{Verdict: NotApplicable, Observed: none}
	}
	op, res := c.controlledOp(ctx)
	if op == nil {
		return res
	}
	if op.state == nil {
		return Result{Verdict: CouldNotTest, Observed: "a fresh call sent no requestState: " + op.String()}
	}
	var attempts []attempt
	for _, t := range alter(*op.state) {
		st := t.state
		attempts = append(attempts, attempt{t.what, c.retry(ctx, c.a, c.args, answers(op, c.control), &st)})
	}
	if len(attempts) == 0 {
		return Result{Verdict: NotApplicable, Observed: none}
	}
	res = c.judge(ctx, op, c.args, attempts)
	if res.Verdict == Fail {
		c.tamperAccepted = append(c.tamperAccepted, res.Observed)
	}
	return res
}

// refusalCase is the decline or the cancel case.
func refusalCase(k answerKind) func(*checker, context.Context) Result {
	return func(c *checker, ctx context.Context) Result { return c.caseRefusal(ctx, k) }
}

// tamperCase is a state case: alter gives the altered states, none says
// why there are none.
func tamperCase(alter func(string) []tamper, none string) func(*checker, context.Context) Result {
	return func(c *checker, ctx context.Context) Result { return c.caseTamper(ctx, alter, none) }
}

// argValues returns the string and number values of the arguments, for
// spotting them in states and URLs (at least 3 characters).
func (c *checker) argValues() []string {
	var m map[string]any
	_ = json.Unmarshal(c.args, &m)
	var out []string
	for _, k := range sortedKeys(m) {
		var s string
		switch v := m[k].(type) {
		case string:
			s = v
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if len(s) >= 3 {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func (c *checker) casePlaintext(ctx context.Context) Result {
	if c.first.state == nil {
		return Result{Verdict: NotApplicable, Observed: "the server sent no requestState"}
	}
	s := *c.first.state
	var found []string
	var jsonDoc []byte
	if rawText(s) {
		found = append(found, "is readable text ("+clip(c.redact(s), 80)+")")
	}
	for i, d := range decodings(s) {
		if kind, ok := readable(d); ok && (i > 0 || kind == "JSON") { // the state itself is text
			found = append(found, "decodes to readable "+kind+" ("+clip(c.redact(string(d)), 80)+")")
			if kind == "JSON" && jsonDoc == nil && reencodeLike(s, d) != "" {
				jsonDoc = d
			}
			break
		}
	}
	for _, d := range decodings(s) {
		for _, v := range append([]string{c.cfg.Token, c.cfg.Tool}, c.argValues()...) {
			if len(v) >= 3 && bytes.Contains(d, []byte(v)) && !slices.Contains(found, "holds "+quoted(c.redact(v), 80)+" verbatim") {
				found = append(found, "holds "+quoted(c.redact(v), 80)+" verbatim")
			}
		}
	}
	if len(c.tamperAccepted) > 0 {
		found = append(found, "was accepted after a modification (see the state cases above)")
	}
	if len(found) == 0 {
		return c.sealedOnEvidence(ctx, s)
	}
	obs := "the state " + strings.Join(found, "; ")
	if jsonDoc != nil {
		obs += "; " + c.forge(ctx, jsonDoc)
	}
	return Result{Verdict: Fail, Observed: obs}
}

// minSealedBytes is the least a sealed state can decode to: an
// authenticator (an HMAC or an AEAD tag) alone is 16 bytes.
const minSealedBytes = 16

// sealedOnEvidence judges a state that reads as nothing: sealed only if it
// is long enough to carry an authenticator and differs between two
// operations and between two users, as a state bound to its operation
// must; otherwise it may be a constant or a bare handle, and the replay
// cases say whether the server binds it.
func (c *checker) sealedOnEvidence(ctx context.Context, s string) Result {
	if n := decodedLen(s); n < minSealedBytes {
		return Result{Verdict: CouldNotTest, Observed: fmt.Sprintf("the state %s is %d bytes decoded, too short to carry an authenticator (%d bytes at least): it is a constant or a handle, not a sealed state; whether the server binds it is for the replay cases",
			quoted(c.redact(s), 40), n, minSealedBytes)}
	}
	op := c.start(ctx, c.a, c.args, &c.full)
	switch {
	case op.state == nil:
		return Result{Verdict: CouldNotTest, Observed: "a second call, to compare its state with the first, sent none: " + op.String()}
	case *op.state == s:
		return Result{Verdict: CouldNotTest, Observed: fmt.Sprintf("two operations got the same %d-character state: it carries nothing of its operation, so nothing shows it sealed; whether the server binds it is for the replay cases", len(s))}
	}
	other := ""
	if c.b != nil {
		ob := c.start(ctx, c.b, c.args, &c.full)
		switch {
		case ob.state != nil && (*ob.state == s || *ob.state == *op.state):
			return Result{Verdict: CouldNotTest, Observed: fmt.Sprintf("two users got the same %d-character state: it carries nothing of its user, so nothing shows it sealed; whether the server binds it is for replay-other-user", len(s))}
		case ob.state != nil:
			other = " and for another user"
		}
	}
	return Result{Verdict: Pass, Observed: fmt.Sprintf("the %d-character state decodes to no readable JSON or text, holds neither the token, the tool name nor an argument value, is long enough for an authenticator and differs for another operation%s", len(s), other)}
}

// forge edits a readable JSON state — the token replaced by the other
// user's, or else one string value changed — re-encodes it and sends it,
// to show whether an edited state is accepted.
func (c *checker) forge(ctx context.Context, doc []byte) string {
	if c.controlOut == nil {
		return "an edited state was not sent: " + c.controlWhy
	}
	op, why := c.startAsk(ctx, c.args)
	if op == nil || op.state == nil {
		return "an edited state was not sent: " + why
	}
	d := decodedJSON(*op.state)
	if d == nil {
		return "an edited state was not sent: the new state did not decode the same way"
	}
	cl, how := c.a, ""
	var edited []byte
	if c.b != nil && c.cfg.Token != "" && bytes.Contains(d, []byte(strconv.Quote(c.cfg.Token))) {
		edited = bytes.ReplaceAll(d, []byte(strconv.Quote(c.cfg.Token)), []byte(strconv.Quote(c.cfg.OtherToken)))
		cl, how = c.b, "the token inside replaced by the other user's and sent as the other user"
	} else {
		edited = bytes.Replace(d, []byte(`":"`), []byte(`":"x`), 1)
		how = "one string value changed"
	}
	st := reencodeLike(*op.state, edited)
	o := c.retry(ctx, cl, c.args, answers(op, c.control), &st)
	if c.accepted(o, op) {
		return "an edited state (" + how + ") was ACCEPTED: " + o.String()
	}
	return "an edited state (" + how + ") was refused: " + o.String()
}

// decodedJSON returns the JSON a base64 state decodes to, or nil.
func decodedJSON(s string) []byte {
	for _, d := range decodings(s)[1:] {
		if kind, ok := readable(d); ok && kind == "JSON" && reencodeLike(s, d) != "" {
			return d
		}
	}
	return nil
}

func (c *checker) caseOtherUser(ctx context.Context) Result {
	if c.first.state == nil {
		return Result{Verdict: NotApplicable, Observed: "the server sent no requestState"}
	}
	if c.b == nil {
		return Result{Verdict: NotApplicable, Observed: "no --other-token was given"}
	}
	op, res := c.controlledOp(ctx)
	if op == nil {
		return res
	}
	o := c.retry(ctx, c.b, c.args, answers(op, c.control), op.state)
	var ae *mcpclient.AuthError
	if errors.As(o.err, &ae) {
		return Result{Verdict: CouldNotTest, Observed: fmt.Sprintf("the other token was refused (HTTP %d)", ae.StatusCode)}
	}
	return c.judge(ctx, op, c.args, []attempt{{"the other user's retry with this user's state and answers", o}})
}

func (c *checker) caseChangedArgs(ctx context.Context) Result {
	if c.first.state == nil {
		return Result{Verdict: NotApplicable, Observed: "the server sent no requestState"}
	}
	if c.changedArgs == nil {
		return Result{Verdict: c.changedVerdict(), Observed: c.changedWhy}
	}
	op, res := c.controlledOp(ctx)
	if op == nil {
		return res
	}
	o := c.retry(ctx, c.a, c.changedArgs, answers(op, c.control), op.state)
	return c.judge(ctx, op, c.args, []attempt{{"the retry with " + c.changedWhat, o}})
}

func (c *checker) changedVerdict() Verdict {
	if strings.HasPrefix(c.changedWhy, "the tool takes no") {
		return NotApplicable
	}
	return CouldNotTest
}

// findChangedArgs looks for other arguments with which the tool still
// asks: an argument changed within its schema (another enum member, a
// digit changed, a prefix added, a number moved by one, a boolean
// flipped).
func (c *checker) findChangedArgs(ctx context.Context) {
	var args map[string]any
	_ = json.Unmarshal(c.args, &args)
	if len(args) == 0 {
		c.changedWhy = "the tool takes no arguments here, so no request can differ only in its arguments"
		return
	}
	var schema struct {
		Properties map[string]struct {
			Enum []any `json:"enum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(c.tool.InputSchema, &schema)
	names := sortedKeys(args)
	sort.SliceStable(names, func(i, j int) bool {
		return len(schema.Properties[names[i]].Enum) > len(schema.Properties[names[j]].Enum)
	})
	var tried []string
	for _, name := range names {
		v, ok := changeValue(args[name], schema.Properties[name].Enum)
		if !ok {
			continue
		}
		m := make(map[string]any, len(args))
		for k, x := range args {
			m[k] = x
		}
		m[name] = v
		b := mustJSON(m)
		op := c.start(ctx, c.a, b, &c.full)
		what := fmt.Sprintf("%s changed to %s", quoted(name, 40), clip(string(mustJSON(v)), 60))
		if op.inputReq && len(op.requests) > 0 {
			c.changedArgs, c.changedWhat = b, what
			return
		}
		tried = append(tried, what+": "+op.String())
		if len(tried) == 4 {
			break
		}
	}
	c.changedWhy = "no changed arguments made the tool ask too (" + strings.Join(tried, "; ") + ")"
	if len(tried) == 0 {
		c.changedWhy = "the tool takes no argument the checker can change"
	}
}

func changeValue(v any, enum []any) (any, bool) {
	for _, e := range enum {
		if e != v {
			return e, true
		}
	}
	switch x := v.(type) {
	case string:
		for i := len(x) - 1; i >= 0; i-- {
			if d := x[i]; d >= '0' && d <= '9' {
				n := d + 1
				if d == '9' {
					n = '8'
				}
				return x[:i] + string(n) + x[i+1:], true
			}
		}
		return "x" + x, true
	case float64:
		return x + 1, true
	case bool:
		return !x, true
	}
	return nil, false
}

func (c *checker) caseOtherTool(ctx context.Context) Result {
	if c.first.state == nil {
		return Result{Verdict: NotApplicable, Observed: "the server sent no requestState"}
	}
	if r, ok := c.needControl(); !ok {
		return r
	}
	var argsMap map[string]any
	_ = json.Unmarshal(c.args, &argsMap)
	if c.cfg.OtherTool == c.cfg.Tool {
		return Result{Verdict: CouldNotTest, Observed: "the other tool named is the checked tool itself; name another with --other-tool"}
	}
	if t := c.otherTool(); t != nil {
		if missing := missingArgs(t, argsMap); len(missing) > 0 {
			return Result{Verdict: CouldNotTest, Observed: fmt.Sprintf("the other tool %s requires the arguments %s, which the arguments given (--args) lack: it is called with them when it requires any, with {} otherwise",
				quoted(t.Name, 40), quoted(strings.Join(missing, ", "), 120))}
		}
	}
	var notes []string
	for _, t := range c.otherTools(argsMap) {
		args := json.RawMessage("{}")
		if required(t) != nil {
			args = c.args
		}
		base := c.do(ctx, call{client: c.a, tool: t.Name, args: args, caps: &c.full})
		if base.err != nil || base.rpc != nil || base.isError {
			notes = append(notes, clip(t.Name, 40)+" without state: "+base.String())
			continue
		}
		op, why := c.startAsk(ctx, c.args)
		if op == nil {
			return Result{Verdict: CouldNotTest, Observed: why}
		}
		o := c.do(ctx, call{client: c.a, tool: t.Name, args: args, caps: &c.full, responses: answers(op, c.control), state: op.state})
		what := fmt.Sprintf("this tool's state and answers sent to %s (which, without them, answers %s)", quoted(t.Name, 40), base.String())
		switch {
		case o.err != nil:
			return Result{Verdict: CouldNotTest, Observed: what + ": " + o.String()}
		case o.rpc != nil || (base.inputReq && o.sameAsk(base)):
			ctl := c.genuine(ctx, op, c.args)
			if !c.accepted(ctl, op) {
				return Result{Verdict: CouldNotTest, Observed: what + ": " + o.String() + "; but the genuine retry afterwards was not accepted either (" + ctl.String() + ")"}
			}
			return Result{Verdict: Pass, Observed: what + ": " + o.String()}
		case base.inputReq:
			return Result{Verdict: Fail, Observed: what + ": " + o.String() + ": the other tool took them"}
		}
		// It completes without input either way: no evidence; try another.
		notes = append(notes, clip(t.Name, 40)+" completes with or without the state ("+o.String()+")")
	}
	if len(notes) == 0 {
		return Result{Verdict: CouldNotTest, Observed: "no other tool is marked read-only or non-destructive and callable with no arguments or with these (name one with --other-tool)"}
	}
	return Result{Verdict: CouldNotTest, Observed: "no other tool showed whether it takes this state: " + strings.Join(notes, "; ")}
}

// required returns a tool's required argument names.
func required(t *mcp.Tool) []string {
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.InputSchema, &s)
	return s.Required
}

// otherTool returns the tool named by Config.OtherTool, nil when none is
// named or the server does not list it.
func (c *checker) otherTool() *mcp.Tool {
	for _, t := range c.tools {
		if c.cfg.OtherTool != "" && t.Name == c.cfg.OtherTool {
			return t
		}
	}
	return nil
}

// missingArgs returns t's required arguments that args lacks.
func missingArgs(t *mcp.Tool, args map[string]any) []string {
	var out []string
	for _, r := range required(t) {
		if _, has := args[r]; !has {
			out = append(out, r)
		}
	}
	return out
}

// otherTools lists the tools other than the checked one that can be
// called with no arguments or with the checked tool's (all their required
// arguments present), read-only ones first.
func (c *checker) otherTools(args map[string]any) []*mcp.Tool {
	var out []*mcp.Tool
	for _, t := range c.tools {
		if t.Name == c.cfg.Tool {
			continue
		}
		if c.cfg.OtherTool != "" && t.Name != c.cfg.OtherTool {
			continue
		}
		// Calling a tool the user did not name is only safe when it says
		// it changes nothing.
		ok := c.cfg.OtherTool != "" || readOnly(t) || notDestructive(t)
		if ok && len(missingArgs(t, args)) == 0 {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return readOnly(out[i]) && !readOnly(out[j]) })
	if len(out) > 4 {
		out = out[:4]
	}
	return out
}

func notDestructive(t *mcp.Tool) bool {
	return t.Annotations != nil && t.Annotations.DestructiveHint != nil && !*t.Annotations.DestructiveHint
}

func readOnly(t *mcp.Tool) bool {
	return t.Annotations != nil && t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
}

func (c *checker) caseMissing(ctx context.Context) Result {
	op, why := c.startAsk(ctx, c.args)
	if op == nil {
		return Result{Verdict: CouldNotTest, Observed: why}
	}
	o := c.retry(ctx, c.a, c.args, nil, op.state)
	switch {
	case o.err != nil:
		return Result{Verdict: CouldNotTest, Observed: o.String()}
	case o.advanced(op):
		return Result{Verdict: Fail, Observed: "the retry without inputResponses got " + o.String()}
	case o.rpc != nil || o.sameAsk(op) || o.complete:
		return Result{Verdict: Pass, Observed: "the retry without inputResponses got " + o.String()}
	}
	return Result{Verdict: CouldNotTest, Observed: o.String()}
}

// extraKey is the key of the answer the server never asked for.
const extraKey = "elicit_check_extra"

func (c *checker) caseExtra(ctx context.Context) Result {
	op, res := c.controlledOp(ctx)
	if op == nil {
		return res
	}
	resp := answers(op, c.control)
	resp[extraKey] = answer(op.requests[op.keys()[0]], answerGood)
	o := c.retry(ctx, c.a, c.args, resp, op.state)
	what := fmt.Sprintf("the %s answers plus an accept under %q", c.control, extraKey)
	switch {
	case o.err != nil:
		return Result{Verdict: CouldNotTest, Observed: o.String()}
	case o.class() == c.controlOut.class():
		return Result{Verdict: Pass, Observed: what + ": " + o.String() + ", as without it"}
	case o.rpc != nil:
		return Result{Verdict: Pass, Observed: what + ": refused, " + o.String()}
	case o.success() && !c.controlOut.success():
		return Result{Verdict: Fail, Observed: what + ": " + o.String() + ": the extra answer was used"}
	}
	return Result{Verdict: CouldNotTest, Observed: what + ": " + o.String() + ", unlike the control (" + c.controlOut.String() + ")"}
}

func (c *checker) caseWrongKey(ctx context.Context) Result {
	op, res := c.controlledOp(ctx)
	if op == nil {
		return res
	}
	good := answers(op, c.control)
	wrong := make(map[string]json.RawMessage, len(good))
	for k, v := range good {
		wrong[k+"_x"] = v
	}
	o := c.retry(ctx, c.a, c.args, wrong, op.state)
	return c.judge(ctx, op, c.args, []attempt{{fmt.Sprintf("the %s answers under keys with \"_x\" appended", c.control), o}})
}

func (c *checker) caseReplayCompleted(ctx context.Context) Result {
	if c.acceptWithheld {
		return c.notRun("it replays an operation completed with accept, to see that the effect does not happen twice")
	}
	op, res := c.controlledOp(ctx)
	if op == nil {
		return res
	}
	return c.replayCompleted(ctx, op, c.genuine(ctx, op, c.args))
}

// runDeferred runs, last, the cases that need an operation completed with
// accept when accepting completes the tool (Config.AllowEffects): first
// the invalid form answers (a safe server refuses them: no effect), then
// one genuine accept — the tool's one effect, which is also the evidence
// that a valid answer moves the call on — and the replay of that very
// operation.
func (c *checker) runDeferred(ctx context.Context) (formInvalid, replay Result) {
	formInvalid = c.caseFormInvalid(ctx)
	op, why := c.startAsk(ctx, c.args)
	if op == nil {
		r := Result{Verdict: CouldNotTest, Observed: why}
		if formInvalid.Verdict == Pass {
			formInvalid = r
		}
		return formInvalid, r
	}
	r1 := c.retry(ctx, c.a, c.args, answers(op, answerGood), op.state)
	if !r1.advanced(op) && formInvalid.Verdict == Pass {
		formInvalid = Result{Verdict: CouldNotTest, Observed: "no genuine answer moved the call on with accept (" + r1.String() + "), so a refusal of an invalid form answer proves nothing"}
	}
	c.control, c.controlOut = answerGood, r1
	return formInvalid, c.replayCompleted(ctx, op, r1)
}

// replayCompleted replays op, whose genuine retry got r1, and judges the
// replay.
func (c *checker) replayCompleted(ctx context.Context, op, r1 *outcome) Result {
	if !r1.complete {
		return Result{Verdict: CouldNotTest, Observed: "the genuine retry did not complete (" + r1.String() + "); the checker cannot finish the operation"}
	}
	r2 := c.genuine(ctx, op, c.args)
	obs := "first: " + r1.String() + "; replayed: " + r2.String()
	note := ""
	if c.control != answerGood {
		note = fmt.Sprintf(" (the operation was completed with %s: the checker cannot complete it with accept)", c.control)
	}
	switch {
	case r2.err != nil:
		return Result{Verdict: CouldNotTest, Observed: obs}
	case r2.rpc != nil || r2.sameAsk(op):
		return Result{Verdict: Pass, Observed: obs + ": the replay was refused" + note}
	case r2.class() == r1.class() && r2.text == r1.text:
		return Result{Verdict: Pass, Observed: obs + ": the same result" + note}
	case r2.complete:
		return Result{Verdict: Fail, Observed: obs + ": a different result, a second execution" + note}
	}
	return Result{Verdict: CouldNotTest, Observed: obs}
}

func (c *checker) caseSwapped(ctx context.Context) Result {
	if c.changedArgs == nil {
		return Result{Verdict: c.changedVerdict(), Observed: "two pending operations need different arguments: " + c.changedWhy}
	}
	if r, ok := c.needControl(); !ok {
		return r
	}
	opA, why := c.startAsk(ctx, c.args)
	if opA == nil {
		return Result{Verdict: CouldNotTest, Observed: why}
	}
	opB, why := c.startAsk(ctx, c.changedArgs)
	if opB == nil {
		return Result{Verdict: CouldNotTest, Observed: why}
	}
	oA := c.retry(ctx, c.a, c.args, answers(opB, c.control), opB.state)
	oB := c.retry(ctx, c.a, c.changedArgs, answers(opA, c.control), opA.state)
	rA := c.judge(ctx, opA, c.args, []attempt{{"operation A retried with B's state and answers", oA}})
	if rA.Verdict != Pass {
		return rA
	}
	rB := c.judge(ctx, opB, c.changedArgs, []attempt{{"operation B (" + c.changedWhat + ") retried with A's state and answers", oB}})
	if rB.Verdict != Pass {
		return rB
	}
	return Result{Verdict: Pass, Observed: rA.Observed + " | " + rB.Observed}
}
