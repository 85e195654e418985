package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/store"
)

// flowChannel is the LISTEN/NOTIFY channel of flow changes; a notice's
// payload is the flow id (not a credential, SEC-U-S-01). It is one
// channel per database, whatever the schema: a notice for a flow of
// another schema only makes a waiter read its own flow again.
const flowChannel = "elicit_flow"

var _ store.FlowNotifier = (*Store)(nil)

// NotifyFlow implements store.FlowNotifier with pg_notify: every Store
// with a WatchFlow open on this database gets the notice when the
// statement commits.
func (s *Store) NotifyFlow(ctx context.Context, id string) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, flowChannel, id); err != nil {
		return s.errorf("postgres: notify flow: %w", err)
	}
	return nil
}

// WatchFlow implements store.FlowNotifier. The Store LISTENs on a
// connection of its own (not one of the pool's, so Close never waits for
// it) while at least one watch is open, and closes it after the last
// stop. It returns once LISTEN is in effect. If that connection breaks,
// every open watch gets a notice (its waiter reads the flow again) and the
// next WatchFlow connects anew.
func (s *Store) WatchFlow(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	ch, stop, err := s.flows.watch(ctx, s.pool.Config().ConnConfig, id)
	if err != nil {
		return nil, nil, s.errorf("postgres: listen for flow changes: %w", err)
	}
	return ch, stop, nil
}

// flowHub fans the notices of one LISTEN connection out to the watches.
// The zero value is ready to use.
type flowHub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // by flow id
	n    int                                   // open watches
	l    *flowListener                         // nil when not listening
}

// flowListener is one LISTEN connection's life.
type flowListener struct {
	ready  chan struct{} // closed once LISTEN is in effect or failed
	err    error         // why it failed; read after ready is closed
	cancel context.CancelFunc
}

func (h *flowHub) watch(ctx context.Context, cfg *pgx.ConnConfig, id string) (<-chan struct{}, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[chan struct{}]struct{}{}
	}
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]struct{}{}
	}
	h.subs[id][ch] = struct{}{}
	h.n++
	l := h.l
	if l == nil {
		lctx, cancel := context.WithCancel(context.Background())
		l = &flowListener{ready: make(chan struct{}), cancel: cancel}
		h.l = l
		go h.listen(lctx, cfg, l)
	}
	h.mu.Unlock()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.subs[id], ch)
			if len(h.subs[id]) == 0 {
				delete(h.subs, id)
			}
			h.n--
			if h.n == 0 && h.l != nil {
				h.l.cancel()
				h.l = nil
			}
		})
	}
	select {
	case <-l.ready:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	if l.err != nil {
		stop()
		return nil, nil, l.err
	}
	return ch, stop, nil
}

// listen runs one LISTEN connection until ctx ends (the last watch
// stopped) or the connection fails.
func (h *flowHub) listen(ctx context.Context, cfg *pgx.ConnConfig, l *flowListener) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		if _, err = conn.Exec(ctx, `LISTEN `+flowChannel); err != nil {
			conn.Close(context.Background())
		}
	}
	l.err = err
	close(l.ready)
	if err != nil {
		h.detach(l, false)
		return
	}
	defer conn.Close(context.Background())
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			// Stopped on purpose, or the connection broke: then wake every
			// watch, so no waiter sleeps on a dead channel unknowingly.
			h.detach(l, ctx.Err() == nil)
			return
		}
		h.mu.Lock()
		for ch := range h.subs[n.Payload] {
			select {
			case ch <- struct{}{}:
			default: // a notice is pending already
			}
		}
		h.mu.Unlock()
	}
}

// detach forgets l if it is still the hub's listener; wake sends every
// open watch a notice.
func (h *flowHub) detach(l *flowListener, wake bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.l == l {
		h.l = nil
	}
	if !wake {
		return
	}
	for _, subs := range h.subs {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
