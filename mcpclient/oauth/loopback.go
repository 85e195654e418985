package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Loopback is a Browser for a program on the user's computer: the
// redirect URI is http://127.0.0.1:<port><Path> on a port of its own
// (RFC 8252 §7.3), and the authorization response is the one request
// there that carries the state of the pending authorization request.
// Requests with another state get a 400 page and change nothing; the
// pages it serves show no parameter. Close stops listening.
type Loopback struct {
	// Open shows the user req and, once they agree, sends their browser
	// to req.URL (or has them open it). An error (the user said no) ends
	// the sign-in. Required.
	Open func(ctx context.Context, req *AuthorizationRequest) error
	// Addr is where to listen; "" means "127.0.0.1:0", a free port. It
	// must be a loopback address.
	Addr string
	// Path is the redirect URI's path; "" means "/callback".
	Path string

	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	url     string
	pending map[string]chan url.Values // by state
}

// RedirectURL starts listening, once, and returns the redirect URI.
func (l *Loopback) RedirectURL(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.url != "" {
		return l.url, nil
	}
	addr, path := l.Addr, l.Path
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if path == "" {
		path = "/callback"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !isLoopback(host) {
		return "", fmt.Errorf("oauth: the redirect listener must be on a loopback address, not %q", addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("oauth: listening for the sign-in redirect: %w", err)
	}
	l.ln, l.pending = ln, map[string]chan url.Values{}
	l.url = "http://" + ln.Addr().String() + path
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	return l.url, nil
}

// Authorize registers req's state, calls Open, and waits for the
// response with that state, or ctx's end.
func (l *Loopback) Authorize(ctx context.Context, req *AuthorizationRequest) (url.Values, error) {
	if l.Open == nil {
		return nil, errors.New("oauth: Loopback.Open is not set")
	}
	if _, err := l.RedirectURL(ctx); err != nil {
		return nil, err
	}
	ch := make(chan url.Values, 1)
	l.mu.Lock()
	if l.pending == nil {
		l.mu.Unlock()
		return nil, errors.New("oauth: the redirect listener is closed")
	}
	l.pending[req.State] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pending, req.State)
		l.mu.Unlock()
	}()
	if err := l.Open(ctx, req); err != nil {
		return nil, err
	}
	select {
	case q := <-ch:
		return q, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// callback takes the authorization response of a pending request.
func (l *Loopback) callback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	q := r.URL.Query()
	l.mu.Lock()
	ch, ok := l.pending[q.Get("state")]
	if ok {
		delete(l.pending, q.Get("state")) // one response per request
	}
	l.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, page("This is not the sign-in this program is waiting for.", "Start the sign-in again from the program."))
		return
	}
	ch <- q
	fmt.Fprint(w, page("Sign-in response received.", "You can close this tab and go back to the program."))
}

func page(title, body string) string {
	return "<!doctype html><meta charset=utf-8><title>" + title + "</title><h1>" + title + "</h1><p>" + body + "</p>"
}

// Close stops listening; pending Authorize calls keep waiting for their
// context.
func (l *Loopback) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv == nil {
		return nil
	}
	err := l.srv.Close()
	l.srv, l.pending, l.url = nil, nil, ""
	return err
}
