package legacy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/internal/transport/endpoint"
	"github.com/mcp-elicit/elicit/jsonrpc"
)

// Why a session ended; the cause of its context, so a call cut off by the
// close gets a clear error (see bridge.wireError).
var (
	errDeleted  = errors.New("the client ended the session")
	errIdle     = errors.New("the session was idle too long")
	errEvicted  = errors.New("the session was replaced by a newer one of the same user")
	errShutdown = errors.New("the server is shutting down")
)

// session is one 2025 session as the Handler sees it: who opened it, its
// idle timer, and a context that ends when it closes, so the bridge calls
// running in it (and their prompts to the client) end too. go-sdk's own
// Close waits for in-flight handlers, so they must end first.
type session struct {
	principal string
	ctx       context.Context
	cancel    context.CancelCauseFunc

	// Guarded by registry.mu.
	ss     *sdk.ServerSession // nil until initialize succeeded
	id     string
	busy   int       // requests being served
	last   time.Time // when the last request ended (or the session opened)
	timer  *time.Timer
	closed bool
	quiet  chan struct{} // closed by done when busy reaches 0 after end began
}

// drainTimeout bounds how long end waits, after cancelling a session's
// calls, for their POST streams to carry the error answer before go-sdk's
// close cuts them off.
const drainTimeout = 2 * time.Second

// sessionKey carries the *session of an initialize request into the
// go-sdk connection's context; go-sdk keeps that context's values for every
// handler of the session.
type sessionKey struct{}

// sessionOf returns the session whose handler runs with ctx, or nil.
func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// registry counts and closes the 2025 sessions of a Handler.
type registry struct {
	log          *slog.Logger
	idle         time.Duration
	max, perUser int

	mu       sync.Mutex
	byID     map[string]*session
	byUser   map[string][]*session // including sessions still initializing
	total    int
	shutdown bool
}

// errRefused is a refusal of a new session: the HTTP status and the
// JSON-RPC error the client gets.
type errRefused struct {
	status int
	err    *jsonrpc.Error
}

// open reserves a session for principal. When the principal already has
// perUser sessions, its least recently used idle one (no request being
// served) is closed to make room; when all of them are busy, or the total
// is reached, or the server is shutting down, open refuses.
func (r *registry) open(principal string) (*session, *errRefused) {
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		return nil, &errRefused{http.StatusServiceUnavailable, jsonrpc.NewError(jsonrpc.CodeInternalError, "Server shutting down: no new sessions")}
	}
	var evict *session
	if own := r.byUser[principal]; len(own) >= r.perUser {
		for _, s := range own {
			if s.ss != nil && s.busy == 0 && (evict == nil || s.last.Before(evict.last)) {
				evict = s
			}
		}
		if evict == nil {
			r.mu.Unlock()
			return nil, &errRefused{http.StatusTooManyRequests, jsonrpc.NewError(jsonrpc.CodeInternalError,
				"Too many sessions: this user has %d sessions with requests in progress; end one (HTTP DELETE) or retry later", r.perUser)}
		}
		r.forget(evict)
	} else if r.total >= r.max {
		r.mu.Unlock()
		return nil, &errRefused{http.StatusServiceUnavailable, jsonrpc.NewError(jsonrpc.CodeInternalError, "Too many sessions on this server; retry later")}
	}
	s := &session{principal: principal, last: time.Now()}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	r.byUser[principal] = append(r.byUser[principal], s)
	r.total++
	r.mu.Unlock()
	if evict != nil {
		r.end(evict, errEvicted)
	}
	return s, nil
}

// opened records that initialize succeeded on s: the session is now
// reachable by its id. Called by go-sdk's receiving middleware, before the
// client learns the id.
func (r *registry) opened(s *session, ss *sdk.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.ss = ss
	if s.closed {
		return // closed while initializing: started closes ss
	}
	s.id = ss.ID()
	r.byID[s.id] = s
	r.log.Debug("legacy: session opened")
}

// started ends the initialize request on s: a session that did not
// initialize is released, one that did starts its idle timer.
func (r *registry) started(s *session) {
	r.mu.Lock()
	switch {
	case s.ss == nil: // go-sdk refused the initialize
		r.forget(s)
		r.mu.Unlock()
		s.cancel(errDeleted)
	case s.closed: // shut down or evicted while initializing
		ss := s.ss
		r.mu.Unlock()
		_ = ss.Close()
	default:
		s.last = time.Now()
		s.timer = time.AfterFunc(r.idle, func() { r.end(s, errIdle) })
		r.mu.Unlock()
	}
}

// lookup returns the open session id of principal, or nil.
func (r *registry) lookup(id, principal string) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.byID[id]; s != nil && s.principal == principal {
		return s
	}
	return nil
}

// begin marks a request on s as being served: the idle timer stops.
func (r *registry) begin(s *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.busy++; s.timer != nil {
		s.timer.Stop()
	}
}

// done marks a request on s as finished: with none left, the idle timer
// starts again.
func (r *registry) done(s *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.last = time.Now()
	if s.busy--; s.busy == 0 && s.timer != nil && !s.closed {
		s.timer.Reset(r.idle)
	}
	if s.busy == 0 && s.quiet != nil {
		close(s.quiet)
		s.quiet = nil
	}
}

// forget removes s from the counts; r.mu is held. It reports whether s was
// still open.
func (r *registry) forget(s *session) bool {
	if s.closed {
		return false
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.id != "" {
		delete(r.byID, s.id)
	}
	own := r.byUser[s.principal]
	for i, o := range own {
		if o == s {
			own = append(own[:i], own[i+1:]...)
			break
		}
	}
	if len(own) == 0 {
		delete(r.byUser, s.principal)
	} else {
		r.byUser[s.principal] = own
	}
	r.total--
	return true
}

// end closes s for cause: its bridge calls are cancelled first (their
// prompts to the client end), their error answers get up to drainTimeout
// to reach the client, then go-sdk closes the session, which waits for its
// handlers to return.
func (r *registry) end(s *session, cause error) {
	r.mu.Lock()
	r.forget(s)
	ss := s.ss
	var quiet chan struct{}
	if s.busy > 0 && s.quiet == nil {
		s.quiet = make(chan struct{})
	}
	quiet = s.quiet
	r.mu.Unlock()
	s.cancel(cause)
	if quiet != nil {
		// The cancelled calls answer with an error (bridge.wireError) on
		// their POST streams; closing first would drop that answer.
		t := time.NewTimer(drainTimeout)
		select {
		case <-quiet:
		case <-t.C:
		}
		t.Stop()
	}
	if ss != nil {
		_ = ss.Close()
		r.log.Debug("legacy: session closed", "reason", cause.Error())
	}
}

// closeAll refuses new sessions and closes every open one, concurrently,
// returning when all are closed.
func (r *registry) closeAll() {
	r.mu.Lock()
	r.shutdown = true
	var all []*session
	for _, own := range r.byUser {
		all = append(all, own...)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { r.end(s, errShutdown) })
	}
	wg.Wait()
}

// refuse answers a refused initialize: the status, Retry-After (the
// client may try again once a session ended) and a JSON-RPC error.
func refuse(w http.ResponseWriter, id jsonrpc.ID, e *errRefused, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(retry/time.Second)))
	endpoint.WriteError(w, e.status, id, e.err)
}
