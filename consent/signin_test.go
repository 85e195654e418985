package consent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

func TestSignInLineMode(t *testing.T) {
	const authURL = "https://auth.example.net/authorize?client_id=c&code_challenge=x&state=s"
	req := &SignInRequest{URL: authURL, Issuer: "https://auth.example.net", Resource: "https://mcp.example.com/mcp",
		Scopes: []string{"files:read"}, RedirectURL: "http://127.0.0.1:5555/callback"}
	tests := []struct {
		name      string
		input     string
		allowOpen bool
		url       string
		wantErr   error
		wantOpen  bool
		want      []string
	}{
		{"yes prints the URL", "yes\n", false, authURL, nil, false, []string{
			"The server asks you to sign in (MCP authorization).", "Server:   mcp.example.com — the endpoint you connected to",
			"Sign in at: https://auth.example.net", "For:        https://mcp.example.com/mcp", "Scopes:     files:read",
			"[example.net]", "Domain:     example.net", "! The sign-in page is on example.net, not on example.com",
			"Open this URL in your browser to sign in:\n  " + authURL, "Waiting for the browser to come back to http://127.0.0.1:5555/callback"}},
		{"yes opens with AllowOpen", "yes\n", true, authURL, nil, true, []string{"Opened in your browser"}},
		{":cancel is no", ":cancel\n", true, authURL, ErrSignInDeclined, false, nil},
		{"no", "no\n", true, authURL, ErrSignInDeclined, false, []string{"Not signed in."}},
		{"end of input is no", "", true, authURL, ErrSignInDeclined, false, nil},
		{"a word that is neither asks again", "y\nno\n", false, authURL, ErrSignInDeclined, false, []string{"Please type yes, no, :decline or :cancel."}},
		{"a refused URL is never offered", "yes\n", true, "https://user:pw@auth.example.net/authorize", ErrRefusedRequest, false, []string{"refuses to offer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &strings.Builder{}
			var opened []string
			term := &Terminal{In: strings.NewReader(tt.input), Out: out, AllowOpen: tt.allowOpen,
				Opener: func(ctx context.Context, u string) error { opened = append(opened, u); return nil }}
			r := *req
			r.URL = tt.url
			err := term.SignIn(context.Background(), exampleAsker, &r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if (len(opened) == 1) != tt.wantOpen || (tt.wantOpen && opened[0] != authURL) {
				t.Fatalf("opened %v", opened)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if tt.wantErr != nil && strings.Contains(out.String(), "Open this URL") {
				t.Error("the URL was offered without a yes")
			}
		})
	}
}

// SignIn and the handlers read one input in turn.
func TestSignInSharesInput(t *testing.T) {
	out := &strings.Builder{}
	term := &Terminal{In: strings.NewReader("yes\ndecline\n"), Out: out}
	h := term.Handlers()
	if err := term.SignIn(context.Background(), loopbackAsker, &SignInRequest{URL: "http://127.0.0.1:9/authorize", RedirectURL: "http://127.0.0.1:8/cb"}); err != nil {
		t.Fatal(err)
	}
	res, err := h.ElicitURL(context.Background(), loopbackAsker, "k", &mcp.ElicitRequestParams{Mode: "url", Message: "m", URL: "https://billing.example.com/connect"})
	if err != nil || res.Action != "decline" {
		t.Fatalf("after the sign-in, the URL handler got %v %v", res, err)
	}
}
