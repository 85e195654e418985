package mcpserver

import "github.com/mcp-elicit/elicit/jsonrpc"

// KeepAlive tells the client, while a handler waits (for a user to finish
// a URL-mode page, say), that the request is still being served, so that
// neither the client nor a proxy between them gives up on a silent
// connection: notifications/progress with progress and message when the
// request carried a progressToken (progress must grow from call to call:
// basic/utilities/progress.mdx), otherwise a keep-alive without a message
// (an SSE comment on Streamable HTTP). On HTTP the first call switches the
// response to an SSE stream, unless the client accepts JSON only; then
// nothing is sent and the response comes when the handler returns.
func (r *Request) KeepAlive(progress float64, message string) error {
	if r.notify == nil {
		return nil
	}
	if r.Meta.ProgressToken != nil {
		return r.Progress(progress, 0, message)
	}
	return r.notify((*jsonrpc.Notification)(nil))
}

// ReportOutcome sets the audit category that Options.Observer receives
// for this round, for a handler that knows better than the answers the
// round carries: a retry replaying a state whose step ended earlier gets
// the recorded outcome (OutcomeDeclined after a decline, say) whatever it
// answers now, and is reported so. Outcomes that are errors
// (OutcomeFault…) are derived from the response and cannot be set.
func (r *Request) ReportOutcome(o Outcome) {
	if answerRank[o] > 0 || o == OutcomeCompleted || o == OutcomeInputRequired {
		r.reported = o
	}
}
