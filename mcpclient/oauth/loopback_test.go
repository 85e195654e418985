package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The loopback redirect: only the response with the pending state gets
// through; another state gets a 400 page and changes nothing; the pages
// echo no parameter.
func TestLoopback(t *testing.T) {
	ctx := context.Background()
	var opened *AuthorizationRequest
	l := &Loopback{}
	defer l.Close()
	redirect, err := l.RedirectURL(ctx)
	if err != nil || !strings.HasPrefix(redirect, "http://127.0.0.1:") || !strings.HasSuffix(redirect, "/callback") {
		t.Fatalf("redirect %q %v", redirect, err)
	}
	if again, _ := l.RedirectURL(ctx); again != redirect {
		t.Fatalf("second RedirectURL %q", again)
	}
	get := func(q url.Values) (int, string) {
		resp, err := http.Get(redirect + "?" + q.Encode())
		if err != nil {
			t.Error(err) // also called from a goroutine: no Fatal
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	callback := make(chan struct{}) // the real callback's request has ended
	l.Open = func(ctx context.Context, req *AuthorizationRequest) error {
		opened = req
		// A stray request first: wrong state.
		if status, body := get(url.Values{"state": {"forged"}, "code": {"code-forged-123"}}); status != 400 || strings.Contains(body, "code-forged") {
			t.Errorf("forged callback: %d %s", status, body)
		}
		go func() {
			defer close(callback)
			if status, body := get(url.Values{"state": {req.State}, "code": {"code-real-456"}, "iss": {"https://as"}}); status != 200 || strings.Contains(body, "code-real") {
				t.Errorf("callback: %d %s", status, body)
			}
		}()
		return nil
	}
	q, err := l.Authorize(ctx, &AuthorizationRequest{URL: "https://as/authorize", State: "s-1"})
	<-callback
	if err != nil || q.Get("code") != "code-real-456" || q.Get("iss") != "https://as" || opened == nil {
		t.Fatalf("Authorize: %v %v", q, err)
	}
	// The same state again is no longer pending.
	if status, _ := get(url.Values{"state": {"s-1"}, "code": {"again"}}); status != 400 {
		t.Fatalf("replayed callback: %d", status)
	}

	// Open's refusal ends the sign-in; a cancelled context ends the wait.
	no := errors.New("the user said no")
	l.Open = func(context.Context, *AuthorizationRequest) error { return no }
	if _, err := l.Authorize(ctx, &AuthorizationRequest{State: "s-2"}); !errors.Is(err, no) {
		t.Fatalf("declined: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	l.Open = func(context.Context, *AuthorizationRequest) error { cancel(); return nil }
	if _, err := l.Authorize(cctx, &AuthorizationRequest{State: "s-3"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}

	if _, err := (&Loopback{Addr: "0.0.0.0:0"}).RedirectURL(ctx); err == nil {
		t.Fatal("a listener off loopback was accepted")
	}
}
