package mcpclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// fakeAuthorizer hands out tokens t1, t2, … one per Authorize call.
type fakeAuthorizer struct {
	mu         sync.Mutex
	token      string
	n          int
	challenges []*mcpclient.Challenge
	fail       error
	tokenErr   error
}

func (a *fakeAuthorizer) Token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token, a.tokenErr
}

func (a *fakeAuthorizer) Authorize(ctx context.Context, ch *mcpclient.Challenge) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.challenges = append(a.challenges, ch)
	if a.fail != nil {
		return a.fail
	}
	a.n++
	a.token = "t" + string(rune('0'+a.n))
	return nil
}

// gate answers 401 without a token, 403 insufficient_scope for the tokens
// in scopeless, a plain 403 for "banned", and passes the others on.
func gate(next http.Handler, accept func(tok string) (status int, challenge string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if status, ch := accept(tok); status != 0 {
			if ch != "" {
				w.Header().Set("WWW-Authenticate", ch)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func TestAuthorizer(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("pong"), nil
	})
	mcpH := streamhttp.NewHandler(s, nil)
	const rm = `resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`
	tests := []struct {
		name       string
		accept     func(tok string) (int, string)
		fail       error
		wantErr    error // errors.Is
		wantStatus int
		wantCalls  int
		wantTokens []string // Challenge.Token of each call
	}{
		{"401 then accepted", func(tok string) (int, string) {
			if tok == "" {
				return 401, "Bearer " + rm
			}
			return 0, ""
		}, nil, nil, 0, 1, []string{""}},
		{"step-up on 403 insufficient_scope", func(tok string) (int, string) {
			switch tok {
			case "":
				return 401, "Bearer " + rm
			case "t1":
				return 403, `Bearer error="insufficient_scope", scope="write", ` + rm
			}
			return 0, ""
		}, nil, nil, 0, 2, []string{"", "t1"}},
		{"plain 403 is final", func(tok string) (int, string) {
			if tok == "" {
				return 401, "Bearer " + rm
			}
			return 403, `Bearer error="invalid_token"`
		}, nil, nil, 403, 1, []string{""}},
		{"retry limit", func(tok string) (int, string) {
			if tok == "" {
				return 401, "Bearer " + rm
			}
			return 403, `Bearer error=insufficient_scope, scope="admin", ` + rm
		}, nil, mcpclient.ErrAuthorizeLimit, 403, 3, []string{"", "t1", "t2"}},
		{"sign-in fails", func(tok string) (int, string) { return 401, "Bearer " + rm }, errSignIn, errSignIn, 401, 1, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(gate(mcpH, tt.accept))
			defer srv.Close()
			a := &fakeAuthorizer{fail: tt.fail}
			c := mcpclient.New(srv.URL, &mcpclient.Options{Authorizer: a, Token: "ignored"})
			_, err := c.ListTools(context.Background())
			if tt.wantErr == nil && tt.wantStatus == 0 && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantStatus != 0 {
				var ae *mcpclient.AuthError
				if !errors.As(err, &ae) || ae.StatusCode != tt.wantStatus {
					t.Fatalf("err = %v, want an AuthError with status %d", err, tt.wantStatus)
				}
			}
			if len(a.challenges) != tt.wantCalls {
				t.Fatalf("%d Authorize calls, want %d", len(a.challenges), tt.wantCalls)
			}
			for i, ch := range a.challenges {
				if ch.Token != tt.wantTokens[i] || ch.Endpoint != srv.URL || !strings.Contains(ch.WWWAuthenticate, "resource_metadata") {
					t.Errorf("challenge %d = %+v", i, ch)
				}
			}
		})
	}
}

var errSignIn = errors.New("the user declined the sign-in")

// A Token error ends the request before anything is sent.
func TestAuthorizerTokenError(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	a := &fakeAuthorizer{tokenErr: errSignIn}
	_, err := mcpclient.New(srv.URL, &mcpclient.Options{Authorizer: a}).ListTools(context.Background())
	var ae *mcpclient.AuthError
	if !errors.As(err, &ae) || !errors.Is(err, errSignIn) || ae.StatusCode != 0 || hits != 0 {
		t.Fatalf("err = %v, hits %d", err, hits)
	}
	if !strings.Contains(err.Error(), "no access token: the user declined") {
		t.Fatalf("message %q", err)
	}
}

func TestChallengeInsufficientScope(t *testing.T) {
	for v, want := range map[string]bool{
		`Bearer error="insufficient_scope", scope="a"`:       true,
		`Bearer scope="a", ERROR=insufficient_scope`:         true,
		`Basic realm="x", Bearer error="insufficient_scope"`: true,
		`Bearer error="invalid_token"`:                       false,
		`Basic error="insufficient_scope"`:                   false,
		``:                                                   false,
	} {
		if got := (&mcpclient.Challenge{WWWAuthenticate: v}).InsufficientScope(); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
