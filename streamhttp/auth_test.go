package streamhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// fakeAuth maps tokens to outcomes.
type fakeAuth map[string]error

func (f fakeAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	tok, _ := auth.BearerToken(r.Header)
	if err, ok := f[tok]; ok {
		return auth.Principal{Issuer: "https://idp.example", Subject: tok}, err
	}
	return auth.Principal{}, auth.ErrUnauthenticated
}

func (fakeAuth) Challenge() string { return `Bearer realm="t"` }

func TestAuthRefusals(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", Description: "principal id"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text(r.Principal), nil
	})
	fa := fakeAuth{
		"alice":  nil,
		"scope":  &auth.Error{Status: 403, Challenge: `Bearer error="insufficient_scope"`, Reason: "r"},
		"bad":    &auth.Error{Status: 401, Challenge: `Bearer error="invalid_token"`, Reason: "r"},
		"double": &auth.Error{Status: 400, Challenge: `Bearer error="invalid_request"`, Reason: "r"},
		"down":   &auth.Error{Status: 503, Reason: "issuer keys unavailable"},
	}
	hs := httptest.NewServer(NewHandler(s, &Options{Auth: fa}))
	defer hs.Close()
	tests := []struct {
		token     string
		status    int
		challenge string
	}{
		{"alice", 200, ""},
		{"scope", 403, `Bearer error="insufficient_scope"`},
		{"bad", 401, `Bearer error="invalid_token"`},
		{"double", 400, `Bearer error="invalid_request"`},
		{"unknown", 401, `Bearer realm="t"`}, // a plain error: the Authenticator's challenge
		{"down", 503, ""},
	}
	for _, tt := range tests {
		status, h, body := call{"POST", with(std("tools/call", "whoami"), "Authorization", "Bearer "+tt.token), callBody(1, "whoami", "{}")}.do(t, hs.URL)
		if status != tt.status || h.Get("WWW-Authenticate") != tt.challenge {
			t.Errorf("%s: %d %q, want %d %q", tt.token, status, h.Get("WWW-Authenticate"), tt.status, tt.challenge)
		}
		if status == 200 {
			var resp struct {
				Result struct {
					Content []struct{ Text string }
				}
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Result.Content) != 1 || resp.Result.Content[0].Text != "https://idp.example#alice" {
				t.Errorf("handler saw principal %s, want the issuer#subject id", body)
			}
		} else if status == 503 {
			if h.Get("Retry-After") != "1" || !strings.Contains(body, `"code":-32603`) || !strings.Contains(body, `"retryable":true`) {
				t.Errorf("issuer outage: Retry-After %q, body %s", h.Get("Retry-After"), body)
			}
		} else if !strings.Contains(body, `"code":-32600`) {
			t.Errorf("%s: body %s", tt.token, body)
		}
	}
}
