package fakeoauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	redirect = "http://127.0.0.1:9/connect/callback"
	verifier = "abcdefghijklmnopqrstuvwxyz0123456789-._~ABCDEFG"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func start(t *testing.T) (*Server, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s, err := Start("127.0.0.1:0", &Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, cl := range []Client{{ID: "app", Secret: "app-secret", RedirectURI: redirect, Name: "Test app"},
		{ID: "other", Secret: "other-secret", RedirectURI: redirect, Name: "Other"}} {
		if err := s.RegisterClient(cl); err != nil {
			t.Fatal(err)
		}
	}
	return s, c
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func authorizeQuery(mod func(url.Values)) url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {redirect},
		"state": {"st4te"}, "code_challenge": {s256(verifier)}, "code_challenge_method": {"S256"}, "scope": {Scope}}
	if mod != nil {
		mod(q)
	}
	return q
}

var requestRe = regexp.MustCompile(`name="request" value="([^"]+)"`)

// approve runs the authorize page as user and returns the redirect's query.
func approve(t *testing.T, s *Server, q url.Values, user, decision string) url.Values {
	t.Helper()
	resp, err := noRedirect.Get(s.AuthURL() + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := requestRe.FindSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("authorize page: %d %s", resp.StatusCode, body)
	}
	resp, err = noRedirect.PostForm(s.AuthURL(), url.Values{"request": {string(m[1])}, "username": {user}, "decision": {decision}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), redirect+"?") {
		t.Fatalf("approve: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query()
}

type tokenAnswer struct {
	status int
	body   map[string]any
}

func postToken(t *testing.T, s *Server, form url.Values, basic ...string) tokenAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", s.TokenURL(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := tokenAnswer{status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&a.body); err != nil {
		t.Fatalf("token answer is not JSON: %v", err)
	}
	return a
}

func codeForm(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
}

func events(t *testing.T, s *Server, access string) (int, EventsResponse) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.EventsURL(), nil)
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out EventsResponse
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestHappyPathTwoUsers(t *testing.T) {
	s, _ := start(t)
	s.SetEvents("alice", []Event{{ID: "a1", Title: "Alice's dentist"}})
	s.SetEvents("bob", []Event{{ID: "b1", Title: "Bob's interview"}})
	access := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		q := approve(t, s, authorizeQuery(nil), user, "approve")
		if q.Get("state") != "st4te" || q.Get("code") == "" {
			t.Fatalf("redirect query %v", q)
		}
		a := postToken(t, s, codeForm(q.Get("code")), "app", "app-secret")
		if a.status != 200 || a.body["token_type"] != "Bearer" || a.body["refresh_token"] == "" {
			t.Fatalf("token: %d %v", a.status, a.body)
		}
		access[user] = a.body["access_token"].(string)
	}
	if access["alice"] == access["bob"] {
		t.Fatal("two users got the same token")
	}
	for user, want := range map[string]string{"alice": "Alice's dentist", "bob": "Bob's interview"} {
		status, ev := events(t, s, access[user])
		if status != 200 || ev.User != user || len(ev.Events) != 1 || ev.Events[0].Title != want {
			t.Fatalf("%s's events: %d %+v", user, status, ev)
		}
	}
	if n := s.AuthorizeRequests(); n != 2 {
		t.Fatalf("AuthorizeRequests = %d", n)
	}
	if len(s.Issued()) != 6 {
		t.Fatalf("Issued = %d values", len(s.Issued()))
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	s, _ := start(t)
	cases := []struct {
		name      string
		mod       func(url.Values)
		wantError string // "" = error page, no redirect
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "nobody") }, ""},
		{"other redirect_uri", func(q url.Values) { q.Set("redirect_uri", redirect+"x") }, ""},
		{"redirect_uri missing", func(q url.Values) { q.Del("redirect_uri") }, ""},
		{"implicit flow", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge", verifier[:43]); q.Set("code_challenge_method", "plain") }, "invalid_request"},
		{"method missing", func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
		{"bad challenge", func(q url.Values) { q.Set("code_challenge", "short") }, "invalid_request"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "admin") }, "invalid_scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := noRedirect.Get(s.AuthURL() + "?" + authorizeQuery(tc.mod).Encode())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if tc.wantError == "" {
				if resp.StatusCode != 400 || loc != "" {
					t.Fatalf("want an error page without redirect, got %d %q", resp.StatusCode, loc)
				}
				return
			}
			u, _ := url.Parse(loc)
			if resp.StatusCode != http.StatusSeeOther || u.Query().Get("error") != tc.wantError || u.Query().Get("state") != "st4te" || u.Query().Get("code") != "" {
				t.Fatalf("got %d %q", resp.StatusCode, loc)
			}
		})
	}
	q := approve(t, s, authorizeQuery(nil), "alice", "deny")
	if q.Get("error") != "access_denied" || q.Get("code") != "" || q.Get("state") != "st4te" {
		t.Fatalf("deny: %v", q)
	}
}

func TestTokenRefusals(t *testing.T) {
	s, c := start(t)
	code := func() string { return approve(t, s, authorizeQuery(nil), "alice", "approve").Get("code") }
	cases := []struct {
		name   string
		form   func(code string) url.Values
		basic  []string
		status int
		err    string
	}{
		{"no client auth", codeForm, nil, 401, "invalid_client"},
		{"wrong secret", codeForm, []string{"app", "nope"}, 401, "invalid_client"},
		{"other client", codeForm, []string{"other", "other-secret"}, 400, "invalid_grant"},
		{"unknown code", func(string) url.Values { return codeForm("nope") }, []string{"app", "app-secret"}, 400, "invalid_grant"},
		{"other redirect_uri", func(c string) url.Values { f := codeForm(c); f.Set("redirect_uri", redirect+"/x"); return f }, []string{"app", "app-secret"}, 400, "invalid_grant"},
		{"no verifier", func(c string) url.Values { f := codeForm(c); f.Del("code_verifier"); return f }, []string{"app", "app-secret"}, 400, "invalid_request"},
		{"wrong verifier", func(c string) url.Values { f := codeForm(c); f.Set("code_verifier", verifier+"x"); return f }, []string{"app", "app-secret"}, 400, "invalid_grant"},
		{"challenge as verifier", func(c string) url.Values { f := codeForm(c); f.Set("code_verifier", s256(verifier)); return f }, []string{"app", "app-secret"}, 400, "invalid_grant"},
		{"no grant type", func(c string) url.Values { f := codeForm(c); f.Del("grant_type"); return f }, []string{"app", "app-secret"}, 400, "invalid_request"},
		{"password grant", func(c string) url.Values { f := codeForm(c); f.Set("grant_type", "password"); return f }, []string{"app", "app-secret"}, 400, "unsupported_grant_type"},
		{"two auth methods", func(c string) url.Values { f := codeForm(c); f.Set("client_secret", "app-secret"); return f }, []string{"app", "app-secret"}, 400, "invalid_request"},
		{"repeated parameter", func(c string) url.Values { f := codeForm(c); f.Add("code", "x"); return f }, []string{"app", "app-secret"}, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := postToken(t, s, tc.form(code()), tc.basic...)
			if a.status != tc.status || a.body["error"] != tc.err || a.body["access_token"] != nil {
				t.Fatalf("got %d %v", a.status, a.body)
			}
		})
	}
	t.Run("client_secret_post works", func(t *testing.T) {
		f := codeForm(code())
		f.Set("client_id", "app")
		f.Set("client_secret", "app-secret")
		if a := postToken(t, s, f); a.status != 200 {
			t.Fatalf("got %d %v", a.status, a.body)
		}
	})
	t.Run("expired code", func(t *testing.T) {
		cd := code()
		c.add(DefaultCodeTTL)
		if a := postToken(t, s, codeForm(cd), "app", "app-secret"); a.status != 400 || a.body["error"] != "invalid_grant" {
			t.Fatalf("got %d %v", a.status, a.body)
		}
	})
	t.Run("replayed code revokes its tokens", func(t *testing.T) {
		cd := code()
		a := postToken(t, s, codeForm(cd), "app", "app-secret")
		if a.status != 200 {
			t.Fatalf("first use: %d %v", a.status, a.body)
		}
		if b := postToken(t, s, codeForm(cd), "app", "app-secret"); b.status != 400 || b.body["error"] != "invalid_grant" {
			t.Fatalf("replay: %d %v", b.status, b.body)
		}
		if status, _ := events(t, s, a.body["access_token"].(string)); status != 401 {
			t.Fatalf("token of a replayed code still works: %d", status)
		}
	})
}

func TestRefreshAndAPI(t *testing.T) {
	s, c := start(t)
	a := postToken(t, s, codeForm(approve(t, s, authorizeQuery(nil), "carol", "approve").Get("code")), "app", "app-secret")
	access, refresh := a.body["access_token"].(string), a.body["refresh_token"].(string)
	if status, ev := events(t, s, access); status != 200 || len(ev.Events) == 0 || !strings.Contains(ev.Events[0].Title, "carol") {
		t.Fatalf("default events: %d %+v", status, ev)
	}
	if status, _ := events(t, s, refresh); status != 401 {
		t.Fatalf("refresh token accepted as access token: %d", status)
	}
	if status, _ := events(t, s, "nope"); status != 401 {
		t.Fatalf("unknown token: %d", status)
	}
	c.add(DefaultTokenTTL)
	if status, _ := events(t, s, access); status != 401 {
		t.Fatalf("expired token: %d", status)
	}
	rf := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
	b := postToken(t, s, rf, "app", "app-secret")
	if b.status != 200 || b.body["access_token"] == access {
		t.Fatalf("refresh: %d %v", b.status, b.body)
	}
	if status, ev := events(t, s, b.body["access_token"].(string)); status != 200 || ev.User != "carol" {
		t.Fatalf("refreshed token: %d %+v", status, ev)
	}
	if again := postToken(t, s, rf, "app", "app-secret"); again.status != 400 || again.body["error"] != "invalid_grant" {
		t.Fatalf("refresh token reused: %d %v", again.status, again.body)
	}
	s.Revoke("carol")
	if status, _ := events(t, s, b.body["access_token"].(string)); status != 401 {
		t.Fatalf("revoked token: %d", status)
	}
	if again := postToken(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {b.body["refresh_token"].(string)}}, "app", "app-secret"); again.status != 400 {
		t.Fatalf("revoked refresh token: %d %v", again.status, again.body)
	}
	if hs := s.AuthorizationHeaders(); len(hs) == 0 {
		t.Fatal("no Authorization header recorded")
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "example.com:80", "nohost"} {
		if s, err := Start(addr, nil); err == nil {
			s.Close()
			t.Errorf("Start(%q) accepted", addr)
		}
	}
}

// FuzzToken throws arbitrary forms and Basic credentials at the token
// endpoint: the answer is always RFC 6749 JSON, and a token is only ever
// issued for the one valid code with its verifier.
func FuzzToken(f *testing.F) {
	f.Add("grant_type=authorization_code&code=x&redirect_uri=y&code_verifier=z", "app", "app-secret")
	f.Add("grant_type=refresh_token&refresh_token=%ff", "a%zz", "")
	f.Add("client_id=app&client_secret=app-secret&grant_type=authorization_code", "", "")
	f.Add("%", "app", "app-secret")
	s := New(nil)
	if err := s.RegisterClient(Client{ID: "app", Secret: "app-secret", RedirectURI: redirect}); err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body, id, secret string) {
		req, _ := http.NewRequest("POST", "http://fake"+TokenPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if id != "" || secret != "" {
			req.SetBasicAuth(id, secret)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("answer is not JSON: %q", rec.Body.String())
		}
		if rec.Code == 200 || out["access_token"] != nil {
			t.Fatalf("token issued without a valid code: %d %v", rec.Code, out)
		}
		if e, _ := out["error"].(string); !map[string]bool{"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unsupported_grant_type": true}[e] {
			t.Fatalf("error %q is not an RFC 6749 §5.2 code", e)
		}
	})
}
