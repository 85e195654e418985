package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// Outcomes of a closed flow (CloseFlow): the user declined or cancelled
// the URL-mode elicitation in the MCP client.
const (
	FlowDeclined  = "declined"
	FlowCancelled = "cancelled"
	// FlowDenied: the third party (an OAuthProvider) did not grant access.
	FlowDenied = "denied"
)

// FlowAccepted is the answer AnswerFlow records when the client accepted
// a flow whose page was finished.
const FlowAccepted = "accepted"

// answeredOpPrefix names the ledger operation that records the first
// answer to a finished flow; the rest is the flow id.
const answeredOpPrefix = "connect_flow_answered."

// closedOpPrefix names the ledger operation that records how a flow was
// closed; the rest is the flow id.
const closedOpPrefix = "connect_flow_closed."

// KeepAliveEvery is how often WaitFlow calls its tick while it waits.
const KeepAliveEvery = 10 * time.Second

// CloseFlow ends f, a pending flow, because the user answered outcome
// (FlowDeclined or FlowCancelled) in the MCP client, or the third party
// denied access (FlowDenied, closed by the callback page): decline and
// cancel are final for a URL step, and a denial ends the wait at once.
// The flow can no longer be completed, its page says why, and the outcome
// is recorded in the ledger, so a replayed retry gets it again
// (ClosedOutcome). Both are one store write
// (store.Store.CloseFlowAndRecord): whoever sees the flow ended finds the
// outcome, and a failure leaves the flow open with nothing recorded. It
// returns the outcome that holds: outcome, or the one recorded by an
// earlier or concurrent close. An error wrapping store.ErrConflict means
// the flow was completed first; the secret entered then is kept, and
// nothing is recorded.
func (s *Service) CloseFlow(ctx context.Context, f *store.Flow, outcome string) (string, error) {
	if outcome != FlowDeclined && outcome != FlowCancelled && outcome != FlowDenied {
		return "", fmt.Errorf("connect: CloseFlow: outcome %q is not %q, %q or %q", outcome, FlowDeclined, FlowCancelled, FlowDenied)
	}
	op := &store.Operation{ID: closedOpPrefix + f.ID, Principal: f.Principal, Name: "connect close " + f.Purpose,
		Outcome: outcome, CompletedAt: s.now()}
	err := s.store.CloseFlowAndRecord(ctx, f.ID, op)
	var recorded *store.RecordedError
	switch {
	case errors.As(err, &recorded):
		return recorded.Op.Outcome, nil // closed before: its outcome holds
	case err != nil:
		return "", fmt.Errorf("connect: close flow: %w", err)
	}
	s.audit(ctx, slog.LevelInfo, "flow_closed",
		slog.String("flow_id", f.ID), slog.String("principal", f.Principal), slog.String("purpose", f.Purpose), slog.String("outcome", outcome))
	s.flowChanged(ctx, f.ID)
	return outcome, nil
}

// ClosedOutcome returns the outcome recorded when the flow id was closed
// (FlowDeclined or FlowCancelled), or "" if it was not. The record stays
// in the ledger after the flow itself is swept.
func (s *Service) ClosedOutcome(ctx context.Context, id string) (string, error) {
	return s.recordedOutcome(ctx, closedOpPrefix+id, "closed flow")
}

// recordedOutcome returns the outcome of the ledger operation opID, or ""
// if there is none; what names it in an error.
func (s *Service) recordedOutcome(ctx context.Context, opID, what string) (string, error) {
	op, err := s.store.GetOperation(ctx, opID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("connect: %s: %w", what, err)
	}
	return op.Outcome, nil
}

// AnswerFlow records answer (FlowAccepted, FlowDeclined or FlowCancelled)
// as the client's answer to f, a flow whose page was finished, unless an
// answer is recorded already, and returns the answer that holds: the first
// one recorded. One operation has one outcome, so a replayed retry with
// another answer gets the first one's result (and the audit trail shows
// that outcome again). The record stays in the ledger after the flow is
// swept.
func (s *Service) AnswerFlow(ctx context.Context, f *store.Flow, answer string) (string, error) {
	switch answer {
	case FlowAccepted, FlowDeclined, FlowCancelled:
	default:
		return "", fmt.Errorf("connect: AnswerFlow: answer %q is not %q, %q or %q", answer, FlowAccepted, FlowDeclined, FlowCancelled)
	}
	if recorded, err := s.AnsweredOutcome(ctx, f.ID); err != nil || recorded != "" {
		return recorded, err
	}
	op := &store.Operation{ID: answeredOpPrefix + f.ID, Principal: f.Principal, Name: "connect answer " + f.Purpose,
		Outcome: answer, CompletedAt: s.now()}
	err := s.store.CompleteOperation(ctx, op, nil)
	if errors.Is(err, store.ErrConflict) {
		return s.AnsweredOutcome(ctx, f.ID) // a concurrent retry answered first
	}
	if err != nil {
		return "", fmt.Errorf("connect: record flow answer: %w", err)
	}
	return answer, nil
}

// AnsweredOutcome returns the answer AnswerFlow recorded for the flow id,
// or "" if none was.
func (s *Service) AnsweredOutcome(ctx context.Context, id string) (string, error) {
	return s.recordedOutcome(ctx, answeredOpPrefix+id, "flow answer")
}

// Pending reports whether f can still be completed at the Service's
// clock: pending and not expired (a closed flow has expired).
func (s *Service) Pending(f *store.Flow) bool {
	return f.Status == store.FlowPending && s.now().Before(f.ExpiresAt)
}

// WaitFlow waits until the flow id can no longer be completed — it was
// completed, closed, or has expired — or until d has passed, or EndWaits
// was called, whichever comes first, and returns the flow as it then is
// (compare with Pending).
// It wakes as soon as the flow changes: at once for a change made through
// this Service, and, when the store carries notices between processes
// (store.FlowNotifier: PostgreSQL shared by several instances), for a
// change made by another instance; it never polls. Without such a store,
// a page served by another process is seen only at the end of d. tick,
// when not nil, is called when the wait begins and every KeepAliveEvery
// while it lasts (the caller keeps its response stream open with it). The
// end of ctx ends the wait with ctx's error; store.ErrNotFound if there is
// no such flow.
func (s *Service) WaitFlow(ctx context.Context, id string, d time.Duration, tick func()) (*store.Flow, error) {
	local, stopLocal := s.hub.subscribe(id)
	defer stopLocal()
	var remote <-chan struct{}
	if n, ok := s.store.(store.FlowNotifier); ok {
		ch, stop, err := n.WatchFlow(ctx, id)
		if err != nil {
			// Other instances' changes are then seen at the deadline only.
			s.log.LogAttrs(ctx, slog.LevelWarn, "connect: cannot watch flow changes", slog.String("flow_id", id), slog.Any("err", err))
		} else {
			remote = ch
			defer stop()
		}
	}
	ended := s.hub.ended()
	// Subscribed first, read second: a change after the read wakes us.
	f, err := s.Flow(ctx, id)
	if err != nil || !s.Pending(f) || d <= 0 || isClosed(ended) {
		return f, err
	}
	if left := f.ExpiresAt.Sub(s.now()); left < d {
		d = left // the link dies then; nothing can complete it after
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	var ticks <-chan time.Time
	if tick != nil {
		tick()
		t := time.NewTicker(KeepAliveEvery)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ticks:
			tick()
			continue
		case <-local:
		case <-remote:
		case <-deadline.C:
			return s.Flow(ctx, id)
		case <-ended:
			return s.Flow(ctx, id)
		}
		if f, err = s.Flow(ctx, id); err != nil || !s.Pending(f) {
			return f, err
		}
	}
}

// EndWaits ends every wait of this Service, now and later, as if its time
// were up: WaitFlow returns the flow as it is, and a held retry
// (HoldRetry, Step) is answered at once with the same question, so the
// client can retry elsewhere. Call it when the server begins shutting
// down (http.Server.RegisterOnShutdown), so that held requests do not
// keep the shutdown waiting.
func (s *Service) EndWaits() { s.hub.end() }

// HoldRetry holds req, a tool call that accepted the URL-mode elicitation
// of f before its page was finished, until the page is finished, the flow
// is closed or expires, d has passed, or EndWaits is called (WaitFlow),
// keeping the response stream alive meanwhile (mcpserver.Request.KeepAlive:
// progress notifications when req carries a progressToken, SSE comments
// otherwise). d is the wait: 0 means DefaultWait, negative no wait. It
// returns the flow as it then is; f itself when it could not be read again
// (it was swept, or the client went away: ctx has ended then). Accept is
// consent, not completion (ELI-RA-01): answer a flow still Pending after
// it with the same question again.
func (s *Service) HoldRetry(ctx context.Context, req *mcpserver.Request, f *store.Flow, d time.Duration) (*store.Flow, error) {
	switch {
	case d < 0:
		return f, nil
	case d == 0:
		d = DefaultWait
	}
	n := 0
	got, err := s.WaitFlow(ctx, f.ID, d, func() {
		n++
		_ = req.KeepAlive(float64(n), waitMessage) // a dead stream ends ctx
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return f, nil // swept meanwhile: the caller finds it expired
	case err != nil && ctx.Err() != nil:
		// The client went away (or gave up) while waiting: no fault of
		// the server's; still pending.
		return f, nil
	}
	return got, err
}

// flowChanged wakes the waiters of flow id: those of this process at
// once, those of other processes through the store when it can.
func (s *Service) flowChanged(ctx context.Context, id string) {
	s.hub.publish(id)
	if n, ok := s.store.(store.FlowNotifier); ok {
		if err := n.NotifyFlow(ctx, id); err != nil {
			// Their waits end at their deadlines instead.
			s.log.LogAttrs(ctx, slog.LevelWarn, "connect: cannot notify other instances of a flow change", slog.String("flow_id", id), slog.Any("err", err))
		}
	}
}

// flowHub wakes this process's WaitFlow calls. The zero value is ready.
type flowHub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	stop chan struct{} // closed by end; made on first use
}

// ended returns the channel end closes.
func (h *flowHub) ended() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop == nil {
		h.stop = make(chan struct{})
	}
	return h.stop
}

// end ends every wait, now and later; calling it again does nothing.
func (h *flowHub) end() {
	ch := h.ended()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !isClosed(ch) {
		close(h.stop)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (h *flowHub) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string]map[chan struct{}]struct{}{}
	}
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]struct{}{}
	}
	h.subs[id][ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[id], ch)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
	}
}

func (h *flowHub) publish(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// closedPage tells the flow's own user that the step was declined or
// cancelled in the client, so the link takes no input; it reports whether
// it wrote that page. Anyone else, or a flow not closed, gets the caller's
// usual refusal.
func (s *Service) closedPage(w http.ResponseWriter, r *http.Request, f *store.Flow, sess *store.Session) bool {
	if f.Status != store.FlowPending || f.Principal != sess.Principal {
		return false
	}
	outcome, err := s.ClosedOutcome(r.Context(), f.ID)
	if err != nil || outcome == "" {
		return false
	}
	msg := "You declined this step in your MCP client, so this link no longer accepts anything. Nothing was stored. To connect, start again from your MCP client."
	switch outcome {
	case FlowCancelled:
		msg = "This step was cancelled in your MCP client, so this link no longer accepts anything. Nothing was stored. To connect, start again from your MCP client."
	case FlowDenied:
		msg = "Access was not granted at the provider, so this link no longer accepts anything. Nothing was stored. To try again, start again from your MCP client."
	}
	s.message(w, http.StatusGone, "Step closed", msg, "closed", true, sess)
	return true
}
