package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// A stdio upstream (Upstream.Command) is a local program that speaks MCP
// on its standard input and output (basic/transports/stdio.mdx). Such a
// server has no authentication of its own: whoever launched it is its
// user. So the gateway runs one process per user, never a process shared
// between users, and gives each its user and that user's credential
// when it starts it; the gateway's own process (CatalogPrincipal) reads
// the catalog. The processes are bounded in number and closed when idle.

// Defaults for a stdio upstream's Upstream fields left zero.
const (
	DefaultMaxProcesses = 16
	DefaultProcessIdle  = 5 * time.Minute
)

// processStartTimeout bounds starting one process and its handshake.
const processStartTimeout = 30 * time.Second

// processPool is a stdio upstream's processes, one per principal.
type processPool struct {
	u        *upstream
	stopping sync.WaitGroup // processes being closed
	mu       sync.Mutex
	procs    map[string]*process
	closed   bool
}

// process is one user's server process.
type process struct {
	principal string
	ready     chan struct{} // closed once c or err is set
	c         *mcpclient.Client
	err       error
	busy      int       // requests using it now
	last      time.Time // when the last request using it ended
	gone      bool      // taken out of the pool: closing or closed
}

func newProcessPool(u *upstream) *processPool {
	return &processPool{u: u, procs: map[string]*process{}}
}

// errProcess is a process that could not be started or died: the
// upstream is unreachable for now.
type errProcess struct{ err error }

func (e *errProcess) Error() string { return "the upstream process: " + e.err.Error() }
func (e *errProcess) Unwrap() error { return e.err }

// acquire returns principal's process, started if it has none (a new
// one beyond the bound replaces the process idle the longest, or is
// refused with a retryable error when every process is busy). Release it
// with release.
func (p *processPool) acquire(ctx context.Context, principal string) (*process, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "The gateway is shutting down")
	}
	pr := p.procs[principal]
	var victim, dead *process
	if pr != nil && pr.c != nil && closedChan(pr.c.Exited()) {
		// It died while idle (or between requests): a new one serves
		// this request, not an error.
		delete(p.procs, principal)
		pr.gone, dead, pr = true, pr, nil
	}
	starting := pr == nil
	if starting {
		var err error
		if victim, err = p.makeRoomLocked(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		pr = &process{principal: principal, ready: make(chan struct{})}
		p.procs[principal] = pr
	}
	pr.busy++
	p.mu.Unlock()
	if dead != nil {
		p.u.g.log.Warn("gateway: upstream process gone; starting another", "upstream", p.u.cfg.Name, "principal", principal)
		p.stopLater(dead)
	}
	if victim != nil {
		p.u.g.log.Info("gateway: closing the process idle the longest to start another", "upstream", p.u.cfg.Name)
		p.stopLater(victim)
	}
	if starting {
		p.start(ctx, pr)
	}
	select {
	case <-pr.ready:
	case <-ctx.Done():
		p.release(pr, nil)
		return nil, ctx.Err()
	}
	if pr.err != nil {
		p.release(pr, nil)
		return nil, pr.err
	}
	return pr, nil
}

// closedChan reports whether ch is closed (never, for nil).
func closedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// makeRoomLocked returns the idle process to close when the pool is
// full, or the error refusing a new one when none is idle.
func (p *processPool) makeRoomLocked() (*process, error) {
	if len(p.procs) < p.u.maxProcesses() {
		return nil, nil
	}
	var oldest *process
	for _, pr := range p.procs {
		if pr.busy == 0 && pr.c != nil && (oldest == nil || pr.last.Before(oldest.last)) {
			oldest = pr
		}
	}
	if oldest == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("Upstream %q runs as many processes as it may, all busy; retry later", p.u.cfg.Name),
			Data:    transport.RetryData{Retryable: true, RetryAfterMs: 1000}}
	}
	delete(p.procs, oldest.principal)
	oldest.gone = true
	return oldest, nil
}

// start starts pr's program with its user's credential, learns that it
// speaks 2026-07-28, and makes pr ready (or failed, and forgotten, so the
// next request starts it again).
func (p *processPool) start(ctx context.Context, pr *process) {
	u := p.u
	c, err := p.launch(ctx, pr.principal)
	if err != nil && !errors.Is(err, ErrNoCredentials) {
		u.g.log.Warn("gateway: upstream process not started", "upstream", u.cfg.Name, "principal", pr.principal, "err", err)
		err = &errProcess{err}
	}
	p.mu.Lock()
	pr.c, pr.err = c, err
	if err != nil {
		if p.procs[pr.principal] == pr {
			delete(p.procs, pr.principal)
		}
		pr.gone = true
	}
	p.mu.Unlock()
	close(pr.ready)
}

// launch starts principal's process and checks its revision.
func (p *processPool) launch(ctx context.Context, principal string) (*mcpclient.Client, error) {
	u := p.u
	tok, err := u.creds.Token(ctx, principal)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), processStartTimeout)
	defer cancel()
	c, err := mcpclient.NewCommand(sctx, u.cfg.Command(principal, tok), &mcpclient.Options{ClientInfo: u.g.info, Logger: u.g.log, MaxRounds: 1})
	if err != nil {
		return nil, err
	}
	if v := c.Version(); v != Revision2026 {
		_ = c.Close()
		return nil, fmt.Errorf("it speaks %s; a stdio upstream must speak %s", v, Revision2026)
	}
	return c, nil
}

// release ends one request's use of pr; callErr is that request's error.
// A process whose connection failed (it exited, or closed its output) is
// closed at once: the next request starts a new one.
func (p *processPool) release(pr *process, callErr error) {
	var ce *mcpclient.ConnectionError
	dead := errors.As(callErr, &ce) || errors.Is(callErr, mcpclient.ErrStreamEnded)
	p.mu.Lock()
	pr.busy--
	pr.last = p.u.g.now()
	stop := dead && !pr.gone
	if stop {
		if p.procs[pr.principal] == pr {
			delete(p.procs, pr.principal)
		}
		pr.gone = true
	}
	p.mu.Unlock()
	if stop {
		p.u.g.log.Warn("gateway: upstream process gone", "upstream", p.u.cfg.Name, "principal", pr.principal, "err", callErr)
		p.stopLater(pr)
	}
}

// stop closes pr's process (its input closed, then signalled, then killed).
func (p *processPool) stop(pr *process) {
	if pr.c != nil {
		_ = pr.c.Close()
	}
}

// stopLater closes pr's process off the request's path (Close waits).
func (p *processPool) stopLater(pr *process) {
	p.stopping.Go(func() { p.stop(pr) })
}

// sweep closes the processes idle for ProcessIdle or longer.
func (p *processPool) sweep() {
	now := p.u.g.now()
	p.mu.Lock()
	var idle []*process
	for k, pr := range p.procs {
		if pr.busy == 0 && pr.c != nil && now.Sub(pr.last) >= p.u.processIdle() {
			delete(p.procs, k)
			pr.gone = true
			idle = append(idle, pr)
		}
	}
	p.mu.Unlock()
	for _, pr := range idle {
		p.stop(pr)
	}
}

// count is how many processes run (or start) now.
func (p *processPool) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.procs)
}

// closeAll closes every process, at once, and refuses new ones.
func (p *processPool) closeAll() {
	p.mu.Lock()
	p.closed = true
	all := make([]*process, 0, len(p.procs))
	for k, pr := range p.procs {
		delete(p.procs, k)
		pr.gone = true
		all = append(all, pr)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pr := range all {
		wg.Go(func() {
			<-pr.ready
			p.stop(pr)
		})
	}
	wg.Wait()
	p.stopping.Wait()
}

// Environment variables CommandLine gives a stdio upstream's process.
const (
	// EnvUpstreamUser is the user the process serves: the principal's id
	// at the gateway as is (not UserPathElement), "" for the gateway's
	// own process.
	EnvUpstreamUser = "ELICIT_UPSTREAM_USER"
	// EnvUpstreamToken is the user's credential at this upstream
	// (Upstream.Credentials), unset when there is none.
	EnvUpstreamToken = "ELICIT_UPSTREAM_TOKEN"
	// UserPlaceholder in an argument is replaced by UserPathElement of
	// the user's id.
	UserPlaceholder = "{user}"
)

// UserPathElement is the form of principal that UserPlaceholder stands
// for: safe as one path element and one per principal. Every byte
// outside A-Z, a-z, 0-9, _ and - becomes %XX (upper-case hex), so "."
// is "%2E", ".." "%2E%2E" and "https://idp#u/1"
// "https%3A%2F%2Fidp%23u%2F1"; the gateway's own identity
// (CatalogPrincipal, "") is "@gateway", which no encoding produces (an
// @ is always encoded). A user never shares a directory with another
// user, or with the gateway's own process, or escapes the parent.
func UserPathElement(principal string) string {
	if principal == CatalogPrincipal {
		return CatalogToken
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(principal); i++ {
		switch c := principal[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// CommandLine returns an Upstream.Command that runs program with args
// for each user: every UserPlaceholder in an argument replaced by
// UserPathElement of the user's id, and the environment of
// the gateway without its own settings and secrets (ELICIT_GATEWAY_*),
// plus EnvUpstreamUser and, when the user has a credential,
// EnvUpstreamToken (an environment variable, never an argument that
// others could read in the process list). The process's standard error
// goes to stderr (nil discards it).
func CommandLine(program string, args []string, stderr io.Writer) func(principal, token string) *exec.Cmd {
	return func(principal, token string) *exec.Cmd {
		argv := make([]string, len(args))
		for i, a := range args {
			argv[i] = strings.ReplaceAll(a, UserPlaceholder, UserPathElement(principal))
		}
		cmd := exec.Command(program, argv...)
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "ELICIT_GATEWAY_") || strings.HasPrefix(kv, "ELICIT_UPSTREAM_")
		})
		cmd.Env = append(cmd.Env, EnvUpstreamUser+"="+principal) // the raw id
		if token != "" {
			cmd.Env = append(cmd.Env, EnvUpstreamToken+"="+token)
		}
		if stderr != nil {
			cmd.Stderr = stderr
		}
		return cmd
	}
}
