package mcpclient

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcp-elicit/elicit/mcp"
)

// PageWait follows the retries of one call that carry an accepted
// URL-mode answer. In URL mode accept means consent, not completion, and
// a server may hold such a retry open until the user has finished the
// page (connect.Step does, sending progress while it waits); a host shows
// that it is waiting and lets the user give up (Cancel). Get one with
// WithPageWait. It is safe for concurrent use.
type PageWait struct {
	mu        sync.Mutex
	n         int                // held retries begun so far
	abort     context.CancelFunc // the one in flight; nil when none
	cancelled bool               // Cancel aborted the one in flight
}

type pageWaitKey struct{}

// WithPageWait returns ctx carrying a new PageWait, for one CallTool,
// GetPrompt or ReadResource call (the input loop follows it; the *Once
// methods do not).
func WithPageWait(ctx context.Context) (context.Context, *PageWait) {
	w := &PageWait{}
	return context.WithValue(ctx, pageWaitKey{}, w), w
}

// Waiting returns the number (1, 2, …) of the retry carrying an accepted
// URL-mode answer that is in flight now, or 0 when there is none.
func (w *PageWait) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abort == nil {
		return 0
	}
	return w.n
}

// Cancel withdraws the user's accept while such a retry is in flight: the
// retry is aborted and the same round is sent again with every accepted
// URL-mode answer turned into cancel, so the server learns that the user
// gave up rather than seeing the connection drop (the step then closes
// its flow); the call ends with the server's answer to that. It reports
// whether a retry was in flight; otherwise it does nothing.
func (w *PageWait) Cancel() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abort == nil || w.cancelled {
		return false
	}
	w.cancelled = true
	w.abort()
	return true
}

// begin marks a held retry in flight; end clears it and reports whether
// Cancel aborted it.
func (w *PageWait) begin(abort context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	w.abort, w.cancelled = abort, false
}

func (w *PageWait) end() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abort = nil
	return w.cancelled
}

// round sends one round of op, like once; when ctx carries a PageWait and
// retry accepts a URL-mode request of prev, it runs under the PageWait so
// that Cancel can withdraw the accept.
func (c *Client) round(ctx context.Context, op *operation, retry *Retry, prev *InputRequired) (json.RawMessage, *InputRequired, error) {
	w, _ := ctx.Value(pageWaitKey{}).(*PageWait)
	if w == nil || retry == nil || prev == nil || len(urlAccepts(prev, retry)) == 0 {
		return c.once(ctx, op, retry)
	}
	rctx, abort := context.WithCancel(ctx)
	defer abort()
	w.begin(abort)
	res, ir, err := c.once(rctx, op, retry)
	if !w.end() || err == nil || ctx.Err() != nil {
		return res, ir, err // not withdrawn, or the answer came first
	}
	answers := make(map[string]any, len(retry.InputResponses))
	for k, v := range retry.InputResponses {
		answers[k] = v
	}
	for _, k := range urlAccepts(prev, retry) {
		answers[k] = &mcp.ElicitResult{Action: mcp.ActionCancel}
	}
	return c.once(ctx, op, &Retry{InputResponses: answers, state: retry.state, origin: retry.origin})
}

// urlAccepts returns the keys of retry's answers that accept a URL-mode
// elicitation of prev.
func urlAccepts(prev *InputRequired, retry *Retry) []string {
	var keys []string
	for k, v := range retry.InputResponses {
		r, ok := v.(*mcp.ElicitResult)
		if !ok || r == nil || r.Action != mcp.ActionAccept {
			continue
		}
		if p, err := prev.InputRequests[k].ElicitParams(); err == nil && p.Mode == mcp.ElicitationModeURL {
			keys = append(keys, k)
		}
	}
	return keys
}
