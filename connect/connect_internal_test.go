package connect

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

func TestSafeNext(t *testing.T) {
	cases := map[string]string{
		"":                        "/ui/",
		"/ui/":                    "/ui/",
		"/ui/set_api_key?flow=ab": "/ui/set_api_key?flow=ab",
		"/ui/a%20b":               "/ui/a%20b",
		"//evil.com":              "/ui/",
		"///evil.com":             "/ui/",
		"https://evil.com":        "/ui/",
		"http:/ui/":               "/ui/",
		"/elsewhere":              "/ui/",
		"/ui":                     "/ui/",
		"/uix/":                   "/ui/",
		"/ui/../x":                "/ui/",
		"/ui/./x":                 "/ui/",
		"/ui/%2e%2e/x":            "/ui/",
		"/ui/x/..":                "/ui/",
		"/ui/\\evil":              "/ui/",
		"/ui/\tx":                 "/ui/",
		"/ui/é":                   "/ui/",
		"/ui/x#y":                 "/ui/x",
		"/ui/%zz":                 "/ui/",
		"/connect/0123abcd":       "/connect/0123abcd",
		"/connect/../ui/x":        "/ui/",
		"/connect/%2e%2e/x":       "/ui/",
		"/connect":                "/ui/",
		"/connectx/":              "/ui/",
		"//connect/x":             "/ui/",
	}
	for in, want := range cases {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidators(t *testing.T) {
	if !validFlowID("0123456789abcdef0123456789abcdef") || validFlowID("0123456789ABCDEF0123456789abcdef") ||
		validFlowID("0123456789abcdef0123456789abcde") || validFlowID("") || validFlowID("0123456789abcdef0123456789abcdeg") {
		t.Error("validFlowID")
	}
	tok, err := randomToken()
	if err != nil || !validToken(tok) || validToken(tok[1:]) || validToken(tok[:42]+"=") || validToken("") {
		t.Error("validToken")
	}
	for _, bad := range []string{"", "a b", "a\x00b", string(make([]byte, 65))} {
		if validPurpose(bad) {
			t.Errorf("validPurpose(%q)", bad)
		}
	}
	if purposeHeading("billing_key") != "Connect your payment provider" {
		t.Error("billing_key heading")
	}
}

func TestSealOpen(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := bytes.Repeat([]byte{1}, 32)
	s, err := New(Options{Store: st, MasterKey: key, BaseURL: "http://localhost", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pt := []byte("sk_test_123")
	a, err := s.seal("alice", "billing_key", pt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.seal("alice", "billing_key", pt)
	if bytes.Equal(a, b) || bytes.Equal(a[:12], b[:12]) {
		t.Fatal("nonce reused")
	}
	if got, err := s.open("alice", "billing_key", a); err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("open = %q, %v", got, err)
	}
	// The AAD binds owner and name; the separator prevents shifting bytes
	// between them.
	for _, c := range []struct{ p, n string }{{"bob", "billing_key"}, {"alice", "other"}, {"alice\x00billing", "key"}, {"alic", "e\x00billing_key"}} {
		if _, err := s.open(c.p, c.n, a); err == nil {
			t.Errorf("open as %q/%q succeeded", c.p, c.n)
		}
	}
	for _, blob := range [][]byte{nil, {}, a[:12], a[:27], append(append([]byte(nil), a[:len(a)-1]...), a[len(a)-1]^1)} {
		if _, err := s.open("alice", "billing_key", blob); err != errDecrypt {
			t.Errorf("open(%d bytes) err = %v, want errDecrypt", len(blob), err)
		}
	}
	other, _ := New(Options{Store: st, MasterKey: bytes.Repeat([]byte{2}, 32), BaseURL: "http://localhost"})
	if _, err := other.open("alice", "billing_key", a); err == nil {
		t.Error("another master key decrypted the blob")
	}
}

type outageErr struct{}

func (outageErr) Error() string     { return "database unreachable" }
func (outageErr) Unavailable() bool { return true }

// downStore is a store whose database is unreachable.
type downStore struct{ store.Store }

func (downStore) GetSession(context.Context, string) (*store.Session, error) { return nil, outageErr{} }

// An outage of the store is a 503 with Retry-After on the pages, like the
// MCP endpoint's retryable error, not a 500.
func TestPagesAnswer503WhileStoreIsDown(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Options{Store: downStore{st}, MasterKey: bytes.Repeat([]byte{1}, 32), BaseURL: "http://127.0.0.1:1",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/ui/set_api_key?flow=0123456789abcdef0123456789abcdef", nil)
	req.AddCookie(&http.Cookie{Name: s.CookieName(SessionCookie), Value: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"})
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
}
