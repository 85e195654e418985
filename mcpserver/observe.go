package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/reqstate"
)

// Outcome is the audit category of one round of an MRTR operation. It
// tells a user's decision (declined, cancelled) apart from a refused
// request (expired, invalid_state, capability_missing) and from a server
// or integration failure (fault).
type Outcome string

// Outcomes, in the order Observe derives them (the first that applies);
// a task run stopped before it settled is cancelled, lease_lost,
// interrupted or expired, whatever else applies:
const (
	// OutcomeCapabilityMissing: -32021, the request lacked a client
	// capability the reply needed (CAP-S-03).
	OutcomeCapabilityMissing Outcome = "capability_missing"
	// OutcomeExpired: the requestState was authentic and this user's but
	// past its expiry (reqstate.ReasonExpired) — refused with -32602, or
	// served as a fresh call under HandlerOptions.RestartStale; or, for a
	// task run, the task passed its TTL and was deleted
	// (Server.SweepTasks) while its handler ran.
	OutcomeExpired Outcome = "expired"
	// OutcomeInvalidState: the requestState was refused for any other
	// reason (tampered, another key, another user, tool or arguments).
	OutcomeInvalidState Outcome = "invalid_state"
	// OutcomeFault: the round ended in any other JSON-RPC error — a
	// handler error or panic (-32603, retryable or not), an unknown tool,
	// bad arguments, a malformed answer, too many rounds. Round.Code holds
	// the error code.
	OutcomeFault Outcome = "fault"
	// OutcomeDeclined: an elicitation answered in this round was declined.
	OutcomeDeclined Outcome = "declined"
	// OutcomeCancelled: an elicitation answered in this round was
	// cancelled (and none declined); or, for a task run, tasks/cancel
	// ended the task while its handler ran.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeLeaseLost is for a task run only: another run took the task
	// over while this one ran (its instance stalled past
	// TaskOptions.Lease, and a tasks/get elsewhere found the lease run
	// out), so this run was stopped, or what it returned was dropped.
	// No one cancelled it: the task goes on, or ended, under the other
	// run, whose rounds are reported as usual.
	OutcomeLeaseLost Outcome = "lease_lost"
	// OutcomeInterrupted is for a task run only: its instance shut down
	// while it ran (Server.StopTasks), so the run was stopped and its
	// lease released. No one cancelled it: the task goes on under the
	// instance that takes it over at its next tasks/get.
	OutcomeInterrupted Outcome = "interrupted"
	// OutcomePending: a URL-mode elicitation was accepted but the handler
	// asked the same key again: the user consented to open the page but
	// has not finished there yet.
	OutcomePending Outcome = "pending"
	// OutcomeAccepted: an elicitation answered in this round was accepted
	// with valid content, whatever the reply (interim or complete).
	OutcomeAccepted Outcome = "accepted"
	// OutcomeInputRequired: no answer was decided in this round (a first
	// call, missing or invalid answers) and the reply asks for input (an
	// input_required result, or a task moved to input_required).
	OutcomeInputRequired Outcome = "input_required"
	// OutcomeTask: no answer was decided in this round and the call was
	// answered with a task (CreateTaskResult, SEP-2663); the task's runs
	// are reported with the same TaskID.
	OutcomeTask Outcome = "task"
	// OutcomeCompleted: no answer was decided in this round and the reply
	// is a complete result (isError included: that is the tool's failure,
	// reported to the model, not the protocol's).
	OutcomeCompleted Outcome = "completed"
	// OutcomeIdentityMismatch is never derived here: the server's pages
	// report it when a browser signed in as another user opens a flow
	// (connect.Options.OnIdentityMismatch). It is listed so that one type
	// covers an audit trail.
	OutcomeIdentityMismatch Outcome = "identity_mismatch"
)

// Outcomes returns every Outcome, for metrics that pre-declare their
// labels. Each call returns a new slice: a caller may change or keep it
// without changing what another caller gets.
func Outcomes() []Outcome {
	return []Outcome{OutcomeCompleted, OutcomeInputRequired, OutcomeTask, OutcomeAccepted, OutcomeDeclined, OutcomeCancelled,
		OutcomeLeaseLost, OutcomeInterrupted, OutcomePending, OutcomeExpired, OutcomeInvalidState, OutcomeCapabilityMissing, OutcomeIdentityMismatch, OutcomeFault}
}

// Round is what the server reports about one round (one tools/call,
// prompts/get or resources/read request, or one run of a task's handler)
// to Options.Observer. It has no
// field for arguments, answers, messages or state on purpose: an audit
// trail built from it cannot leak form content or secrets.
type Round struct {
	// Method is tools/call, prompts/get or resources/read.
	Method string
	// Name is the tool or prompt name, or the resource URI without its
	// query and fragment; a name longer than 128 bytes (an unknown tool's,
	// say) is cut there at a rune boundary and marked "…(N bytes)".
	Name string
	// Principal is the authenticated user ("" without authentication).
	Principal string
	// OperationID is the operation's id (32 hex characters); "" when no
	// operation is known: the requestState was refused, or the request
	// failed before a handler was found (unknown tool, bad params).
	OperationID string
	// Round is 0 on a first call and n on the retry after the n-th interim
	// result; -1 when no operation is known (see OperationID).
	Round int
	// Outcome is the round's category.
	Outcome Outcome
	// Code is the JSON-RPC error code when the round ended in an error, 0
	// otherwise.
	Code int
	// Restart is set when a stale state was served as a fresh call
	// (HandlerOptions.RestartStale).
	Restart RestartReason
	// TaskID is the task (tasks extension) the round belongs to: set on
	// the call answered with a task (OutcomeTask) and on every run of its
	// handler in the background, which is reported as a tools/call round
	// with the task's operation id and round (the first run may be
	// reported before the call that started it); "" otherwise.
	TaskID string
	// Latency is the time Serve took, handler included; for a task run,
	// the time the run took.
	Latency time.Duration
}

// Observer receives one Round per round; see Options.Observer.
type Observer func(ctx context.Context, r *Round)

// roundInfo collects what serveMRTR learns about a round for Observe.
type roundInfo struct {
	start    time.Time
	opID     string
	round    int
	refused  reqstate.Reason // the state's refusal reason, when refused
	restart  RestartReason
	answered Outcome // declined, cancelled, pending, accepted or ""
	taskID   string
	forced   Outcome // set: the outcome, whatever the response (a task run stopped before it settled)
}

// answerRank orders the decisions an answer can carry, strongest last.
var answerRank = map[Outcome]int{OutcomeAccepted: 1, OutcomePending: 2, OutcomeCancelled: 3, OutcomeDeclined: 4}

// summarize records the strongest decision among the answers this round
// carried: declined > cancelled > pending > accepted. Only elicitations
// the previous round issued count (MRTR-S-13), and invalid answers count
// as undecided.
func (ri *roundInfo) summarize(req *Request, reply Reply) {
	if req.reported != "" {
		ri.answered = req.reported
		return
	}
	reasked, _ := reply.(*InputRequired)
	for k, is := range req.issued {
		if is.kind != kindForm && is.kind != kindURL {
			continue
		}
		var o Outcome
		switch req.Elicitation(k).Outcome {
		case elicit.Declined:
			o = OutcomeDeclined
		case elicit.Cancelled:
			o = OutcomeCancelled
		case elicit.Accepted:
			o = OutcomeAccepted
			if is.kind == kindURL && reasked != nil && reasked.issued[k].kind == kindURL {
				o = OutcomePending
			}
		default:
			continue
		}
		if answerRank[o] > answerRank[ri.answered] {
			ri.answered = o
		}
	}
}

// outcome derives the round's category from what was learnt and the
// response (see the Outcome constants for the order).
func (ri *roundInfo) outcome(resp *jsonrpc.Response) (Outcome, int) {
	if ri.forced != "" {
		return ri.forced, 0
	}
	if e := resp.Error; e != nil {
		switch {
		case e.Code == mcp.CodeMissingRequiredClientCapability:
			return OutcomeCapabilityMissing, e.Code
		case ri.refused == reqstate.ReasonExpired:
			return OutcomeExpired, e.Code
		case ri.refused != "":
			return OutcomeInvalidState, e.Code
		}
		return OutcomeFault, e.Code
	}
	if ri.restart == RestartExpired {
		return OutcomeExpired, 0
	}
	if ri.answered != "" {
		return ri.answered, 0
	}
	switch resp.Result.(type) {
	case *mcp.InputRequiredResult:
		return OutcomeInputRequired, 0
	case *mcp.CreateTaskResult:
		return OutcomeTask, 0
	}
	return OutcomeCompleted, 0
}

// observe reports the round; a panicking Observer is logged, never
// propagated to the client.
func (s *Server) observe(ctx context.Context, in *transport.Incoming, principal string, ri *roundInfo, resp *jsonrpc.Response) {
	name := in.Name
	if in.Method == mcp.MethodResourcesRead {
		name, _, _ = strings.Cut(name, "?")
		name, _, _ = strings.Cut(name, "#")
	}
	r := &Round{Method: in.Method, Name: clipName(name), Principal: principal, OperationID: ri.opID, Round: ri.round,
		Restart: ri.restart, TaskID: ri.taskID, Latency: time.Since(ri.start)}
	r.Outcome, r.Code = ri.outcome(resp)
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("mcpserver: Observer panicked", "panic", fmt.Sprint(p))
		}
	}()
	s.opts.Observer(ctx, r)
}

// maxEchoedName bounds, in bytes, a caller-supplied name (tool, prompt,
// resource URI) that the server repeats in an error message or a Round: a
// name is not checked against any length limit before lookup, so an
// unknown one could otherwise be as long as the request body.
const maxEchoedName = 128

// clipName returns name as it may be echoed: unchanged when it fits
// maxEchoedName bytes and holds only graphic runes; else with every
// non-graphic rune (controls, bidi overrides and other format characters,
// line separators) written as \uXXXX (\UXXXXXXXX above U+FFFF), a byte
// that is not UTF-8 as \xNN and a backslash as \\, so that a log line or
// an error cannot be made to look like something else; and, when that is
// longer than maxEchoedName bytes, cut at a rune or escape boundary and
// followed by a marker with the whole name's length ("…(5000 bytes)").
func clipName(name string) string {
	if len(name) <= maxEchoedName && !strings.ContainsFunc(name, needsEscape) && utf8.ValidString(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		var esc string
		switch {
		case r == utf8.RuneError && size == 1:
			esc = fmt.Sprintf("\\x%02x", name[i])
		case r == '\\':
			esc = `\\`
		case needsEscape(r) && r > 0xffff:
			esc = fmt.Sprintf("\\U%08x", r)
		case needsEscape(r):
			esc = fmt.Sprintf("\\u%04x", r)
		default:
			esc = name[i : i+size]
		}
		if b.Len()+len(esc) > maxEchoedName {
			return fmt.Sprintf("%s…(%d bytes)", b.String(), len(name))
		}
		b.WriteString(esc)
		i += size
	}
	return b.String()
}

// needsEscape reports the runes clipName escapes: the backslash (its
// escape character) and every rune that is not graphic.
func needsEscape(r rune) bool { return r == '\\' || !unicode.IsGraphic(r) }
