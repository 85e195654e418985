package check

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fake is a small 2026-07-28 server for one tool "t": its first call asks
// (ask, or a form), a retry with a state it issued completes, and one
// with any other state is refused. hook, when set, answers a request
// first (returning true when it did).
type fake struct {
	// state is the requestState of the n-th first call (from 0) of user.
	state func(user string, n int) string
	ask   string
	// refuseRetries refuses every retry, even with a state it issued.
	refuseRetries bool
	// tools are more tools/list entries (JSON objects, comma-separated).
	tools  string
	hook   func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) bool
	calls  atomic.Int32
	issued sync.Map
}

func (f *fake) start(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestState *string `json:"requestState"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if f.hook != nil && f.hook(w, r, req.Method, req.ID) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var result string
		switch {
		case req.Method == "server/discover":
			result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}`
		case req.Method == "tools/list":
			tools := `{"name":"t","inputSchema":{"type":"object"}}`
			if f.tools != "" {
				tools += "," + f.tools
			}
			result = `{"resultType":"complete","tools":[` + tools + `],"ttlMs":0,"cacheScope":"private"}`
		case req.Params.RequestState == nil:
			ask := f.ask
			if ask == "" {
				ask = `{"q":{"method":"elicitation/create","params":{"message":"Pick","requestedSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}}}`
			}
			st := "AQJrMSBk6XtB1WdmdKiZ_8Cht9hXI6JERi4TMLPwzpGk"
			if f.state != nil {
				st = f.state(user, int(f.calls.Add(1)-1))
			}
			f.issued.Store(st, true)
			result = fmt.Sprintf(`{"resultType":"input_required","requestState":%q,"inputRequests":%s}`, st, ask)
		case f.refuseRetries || !f.known(*req.Params.RequestState):
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"invalid requestState"}}`, req.ID)
			return
		default:
			result = `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func (f *fake) known(st string) bool { _, ok := f.issued.Load(st); return ok }

// TestStatePlaintextOnEvidence: a state passes as sealed only when it is
// long enough for an authenticator and differs between operations and
// users; a short or constant one is "could not test", with the reason.
func TestStatePlaintextOnEvidence(t *testing.T) {
	const sealed = "AQJrMSBk6XtB1WdmdKiZ_8Cht9hXI6JERi4TMLPwzpGk"
	for _, tc := range []struct {
		name  string
		state func(user string, n int) string
		want  Verdict
		says  string
	}{
		{"one-character constant", func(string, int) string { return "x" }, CouldNotTest, "too short to carry an authenticator"},
		{"15 bytes of base64", func(string, int) string { return "AQJrMSBk6XtB1WdmdKiZ" }, CouldNotTest, "15 bytes decoded"},
		{"a long constant", func(string, int) string { return sealed }, CouldNotTest, "two operations got the same"},
		{"per user, constant per user", func(u string, _ int) string { return sealed[:40] + u[:1] + "AAA" }, CouldNotTest, "two operations got the same"},
		// bob's only first call comes right after alice's last, and gets
		// the same state.
		{"the same for every user", func(u string, n int) string {
			if u == "bob" {
				n--
			}
			return sealed[:40] + fmt.Sprintf("%04d", n)
		}, CouldNotTest, "two users got the same"},
		{"fresh per operation", func(_ string, n int) string { return sealed[:40] + fmt.Sprintf("%04d", n) }, Pass, "differs for another operation and for another user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{state: tc.state}
			rep, err := Run(context.Background(), Config{URL: f.start(t), Tool: "t", Token: "alice", OtherToken: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Result(CaseStatePlaintext)
			if r.Verdict != tc.want || !strings.Contains(r.Observed, tc.says) {
				t.Errorf("%s %q; want %s saying %q", r.Verdict, r.Observed, tc.want, tc.says)
			}
		})
	}
}

// TestJudgeLinkPage: signed-in evidence is looked for before sign-in
// evidence, and only a real sign-in form or a redirect to a sign-in URL
// counts as asking to sign in.
func TestJudgeLinkPage(t *testing.T) {
	loginForm := `<h1>Sign in</h1><form method="post" action="/ui/login"><input type="text" id="username" name="username" required><input type="hidden" name="csrf" value="x"><button>Sign in</button></form>`
	for _, tc := range []struct {
		name string
		f    fetched
		want Verdict
	}{
		{"signed-in page linking to login", fetched{status: 200, body: `Welcome alice, your deploy account is now linked. <a href="/login">Not you? Switch account</a>`}, Fail},
		{"the user named, a login link", fetched{status: 200, body: `<p>Account of alice.</p><a href="/login">Log in as someone else</a>`}, Fail},
		{"success words", fetched{status: 200, body: `<p>You can close this window.</p>`}, Fail},
		{"a session cookie", fetched{status: 302, sessionCookies: []string{"session"}}, Fail},
		{"a sign-in form", fetched{status: 200, body: loginForm}, Pass},
		{"a password form", fetched{status: 200, body: `<form><input name=pw type=password></form>`}, Pass},
		{"a sign-in form naming the user", fetched{status: 200, body: `Continue as alice? ` + loginForm}, Pass},
		{"a redirect to the issuer", fetched{status: 302, leftOrigin: "https://idp.example", loginRedirect: "https://idp.example/authorize"}, Pass},
		{"refused", fetched{status: 401}, Pass},
		{"only the word login", fetched{status: 200, body: `<a href="/login">Log in</a> to see more`}, CouldNotTest},
		{"a redirect elsewhere", fetched{status: 302, leftOrigin: "https://cdn.example"}, CouldNotTest},
		{"a name inside a word", fetched{status: 200, body: `<p>Malice aforethought.</p>`}, CouldNotTest},
		{"the user named in capitals", fetched{status: 200, body: `<p>ALICE's settings</p>`}, Fail},
		{"a name at the very end", fetched{status: 200, body: `account: bob`}, Fail},
		{"signed out, sign in again", fetched{status: 200, body: `<p>You were successfully signed out.</p>` + loginForm}, Pass},
		{"successfully connected", fetched{status: 200, body: `<p>Calendar successfully connected.</p>`}, Fail},
	} {
		if v, why := judgeLinkPage(&tc.f, []string{"alice", "bob"}); v != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, v, why, tc.want)
		}
	}
}

// linkServer is a fake whose tool asks in URL mode for link.
func linkServer(t *testing.T, link string) string {
	return (&fake{ask: fmt.Sprintf(`{"l":{"method":"elicitation/create","params":{"mode":"url","message":"Open","url":%q}}}`, link)}).start(t)
}

// TestFetchLinksPolicy: under the default policy the checker opens no
// link the server points at another loopback port or an internal https
// host, and under "any" it does.
func TestFetchLinksPolicy(t *testing.T) {
	var hits atomic.Int32
	page := func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<form><input type="password" name="p"></form>`)
	}
	internal := httptest.NewServer(http.HandlerFunc(page))
	t.Cleanup(internal.Close)
	internalTLS := httptest.NewTLSServer(http.HandlerFunc(page))
	t.Cleanup(internalTLS.Close)
	for _, tc := range []struct {
		name   string
		link   string
		policy LinkPolicy
		want   Verdict
		says   string
		hit    bool
	}{
		{"http on another origin, safe", internal.URL + "/ui", "", CouldNotTest, "was not opened", false},
		{"https on loopback, safe", internalTLS.URL + "/ui", FetchSafe, CouldNotTest, "special-purpose address", false},
		{"never", internal.URL + "/ui", FetchNever, CouldNotTest, "not opened", false},
		{"http on another origin, any", internal.URL + "/ui", FetchAny, Pass, "a sign-in form", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			rep, err := Run(context.Background(), Config{URL: linkServer(t, tc.link), Tool: "t", Token: "alice", FetchLinks: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Result(CaseURLNoLogin)
			if r.Verdict != tc.want || !strings.Contains(r.Observed, tc.says) {
				t.Errorf("%s %q; want %s saying %q", r.Verdict, r.Observed, tc.want, tc.says)
			}
			if got := hits.Load() > 0; got != tc.hit {
				t.Errorf("the link's server was reached: %v, want %v", got, tc.hit)
			}
		})
	}
}

// TestPublicOnly: every special-purpose block is refused, from its first
// to its last address, and the addresses just outside it are not.
func TestPublicOnly(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.215.14:443", true},
		{"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", true},
		// IPv4: first, last, and the neighbours outside.
		{"0.0.0.0:80", false}, {"0.255.255.255:80", false}, {"1.0.0.0:80", true},
		{"9.255.255.255:80", true}, {"10.0.0.0:80", false}, {"10.255.255.255:80", false}, {"11.0.0.0:80", true},
		{"100.63.255.255:80", true}, {"100.64.0.0:80", false}, {"100.100.100.200:80", false}, {"100.127.255.255:80", false}, {"100.128.0.0:80", true},
		{"126.255.255.255:80", true}, {"127.0.0.0:80", false}, {"127.255.255.255:80", false}, {"128.0.0.0:80", true},
		{"169.253.255.255:80", true}, {"169.254.0.0:80", false}, {"169.254.169.254:80", false}, {"169.254.255.255:80", false}, {"169.255.0.0:80", true},
		{"172.15.255.255:80", true}, {"172.16.0.0:80", false}, {"172.31.255.255:80", false}, {"172.32.0.0:80", true},
		{"191.255.255.255:80", true}, {"192.0.0.0:80", false}, {"192.0.0.255:80", false}, {"192.0.1.0:80", true},
		{"192.0.2.0:80", false}, {"192.0.2.255:80", false}, {"192.0.3.0:80", true},
		{"192.88.98.255:80", true}, {"192.88.99.0:80", false}, {"192.88.99.255:80", false}, {"192.88.100.0:80", true},
		{"192.167.255.255:80", true}, {"192.168.0.0:80", false}, {"192.168.255.255:80", false}, {"192.169.0.0:80", true},
		{"198.17.255.255:80", true}, {"198.18.0.0:80", false}, {"198.19.255.255:80", false}, {"198.20.0.0:80", true},
		{"198.51.99.255:80", true}, {"198.51.100.0:80", false}, {"198.51.100.255:80", false}, {"198.51.101.0:80", true},
		{"203.0.112.255:80", true}, {"203.0.113.0:80", false}, {"203.0.113.255:80", false}, {"203.0.114.0:80", true},
		{"223.255.255.255:80", true}, {"224.0.0.0:80", false}, {"239.255.255.255:80", false},
		{"240.0.0.0:80", false}, {"255.255.255.254:80", false}, {"255.255.255.255:80", false},
		// IPv6.
		{"[::]:443", false}, {"[::1]:443", false}, {"[::2]:443", false}, {"[::ffff:127.0.0.1]:443", false},
		{"[::ffff:100.64.0.1]:443", false}, {"[::ffff:93.184.215.14]:443", true},
		{"[64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff]:443", true}, {"[64:ff9b::]:443", false}, {"[64:ff9b::a9fe:a9fe]:443", false},
		{"[64:ff9b::ffff:ffff]:443", false}, {"[64:ff9b::1:0:0]:443", true},
		{"[64:ff9b:1::]:443", false}, {"[64:ff9b:1:ffff:ffff:ffff:ffff:ffff]:443", false}, {"[64:ff9b:2::]:443", true},
		{"[ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", true}, {"[100::]:443", false}, {"[100::ffff:ffff:ffff:ffff]:443", false}, {"[100:0:0:1::]:443", true},
		{"[2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", true}, {"[2001::]:443", false}, {"[2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff]:443", false}, {"[2001:200::]:443", true},
		{"[2001:db7:ffff:ffff:ffff:ffff:ffff:ffff]:443", true}, {"[2001:db8::]:443", false}, {"[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:443", false}, {"[2001:db9::]:443", true},
		{"[2002:7f00:1::]:443", false}, {"[2002:a9fe:a9fe::1]:443", false}, {"[2002:c000:204::1]:443", false}, {"[2002:5db8:d70e::1]:443", true},
		{"[3fff::1]:443", false}, {"[5f00::1]:443", false},
		{"[fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", true}, {"[fc00::]:443", false}, {"[fd00::1]:443", false}, {"[fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", false},
		{"[fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", true}, {"[fe80::]:443", false}, {"[fe80::1%25eth0]:443", false}, {"[febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", false},
		{"[fec0::1]:443", false}, {"[ff00::]:443", false}, {"[ff02::1]:443", false}, {"[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:443", false},
		{"not-an-ip:443", false},
	} {
		if err := publicOnly("tcp", tc.addr, nil); (err == nil) != tc.ok {
			t.Errorf("publicOnly(%s) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
}

// TestStartErrors: a refused token or an answer that is not MCP stops
// the run before any case, with a message that says which.
func TestStartErrors(t *testing.T) {
	status := func(method string, code int, ctype, body string) func(http.ResponseWriter, *http.Request, string, json.RawMessage) bool {
		return func(w http.ResponseWriter, _ *http.Request, m string, _ json.RawMessage) bool {
			if m != method {
				return false
			}
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(code)
			fmt.Fprint(w, body)
			return true
		}
	}
	// bearer is status with a Bearer challenge, which makes a refusal MCP's.
	bearer := func(method string, code int, ctype, body string) func(http.ResponseWriter, *http.Request, string, json.RawMessage) bool {
		return func(w http.ResponseWriter, r *http.Request, m string, id json.RawMessage) bool {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			return status(method, code, ctype, body)(w, r, m, id)
		}
	}
	const rpcRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}`
	const csrfPage = `<!doctype html><title>Forbidden</title><p>CSRF check failed</p>`
	for _, tc := range []struct {
		name  string
		hook  func(http.ResponseWriter, *http.Request, string, json.RawMessage) bool
		token string
		kind  string
		says  string
	}{
		{"401 on discovery", bearer("server/discover", 401, "text/plain", "no"), "alice", KindTokenRefused, "the server refused the token: HTTP 401 on server/discover"},
		{"401 without a token", bearer("server/discover", 401, "text/plain", "no"), "", KindTokenRefused, "the server requires a token: HTTP 401 on server/discover"},
		{"403 JSON-RPC on tools/list", status("tools/list", 403, "application/json", rpcRefusal), "alice", KindTokenRefused, "HTTP 403 on tools/list"},
		{"401 on the first call", bearer("tools/call", 401, "text/plain", "no"), "alice", KindTokenRefused, "HTTP 401 on the first tools/call"},
		{"HTML 403 (a CSRF refusal page)", status("server/discover", 403, "text/html; charset=utf-8", csrfPage), "alice", KindNotMCP, "not an MCP endpoint: HTTP 403 text/html; charset=utf-8 on server/discover"},
		{"text 401 with a Basic challenge", func(w http.ResponseWriter, r *http.Request, m string, id json.RawMessage) bool {
			w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
			return status("server/discover", 401, "text/plain", "no")(w, r, m, id)
		}, "alice", KindNotMCP, "not an MCP endpoint: HTTP 401"},
		{"an HTML page", status("server/discover", 200, "text/html", "<html>hi</html>"), "alice", KindNotMCP, "not an MCP endpoint: HTTP 200 text/html on server/discover"},
		{"404", status("server/discover", 404, "text/plain", "404 page not found"), "alice", KindNotMCP, "not an MCP endpoint: HTTP 404"},
		{"500 not JSON", status("server/discover", 500, "text/plain", "boom"), "alice", KindNotMCP, "not an MCP endpoint: HTTP 500"},
		{"JSON that is not JSON-RPC", status("tools/list", 200, "application/json", `{"hello":1}`), "alice", KindNotMCP, "on tools/list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), Config{URL: (&fake{hook: tc.hook}).start(t), Tool: "t", Token: tc.token})
			var se *StartError
			if !errors.As(err, &se) || se.Kind != tc.kind || !strings.Contains(se.Message, tc.says) {
				t.Fatalf("report %v, error %v; want a %s StartError saying %q", rep != nil, err, tc.kind, tc.says)
			}
		})
	}
}

// TestRedaction: a server that echoes the Authorization header, and a URL
// with a password, leak neither into errors nor reports — not even a
// token cut in half where the text is clipped.
func TestRedaction(t *testing.T) {
	const tok, other, pw = "SuperSecret99", "OtherSecret77", "pw-secret-42"
	echo := func(method string) func(http.ResponseWriter, *http.Request, string, json.RawMessage) bool {
		return func(w http.ResponseWriter, r *http.Request, m string, id json.RawMessage) bool {
			if m != method {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			// The token lands across the 100-character clip of an RPC
			// message in the report.
			msg := strings.Repeat("x", 76) + " bad token " + r.Header.Get("Authorization")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%q}}`, id, msg)
			return true
		}
	}
	leaks := func(t *testing.T, what, s string) {
		t.Helper()
		basic := base64.StdEncoding.EncodeToString([]byte("user:" + pw))
		for _, secret := range []string{tok, other, pw, tok[:6], other[:6], pw[:6], basic, basic[:12]} {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows %q: %s", what, secret, s)
			}
		}
	}
	withPW := func(base string) string { return strings.Replace(base, "http://", "http://user:"+pw+"@", 1) }

	_, err := Run(context.Background(), Config{URL: withPW((&fake{hook: echo("tools/list")}).start(t)), Tool: "t", Token: tok, OtherToken: other})
	if err == nil {
		t.Fatal("no error")
	}
	leaks(t, "the tools/list error", err.Error())
	if !strings.Contains(err.Error(), "bad token Bearer <token>") {
		t.Errorf("the tools/list error does not show the redacted message: %v", err)
	}

	// Without a token, net/http sends the userinfo as HTTP Basic
	// credentials, base64 of user:password, which the server echoes.
	_, err = Run(context.Background(), Config{URL: withPW((&fake{hook: echo("tools/list")}).start(t)), Tool: "t"})
	if err == nil {
		t.Fatal("no error")
	}
	leaks(t, "the tools/list error without a token", err.Error())
	if !strings.Contains(err.Error(), "bad token Basic <basic-credentials>") {
		t.Errorf("the tools/list error does not show the redacted Basic credentials: %v", err)
	}

	for _, tc := range []struct{ method, tok string }{{"server/discover", tok}, {"tools/call", tok}, {"server/discover", ""}, {"tools/call", ""}} {
		method := tc.method
		rep, err := Run(context.Background(), Config{URL: withPW((&fake{hook: echo(method)}).start(t)), Tool: "t", Token: tc.tok, OtherToken: other})
		if err != nil {
			t.Fatal(err)
		}
		var text, js strings.Builder
		_ = rep.WriteText(&text)
		_ = rep.WriteJSON(&js)
		leaks(t, method+" text report", text.String())
		leaks(t, method+" JSON report", js.String())
		if !strings.Contains(text.String(), "user:xxxxx@") {
			t.Errorf("the header does not show the redacted URL:\n%s", text.String())
		}
	}
}

// TestRedactURL: the password of a URL that does not parse is masked
// too, by the text between "://" and the last "@" before the next "/".
func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ url, in, want string }{
		{"http://u:SECRET PW@127.0.0.1:3799/mcp", `--url "http://u:SECRET PW@127.0.0.1:3799/mcp" is bad`, `--url "http://u:xxxxx@127.0.0.1:3799/mcp" is bad`},
		{"http://u:SECRET PW@127.0.0.1:3799/mcp", "SECRET PW and SECRET%20PW", "xxxxx and xxxxx"},
		{"http://u:a@b@host/mcp", "http://u:a@b@host/mcp", "http://u:xxxxx@host/mcp"},
		{"http://u:pw-1234@host/x@y", "http://u:pw-1234@host/x@y", "http://u:xxxxx@host/x@y"},
		{"http://host/x@y", "http://host/x@y", "http://host/x@y"},
		{"http://user:p%41ss@host/mcp", "pAss p%41ss " + base64.StdEncoding.EncodeToString([]byte("user:pAss")), "xxxxx xxxxx <basic-credentials>"},
		{"http://tok123@host/mcp", "http://tok123@host/mcp tok123 " + base64.StdEncoding.EncodeToString([]byte("tok123:")), "http://xxxxx@host/mcp xxxxx <basic-credentials>"},
	} {
		cfg := Config{URL: tc.url}
		if got := cfg.Redact(tc.in); got != tc.want {
			t.Errorf("URL %q: Redact(%q) = %q, want %q", tc.url, tc.in, got, tc.want)
		}
		if !cfg.HasUserinfo() != (tc.url == "http://host/x@y") {
			t.Errorf("HasUserinfo(%q) = %v", tc.url, cfg.HasUserinfo())
		}
	}
}

func FuzzJudgeLinkPage(f *testing.F) {
	f.Add(200, `<form><input type="password"></form>`, "alice")
	f.Add(200, `Welcome alice, now linked. <a href="/login">x</a>`, "alice")
	f.Add(302, ``, "(")
	f.Fuzz(func(t *testing.T, status int, body, name string) {
		v, why := judgeLinkPage(&fetched{status: status, body: body}, []string{name})
		if why == "" || (v != Pass && v != Fail && v != CouldNotTest) {
			t.Fatalf("%q: %s %q", body, v, why)
		}
	})
}

// TestOtherToolNamed: a named other tool is checked against tools/list: an
// unknown one stops the run, one whose required arguments are not in the
// arguments says so, and one whose are is called with them.
func TestOtherToolNamed(t *testing.T) {
	const tools = `{"name":"needs_id","inputSchema":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}},` +
		`{"name":"needs_n","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`
	url := (&fake{tools: tools}).start(t)
	_, err := Run(context.Background(), Config{URL: url, Tool: "t", OtherTool: "nope"})
	var se *StartError
	if !errors.As(err, &se) || se.Kind != KindNoTool || !strings.Contains(se.Message, `no tool "nope" on the server`) {
		t.Errorf("unknown --other-tool: %v; want a %s StartError", err, KindNoTool)
	}
	for _, tc := range []struct {
		other, args string
		verdict     Verdict
		says        string
	}{
		{"needs_id", `{"n":1}`, CouldNotTest, `the other tool "needs_id" requires the arguments "id", which the arguments given (--args) lack`},
		{"t", `{}`, CouldNotTest, "the other tool named is the checked tool itself"},
		// The fake lets any tool take the state: the named tool was called.
		{"needs_n", `{"n":1}`, Fail, `sent to "needs_n"`},
	} {
		rep, err := Run(context.Background(), Config{URL: url, Tool: "t", OtherTool: tc.other, Args: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Result(CaseReplayOtherTool)
		if r.Verdict != tc.verdict || !strings.Contains(r.Observed, tc.says) || strings.Contains(r.Observed, "name one with --other-tool") {
			t.Errorf("--other-tool %s: %s %q; want %s saying %q", tc.other, r.Verdict, r.Observed, tc.verdict, tc.says)
		}
	}
}

// FuzzUserinfo: every http(s) URL from which net/http would send Basic
// credentials is seen to carry userinfo, and Redact masks its password
// in the URL itself.
func FuzzUserinfo(f *testing.F) {
	f.Add("http://u:SECRET PW@127.0.0.1:3799/mcp")
	f.Add("http://user:p%41ss@host/mcp")
	f.Add("https://a@b@host/x@y")
	f.Add("http://host?x@y/z")
	f.Fuzz(func(t *testing.T, raw string) {
		cfg := Config{URL: raw}
		red := cfg.Redact(raw)
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
			return
		}
		if !cfg.HasUserinfo() {
			t.Fatalf("%q has userinfo %q but HasUserinfo is false", raw, u.User)
		}
		if pw, ok := u.User.Password(); ok && len(pw) >= 3 && !strings.Contains(red, "xxxxx") {
			t.Fatalf("%q: the password is not masked: %q", raw, red)
		}
	})
}

// TestRedactShortToken: a token shorter than MinMaskedToken (a demo token)
// is masked only where it stands as a credential, so text that merely
// contains it (a label) is not garbled; a long token is masked anywhere.
func TestRedactShortToken(t *testing.T) {
	for _, tc := range []struct{ token, in, want string }{
		{"hu6", `labelled "hu6 label"`, `labelled "hu6 label"`},
		{"hu6", "bad token Bearer hu6 (bearer hu6)", "bad token Bearer <token> (bearer <token>)"},
		{"alice", "alice's draft; Authorization: Bearer alice", "alice's draft; Authorization: Bearer <token>"},
		{"SuperSecret99", `labelled "SuperSecret99 label", Bearer SuperSecret99`, `labelled "<token> label", Bearer <token>`},
	} {
		cfg := Config{URL: "http://127.0.0.1:3000/mcp", Token: tc.token}
		if got := cfg.Redact(tc.in); got != tc.want {
			t.Errorf("token %q: Redact(%q) = %q, want %q", tc.token, tc.in, got, tc.want)
		}
	}
}
