package connect

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// anyCode is an identity provider that signs anyone in as alice, so only
// the sign-in cookie and the state stand between a request and a session.
type anyCode struct{}

func (anyCode) AuthCodeURL(state, nonce, verifier string) string {
	return "https://idp.example/authorize"
}
func (anyCode) Exchange(context.Context, string, string, string, string) (auth.Principal, error) {
	return auth.Principal{Issuer: "https://idp.example", Subject: "alice"}, nil
}

// FuzzSignInCallback: whatever cookie and query a request brings, without
// a sign-in this Service started (a sealed cookie with the same state) it
// gets no session; and a genuine cookie with its state does.
func FuzzSignInCallback(f *testing.F) {
	st, err := sqlite.Open(filepath.Join(f.TempDir(), "db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	s, err := New(Options{Store: st, MasterKey: bytes.Repeat([]byte{7}, 32), BaseURL: "http://localhost",
		Logger: slog.New(slog.DiscardHandler), SignIn: anyCode{}})
	if err != nil {
		f.Fatal(err)
	}
	// A genuine sign-in, to seed the corpus and check the positive case.
	rec := httptest.NewRecorder()
	s.startSignIn(rec, httptest.NewRequest("GET", "/ui/login", nil), "/ui/")
	cookie := rec.Result().Cookies()[0].Value
	blob, _ := base64.RawURLEncoding.DecodeString(cookie)
	plain, _ := s.openWith(signInAD, blob)
	var si signIn
	_ = json.Unmarshal(plain, &si)
	if status, signedIn := callback(s, cookie, url.Values{"state": {si.State}, "code": {"c"}}.Encode()); status != http.StatusSeeOther || !signedIn {
		f.Fatalf("genuine callback: %d, session %v", status, signedIn)
	}
	// The same state with a cookie sealed under another key, or expired.
	other, _ := New(Options{Store: st, MasterKey: bytes.Repeat([]byte{8}, 32), BaseURL: "http://localhost", Logger: slog.New(slog.DiscardHandler)})
	foreign, _ := other.sealWith(signInAD, plain)
	f.Add(base64.RawURLEncoding.EncodeToString(foreign), "state="+si.State+"&code=c")
	si.Expires = time.Now().Add(-time.Second).Unix()
	stale, _ := json.Marshal(si)
	sealed, _ := s.sealWith(signInAD, stale)
	f.Add(base64.RawURLEncoding.EncodeToString(sealed), "state="+si.State+"&code=c")
	vault, _ := s.seal("alice", "billing_key", plain) // a vault blob is not a sign-in
	f.Add(base64.RawURLEncoding.EncodeToString(vault), "state="+si.State+"&code=c")
	f.Add(cookie, "state=&code=c")
	f.Add(cookie, "code=c")
	f.Add("", "state="+si.State)
	f.Fuzz(func(t *testing.T, cookie, query string) {
		if status, signedIn := callback(s, cookie, query); status == http.StatusSeeOther || signedIn {
			t.Fatalf("cookie %q query %q: %d, session %v", cookie, query, status, signedIn)
		}
	})
}

// callback runs GET /ui/login/callback?query with the sign-in cookie and
// returns the status and whether a session cookie was set.
func callback(s *Service, cookie, query string) (int, bool) {
	r := httptest.NewRequest("GET", SignInCallbackPath, nil)
	r.URL.RawQuery = query
	if cookie != "" {
		r.Header.Set("Cookie", s.CookieName(SignInCookie)+"="+cookie)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	for _, c := range rec.Result().Cookies() {
		if c.Name == s.CookieName(SessionCookie) && c.Value != "" {
			return rec.Code, true
		}
	}
	return rec.Code, false
}
