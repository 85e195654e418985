package check

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
)

func (c *checker) caseFormInvalid(ctx context.Context) Result {
	keys := c.elicitations(mcp.ElicitationModeForm)
	if len(keys) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks no form"}
	}
	key := keys[0]
	s, err := elicit.ParseSchemaForAnswers(c.first.requests[key].elicit.RequestedSchema)
	if err != nil {
		return Result{Verdict: CouldNotTest, Observed: "the requested schema of " + clip(key, 40) + " is not a flat form schema: " + clip(err.Error(), 120)}
	}
	if c.acceptWithheld {
		return c.notRun("a refusal of an invalid answer proves something only next to a valid answer that was accepted")
	}
	if !c.acceptDeferred && (c.controlOut == nil || c.control != answerGood) {
		return Result{Verdict: CouldNotTest, Observed: "a valid form answer did not move the call on, so a refusal of an invalid one proves nothing" + strings.TrimPrefix(" ("+c.controlWhy+")", " ()")}
	}
	var seen []string
	for _, bad := range invalidAnswers(s) {
		op, why := c.startAsk(ctx, c.args)
		if op == nil {
			return Result{Verdict: CouldNotTest, Observed: why}
		}
		if _, ok := op.requests[key]; !ok {
			return Result{Verdict: CouldNotTest, Observed: "a fresh call did not ask " + clip(key, 40) + " again"}
		}
		resp := answers(op, answerGood)
		resp[key] = acceptWith(bad.content)
		o := c.retry(ctx, c.a, c.args, resp, op.state)
		switch {
		case o.err != nil:
			return Result{Verdict: CouldNotTest, Observed: bad.what + ": " + o.String()}
		case o.advanced(op):
			return Result{Verdict: Fail, Observed: bad.what + ": accepted, " + o.String()}
		}
		seen = append(seen, bad.what+": "+o.String())
	}
	if len(seen) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the schema has no rule an answer can break"}
	}
	return Result{Verdict: Pass, Observed: fmt.Sprintf("%d invalid answers, none accepted: %s", len(seen), strings.Join(seen, "; "))}
}

func (c *checker) caseFormSecret(context.Context) Result {
	keys := c.elicitations(mcp.ElicitationModeForm)
	if len(keys) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks no form"}
	}
	var checked, secret []string
	for _, key := range keys {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(c.first.requests[key].elicit.RequestedSchema, &s); err != nil {
			return Result{Verdict: CouldNotTest, Observed: "the requested schema of " + clip(key, 40) + " is not readable"}
		}
		for _, name := range sortedKeys(s.Properties) {
			checked = append(checked, clip(name, 40))
			if h, ok := elicit.LooksSecretProperty(name, s.Properties[name]); ok {
				secret = append(secret, fmt.Sprintf("%s %s: %s", clip(key, 40), quoted(name, 40), h))
			}
		}
	}
	if len(secret) > 0 {
		return Result{Verdict: Fail, Observed: "form mode asks for a secret: " + strings.Join(secret, "; ")}
	}
	if len(checked) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the forms have no properties"}
	}
	return Result{Verdict: Pass, Observed: "properties " + strings.Join(checked, ", ") + ": none looks like a secret"}
}

// urls returns the first round's URL-mode links by key.
func (c *checker) urls() map[string]string {
	m := map[string]string{}
	for _, k := range c.elicitations(mcp.ElicitationModeURL) {
		m[k] = c.first.requests[k].elicit.URL
	}
	return m
}

func (c *checker) caseURLSafe(context.Context) Result {
	links := c.urls()
	if len(links) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks nothing in URL mode"}
	}
	var bad, ok []string
	for _, key := range sortedKeys(links) {
		raw := links[key]
		probs := urlProblems(raw, append([]string{c.cfg.Token, c.cfg.OtherToken}, c.argValues()...))
		if len(probs) > 0 {
			bad = append(bad, clip(key, 40)+": "+strings.Join(probs, "; "))
			continue
		}
		note := ""
		if !sameOrigin(raw, c.cfg.URL) {
			note = " (on another origin than the MCP endpoint: make sure it is the server's own page)"
		}
		ok = append(ok, clip(key, 40)+": "+clip(c.redact(raw), 120)+note)
	}
	if len(bad) > 0 {
		return Result{Verdict: Fail, Observed: strings.Join(bad, " | ")}
	}
	return Result{Verdict: Pass, Observed: strings.Join(ok, "; ") + ": https or loopback, no userinfo, no credential-looking or user data"}
}

// sameOrigin reports whether two URLs have the same scheme and host.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

// urlProblems lists what is unsafe about a URL-mode link: elicit.CheckURL's
// rules (absolute, https or loopback http, no userinfo, no fragment),
// elicit.SecretsInURL's (a query parameter whose name looks like a
// credential, a JWT; the rule the elicit command warns by too), or one of
// the given values (tokens, argument values) anywhere in it.
func urlProblems(raw string, values []string) []string {
	var out []string
	if err := elicit.CheckURL(raw); err != nil {
		out = append(out, strings.TrimPrefix(err.Error(), elicit.ErrUnsafeURL.Error()+": "))
	}
	if _, err := url.Parse(raw); err != nil {
		return out
	}
	for _, s := range elicit.SecretsInURL(raw) {
		if s.Param == "" {
			out = append(out, "it carries a JWT")
			continue
		}
		out = append(out, fmt.Sprintf("query parameter %s looks like a credential (%q)", quoted(s.Param, 40), s.Word))
	}
	decoded, _ := url.QueryUnescape(raw)
	for i, v := range values {
		if len(v) < 3 {
			continue
		}
		if strings.Contains(raw, v) || strings.Contains(decoded, v) {
			what := "an argument value"
			if i < 2 {
				what = "the bearer token (the user)"
			}
			out = append(out, "it contains "+what)
		}
	}
	return out
}

// sessionCookie matches cookie names that carry a signed-in session.
var sessionCookie = regexp.MustCompile(`(?i)sess|sid|auth|login|token|jwt|remember|user`)

// loginInput matches the input of a sign-in form: a password, or a field
// named for a user name or e-mail address.
var loginInput = regexp.MustCompile(`(?is)<input\b[^>]*\b(type\s*=\s*["']?password\b|name\s*=\s*["']?(username|user|user_name|login|email)["'\s/>])`)

// formTag matches the opening of an HTML form.
var formTag = regexp.MustCompile(`(?i)<form\b`)

// loginPath matches the path of a sign-in or authorization endpoint.
var loginPath = regexp.MustCompile(`(?i)(^|/)(login|log-in|signin|sign-in|sign_in|authorize|oauth2?/auth|auth)(/|$)`)

// successPage matches a page that says the interaction is done or that
// someone is signed in.
var successPage = regexp.MustCompile(`(?i)signed in as|logged in as|successfully (connected|linked|signed in|logged in|authori[sz]ed|completed|saved)|is connected|you are connected|welcome back|now (linked|connected)|has been (linked|connected|authori[sz]ed)|you can (now )?close this (window|tab|page)`)

func (c *checker) caseURLNoLogin(ctx context.Context) Result {
	links := c.urls()
	if len(links) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks nothing in URL mode"}
	}
	key := sortedKeys(links)[0]
	link := links[key]
	own := sameOrigin(link, c.cfg.URL)
	switch {
	case c.cfg.FetchLinks == FetchNever:
		return Result{Verdict: CouldNotTest, Observed: "links are not opened (fetch-links never)"}
	case c.cfg.FetchLinks == FetchSafe && !own && !c.safeLink(link):
		return Result{Verdict: CouldNotTest, Observed: "the link of " + clip(key, 40) + " is neither on the endpoint's origin nor an https link that passes url-safe, so it was not opened (fetch-links safe; --fetch-links any opens it)"}
	}
	res, err := fetchNoLogin(ctx, link, c.cfg.FetchLinks == FetchSafe && !own)
	if err != nil {
		return Result{Verdict: CouldNotTest, Observed: "fetching the link of " + clip(key, 40) + ": " + clip(c.redact(err.Error()), 160)}
	}
	v, why := judgeLinkPage(res, c.names())
	return Result{Verdict: v, Observed: c.redact(res.String() + ": " + why)}
}

// safeLink reports whether a link on another origin than the endpoint may
// be opened under FetchSafe: https, passing url-safe.
func (c *checker) safeLink(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && len(urlProblems(raw, append([]string{c.cfg.Token, c.cfg.OtherToken}, c.argValues()...))) == 0
}

// names returns what a page would show of the checker's users: the
// tokens themselves (demo bearer tokens are user names) and, for a JWT,
// its subject, name and e-mail claims (read, not verified).
func (c *checker) names() []string {
	var out []string
	for _, tok := range []string{c.cfg.Token, c.cfg.OtherToken} {
		if len(tok) >= 3 {
			out = append(out, tok)
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			continue
		}
		var claims map[string]any
		_ = json.Unmarshal(b, &claims)
		for _, k := range []string{"sub", "name", "preferred_username", "email"} {
			if v, ok := claims[k].(string); ok && len(v) >= 3 {
				out = append(out, v)
			}
		}
	}
	return out
}

// judgeLinkPage judges what opening a URL-mode link with no cookies gave.
// Signed-in evidence is looked for first — a session cookie, a success
// message, the user's name — since a signed-in page may well link to a
// login page ("Not you? Switch account"); only a real sign-in form (a form
// with a password or user-name input), a redirect to a sign-in or
// authorization URL, or an HTTP 401 or 403 counts as asking for sign-in.
func judgeLinkPage(f *fetched, names []string) (Verdict, string) {
	ok := f.status >= 200 && f.status < 300
	login := ok && formTag.MatchString(f.body) && loginInput.MatchString(f.body)
	switch {
	case len(f.sessionCookies) > 0:
		return Fail, "a session cookie was set without any login"
	case ok && successPage.MatchString(f.body):
		return Fail, fmt.Sprintf("the page says %s without any login", quoted(successPage.FindString(f.body), 40))
	case ok && !login && mentions(f.body, names):
		return Fail, "the page names the user without any login"
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		return Pass, "refused without a login"
	case login:
		return Pass, "a sign-in form"
	case f.loginRedirect != "":
		return Pass, "a redirect to sign in (" + f.loginRedirect + ")"
	}
	return CouldNotTest, "neither a sign-in form, a redirect to sign in nor a refusal; inspect it by hand"
}

// mentions reports whether body has one of names as a word (not inside
// a longer word), ignoring case. Names are the user's input, so they are
// searched for as text, never compiled.
func mentions(body string, names []string) bool {
	lb := strings.ToLower(body)
	for _, n := range names {
		ln := strings.ToLower(n)
		if ln == "" {
			continue
		}
		for i := 0; i < len(lb); {
			j := strings.Index(lb[i:], ln)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(ln)
			before, _ := utf8.DecodeLastRuneInString(lb[:start])
			after, _ := utf8.DecodeRuneInString(lb[end:])
			if !wordRune(before) && !wordRune(after) {
				return true
			}
			i = start + 1
		}
	}
	return false
}

func wordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// fetched is what opening a link without cookies gave.
type fetched struct {
	chain          []string
	status         int
	body           string
	sessionCookies []string
	otherCookies   []string
	leftOrigin     string
	// loginRedirect is the origin and path of the first redirect to a
	// sign-in or authorization URL, on any origin.
	loginRedirect string
}

func (f *fetched) String() string {
	s := "GET " + strings.Join(f.chain, " → ") + fmt.Sprintf(": HTTP %d", f.status)
	if f.leftOrigin != "" {
		s += ", redirect to another origin not followed (" + f.leftOrigin + ")"
	}
	if len(f.otherCookies) > 0 {
		s += ", cookies set: " + strings.Join(f.otherCookies, ", ")
	}
	if len(f.sessionCookies) > 0 {
		s += ", session-like cookies set: " + strings.Join(f.sessionCookies, ", ")
	}
	return s
}

// errInternalAddress refuses a connection to a non-public address.
var errInternalAddress = errors.New("an internal or special-purpose address (loopback, private, link-local, shared, documentation, translation, …), not opened under fetch-links safe")

// publicOnly is a net.Dialer Control that refuses special-purpose
// addresses (specialPurpose); it runs on every connection, after name
// resolution.
func publicOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if specialPurpose(ip) {
		return errInternalAddress
	}
	return nil
}

// fetchNoLogin GETs raw with no cookie jar, following at most 5 redirects
// and only within raw's origin, and records every cookie set on the way.
// With public set, it connects only to public addresses (publicOnly).
func fetchNoLogin(ctx context.Context, raw string, public bool) (*fetched, error) {
	start, err := url.Parse(raw)
	if err != nil || (start.Scheme != "http" && start.Scheme != "https") {
		return nil, fmt.Errorf("not an http(s) URL")
	}
	f := &fetched{}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if public {
		// Directly, not through a proxy, which the dial check could not see past.
		tr.Proxy = nil
		tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, Control: publicOnly}).DialContext
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next := start
	for hop := 0; ; hop++ {
		loc, err := f.hop(ctx, cl, next)
		if err != nil {
			return nil, err
		}
		if loc == "" || hop == 5 {
			return f, nil
		}
		u, err := next.Parse(loc)
		if err != nil {
			return f, nil
		}
		if f.loginRedirect == "" && loginPath.MatchString(u.Path) {
			f.loginRedirect = clip(u.Scheme+"://"+u.Host+u.Path, 120)
		}
		if u.Scheme != start.Scheme || u.Host != start.Host {
			f.leftOrigin = clip(u.Scheme+"://"+u.Host, 80)
			return f, nil
		}
		next = u
	}
}

// hop GETs u, records its status, body (at most 64 KiB) and cookies, and
// returns where a redirect points ("" for none).
func (f *fetched) hop(ctx context.Context, cl *http.Client, u *url.URL) (location string, err error) {
	f.chain = append(f.chain, u.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	f.recordCookies(resp.Cookies())
	f.status, f.body = resp.StatusCode, string(body)
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return "", nil
	}
	return resp.Header.Get("Location"), nil
}

// recordCookies notes the names of the cookies set (deletions aside),
// session cookies apart from the others.
func (f *fetched) recordCookies(cookies []*http.Cookie) {
	for _, ck := range cookies {
		if ck.MaxAge < 0 || ck.Value == "" {
			continue // a deletion
		}
		if sessionCookie.MatchString(ck.Name) && !strings.Contains(strings.ToLower(ck.Name), "csrf") {
			f.sessionCookies = append(f.sessionCookies, clip(ck.Name, 40))
		} else {
			f.otherCookies = append(f.otherCookies, clip(ck.Name, 40))
		}
	}
}

func (c *checker) caseURLUnfinished(ctx context.Context) Result {
	if len(c.urls()) == 0 {
		return Result{Verdict: NotApplicable, Observed: "the tool asks nothing in URL mode"}
	}
	if c.withheld(c.first, answerGood) {
		return c.notRun("the round asks more than URL-mode requests, so accepting it sends valid answers too")
	}
	op, why := c.startAsk(ctx, c.args)
	if op == nil {
		return Result{Verdict: CouldNotTest, Observed: why}
	}
	o := c.retry(ctx, c.a, c.args, answers(op, answerGood), op.state)
	obs := "accept without opening the link: " + o.String()
	switch {
	case o.err != nil:
		return Result{Verdict: CouldNotTest, Observed: obs}
	case o.success():
		return Result{Verdict: Fail, Observed: obs + ": consent taken as completion"}
	case o.rpc != nil || o.complete || o.sameAsk(op):
		return Result{Verdict: Pass, Observed: obs}
	}
	// A new question: fine only if no URL request of the first round was
	// dropped as if done.
	for k, r := range op.requests {
		if _, again := o.requests[k]; r.mode() == mcp.ElicitationModeURL && !again {
			return Result{Verdict: CouldNotTest, Observed: obs + ": the call went on to another question; whether the page was taken as done cannot be seen"}
		}
	}
	return Result{Verdict: Pass, Observed: obs}
}
