package connect

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/store"
)

// msgCSRFRefused answers a form whose csrf field is missing, malformed or
// not this browser session's. The server cannot tell which (a page older
// than the last sign-in, another browser's page, an edited or forged
// form), so the text claims none of them.
const (
	msgCSRFRefused = "This form's security token does not match your current sign-in, so it was refused: the page may be older than your last sign-in, or the form was changed."
	msgCSRFAgain   = " Nothing was stored. Open the link again for a fresh form."
)

// maxFormBytes bounds POST bodies; a form with a 4 KiB key is far smaller.
const maxFormBytes = 64 << 10

// securityHeaders go on every response: no scripts, no framing
// (clickjacking the key form), no caching and no Referer leaking the flow
// URL to another site. The referrer policy is same-origin, not
// no-referrer: under no-referrer a browser sends "Origin: null" on the
// pages' own form posts, which sameOrigin could then not tell from a
// sandboxed frame's or a cross-site redirect's.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
	{"X-Frame-Options", "DENY"},
	{"Cache-Control", "no-store"},
	{"Referrer-Policy", "same-origin"},
	{"X-Content-Type-Options", "nosniff"},
}

// Handler returns the HTTP handler for the pages. Mount it at "/ui/"; it
// expects the full path (/ui/login, ...), not a stripped one.
//
//	GET  /ui/                    who am I (or redirect to login)
//	GET  /ui/login?next=<path>   login form
//	POST /ui/login               sign in (double-submit CSRF), 303 to next
//	POST /ui/logout              sign out (session CSRF)
//	GET  /ui/set_api_key?flow=id key form for the flow's own user only
//	POST /ui/set_api_key         store the key encrypted, complete the flow
//	GET  /connect/<flow id>      OAuth flows: who is asking, and a button
//	POST /connect/<flow id>      same user only: redirect to the provider
//	GET  /connect/callback       the provider's redirect back (see oauth.go)
//	GET  /ui/login/callback      the identity provider's redirect back (signin.go)
//
// Mount it at "/connect/" too when OAuth providers are added
// (AddOAuthProvider). Other methods get 405, other paths 404.
//
// Before any of that, a request that carries one of the pages' cookies
// more than once gets 400 and a page saying so (id "cookie-conflict"),
// its copies of that cookie are expired, and nothing else happens: the
// server cannot tell which copy is the user's, and a second one is how
// another origin of the same site (another port of this host, a sibling
// subdomain) makes the user act in its account (cookie tossing).
func (s *Service) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Service) serveHTTP(w http.ResponseWriter, r *http.Request) {
	for _, h := range securityHeaders {
		w.Header().Set(h[0], h[1])
	}
	if bad := s.repeatedCookies(r); len(bad) > 0 {
		s.refuseRepeatedCookies(w, r, bad)
		return
	}
	type route struct{ get, post http.HandlerFunc }
	var rt route
	switch r.URL.Path {
	case "/ui/":
		rt = route{get: s.getHome}
	case "/ui/login":
		rt = route{get: s.getLogin, post: s.postLogin}
	case "/ui/logout":
		rt = route{post: s.postLogout}
	case "/ui/set_api_key":
		rt = route{get: s.getKeyForm, post: s.postKey}
	case callbackPath:
		rt = route{get: s.getCallback}
	case SignInCallbackPath:
		rt = route{get: s.getSignInCallback}
	default:
		if strings.HasPrefix(r.URL.Path, connectPrefix) {
			rt = route{get: s.getConnect, post: s.postConnect}
			break
		}
		s.message(w, http.StatusNotFound, "Not found", "There is no page here.", "not-found", true, nil)
		return
	}
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && rt.get != nil:
		rt.get(w, r) // net/http drops the body of a HEAD answer
	case r.Method == http.MethodPost && rt.post != nil:
		if !sameOrigin(r, s.baseURL) {
			s.audit(r.Context(), slog.LevelWarn, "cross_origin_refused",
				slog.String("path", r.URL.Path), slog.String("origin", r.Header.Get("Origin")),
				slog.String("sec_fetch_site", r.Header.Get("Sec-Fetch-Site")), remote(r))
			s.message(w, http.StatusForbidden, "Request refused", "This form did not come from this site. Nothing was stored.", "error", true, nil)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				s.message(w, http.StatusRequestEntityTooLarge, "Too large", "The form was too large. Nothing was stored.", "error", true, nil)
				return
			}
			s.message(w, http.StatusBadRequest, "Bad request", "The form could not be read. Nothing was stored.", "error", true, nil)
			return
		}
		rt.post(w, r)
	default:
		var allow []string
		if rt.get != nil {
			allow = append(allow, http.MethodGet, http.MethodHead)
		}
		if rt.post != nil {
			allow = append(allow, http.MethodPost)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.message(w, http.StatusMethodNotAllowed, "Method not allowed", "This page does not accept that request method.", "error", true, nil)
	}
}

// render executes a template into a buffer first, so a template error
// becomes a clean 500 rather than half a page.
func (s *Service) render(w http.ResponseWriter, status int, name string, p *page) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		s.log.Error("connect: render page", slog.String("template", name), slog.Any("err", err))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("Internal error.\n"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// message renders a one-paragraph page. sess, if set, adds "Signed in as"
// and a sign-out button.
func (s *Service) message(w http.ResponseWriter, status int, heading, msg, id string, alert bool, sess *store.Session) {
	p := &page{Title: heading, Heading: heading, Message: msg, MsgID: id, Alert: alert}
	if sess != nil {
		p.User, p.CSRF = sess.Principal, sess.CSRF
	}
	s.render(w, status, "message", p)
}

func (s *Service) internalError(w http.ResponseWriter, r *http.Request, op string, err error) {
	// Store and crypto errors carry no secrets: the plaintext never reaches
	// them and sealed blobs are not put into error text.
	s.log.LogAttrs(r.Context(), slog.LevelError, "connect: "+op, slog.Any("err", err))
	var ue interface{ Unavailable() bool }
	if errors.As(err, &ue) && ue.Unavailable() {
		// A passing outage of the store (store.ErrUnavailable): say so.
		w.Header().Set("Retry-After", "1")
		msg := "The server cannot reach its database right now. Nothing was stored; please try again in a moment."
		if errors.Is(err, store.ErrStorageFull) {
			msg = "The server's storage is full right now. Nothing was stored; please try again later."
		}
		s.message(w, http.StatusServiceUnavailable, "Temporarily unavailable", msg, "error", true, nil)
		return
	}
	s.message(w, http.StatusInternalServerError, "Something went wrong", "Something went wrong on the server. Nothing was stored; please try again.", "error", true, nil)
}

// redirect answers 303 to a local path. Locations are always built here
// from fixed paths or safeNext output, never from raw input.
func redirect(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}

func loginURL(next string) string {
	return "/ui/login?next=" + url.QueryEscape(safeNext(next))
}

// safeNext returns next if it is a plain local path under /ui/ or
// /connect/, else "/ui/".
// It refuses scheme- or host-bearing URLs, protocol-relative "//host",
// backslashes (which browsers treat as slashes), control or non-ASCII
// bytes, and dot segments that could climb out of /ui/.
func safeNext(next string) string {
	const home = "/ui/"
	root := home
	if strings.HasPrefix(next, connectPrefix) {
		root = connectPrefix
	}
	if len(next) > 2048 || !strings.HasPrefix(next, root) || strings.HasPrefix(next, "//") {
		return home
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= 0x20 || c >= 0x7f || c == '\\' {
			return home
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, root) {
		return home
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return home
		}
	}
	out := u.EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// cookiePath covers /ui/ and /connect/, which share the browser login.
const cookiePath = "/"

// legacyCookiePath is where cookies lived before /connect/ existed.
const legacyCookiePath = "/ui"

// cookie returns the cookie called base (see CookieName) with value.
func (s *Service) cookie(base, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     s.CookieName(base),
		Value:    value,
		Path:     cookiePath,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   true,
		SameSite: http.SameSiteLaxMode,
	}
}

// expiry returns a Set-Cookie that deletes the cookie name at path.
func (s *Service) expiry(name, path string) *http.Cookie {
	return &http.Cookie{Name: name, Path: path, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
}

// session returns the request's live session, or nil if it has none, an
// unknown one, or an expired one. err is only for store failures. The
// session cookie is read under its current name only (serveHTTP has
// refused a request carrying it twice).
func (s *Service) session(r *http.Request) (*store.Session, error) {
	c, err := r.Cookie(s.CookieName(SessionCookie))
	if err != nil || !validToken(c.Value) {
		return nil, nil
	}
	sess, err := s.store.GetSession(r.Context(), c.Value)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case !s.now().Before(sess.ExpiresAt):
		return nil, nil
	}
	return sess, nil
}

// expireLegacyCookies drops session cookies of earlier versions, which
// are no longer read: the one under legacyCookiePath and the unprefixed
// one under Path=/.
func (s *Service) expireLegacyCookies(w http.ResponseWriter) {
	http.SetCookie(w, s.expiry(SessionCookie, legacyCookiePath))
	http.SetCookie(w, s.expiry(SessionCookie, cookiePath))
}

// repeatedCookies returns the base names of the pages' cookies that r
// carries more than once, counting every spelling (base, HostPrefix,
// securePrefix) once the current name is among them. A lone cookie under
// a name not in use (an unprefixed one from an earlier version) is not
// read, so it is no conflict.
func (s *Service) repeatedCookies(r *http.Request) []string {
	var bad []string
	cookies := r.Cookies()
	for _, base := range cookieBases {
		current, all := 0, 0
		for _, c := range cookies {
			switch c.Name {
			case s.CookieName(base):
				current++
				all++
			case base, HostPrefix + base, securePrefix + base:
				all++
			}
		}
		if current > 0 && all > 1 {
			bad = append(bad, base)
		}
	}
	return bad
}

// msgRepeatedCookies explains the refusal; %s is the site's host.
const msgRepeatedCookies = "Your browser sent this site more than one sign-in cookie, so the server cannot tell which account you are using. " +
	"Another site on the same host may have set one to make you act in its account. Nothing was stored, and this browser is now signed out here. " +
	"Clear the cookies of %s in your browser's site settings, then open the link from your MCP client again and sign in."

// refuseRepeatedCookies answers a request that carries the cookies named
// by bases more than once: it expires every copy it can reach (each
// spelling the request carries, at every path that covers this one), logs
// audit event cookie_conflict_refused and shows why. Nothing is read from
// or written to the store.
func (s *Service) refuseRepeatedCookies(w http.ResponseWriter, r *http.Request, bases []string) {
	path := r.URL.EscapedPath() // ASCII, so safe to log
	paths := coveringPaths(path)
	if len(path) > 256 {
		path = path[:256] + "…"
	}
	seen := map[string]bool{}
	for _, c := range r.Cookies() {
		for _, base := range bases {
			if seen[c.Name] || (c.Name != base && c.Name != HostPrefix+base && c.Name != securePrefix+base) {
				continue
			}
			seen[c.Name] = true
			if strings.HasPrefix(c.Name, HostPrefix) { // only Path=/ and Secure are accepted for it
				http.SetCookie(w, s.expiry(c.Name, cookiePath))
				continue
			}
			for _, p := range paths {
				http.SetCookie(w, s.expiry(c.Name, p))
			}
		}
	}
	s.audit(r.Context(), slog.LevelWarn, "cookie_conflict_refused", slog.String("cookies", strings.Join(bases, ",")),
		slog.String("path", path), slog.String("method", r.Method), remote(r))
	if s.conflict != nil {
		s.conflict(r.Context(), &CookieConflict{Cookies: bases, Path: path, Method: r.Method})
	}
	s.message(w, http.StatusBadRequest, "Conflicting sign-in cookies", fmt.Sprintf(msgRepeatedCookies, hostOf(s.baseURL)), "cookie-conflict", true, nil)
}

// coveringPaths returns the cookie paths a browser sends with a request
// for path (RFC 6265 §5.1.4): "/", every prefix that ends before or at a
// "/", and path itself; at most 16.
func coveringPaths(path string) []string {
	out := []string{"/"}
	for i := 1; i < len(path) && len(out) < 15; i++ {
		if path[i] == '/' {
			out = append(out, path[:i], path[:i+1])
		}
	}
	if path != "" && !strings.HasSuffix(path, "/") {
		out = append(out, path)
	}
	// A ";" cannot be in a cookie's Path attribute (nor reach a cookie
	// through it).
	return slices.DeleteFunc(out, func(p string) bool { return strings.Contains(p, ";") })
}

// tokensEqual compares secrets in constant time; empty never matches.
func tokensEqual(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func remote(r *http.Request) slog.Attr { return slog.String("remote", r.RemoteAddr) }

func (s *Service) getHome(w http.ResponseWriter, r *http.Request) {
	sess, err := s.session(r)
	if err != nil {
		s.internalError(w, r, "session", err)
		return
	}
	if sess == nil {
		redirect(w, loginURL("/ui/"))
		return
	}
	s.render(w, http.StatusOK, "home", &page{Title: "Signed in", User: sess.Principal, CSRF: sess.CSRF, Next: "/ui/"})
}

// loginCSRF returns the browser's double-submit token, minting and setting
// a new one if it has none.
func (s *Service) loginCSRF(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, err := r.Cookie(s.CookieName(LoginCSRFCookie)); err == nil && validToken(c.Value) {
		return c.Value, nil
	}
	tok, err := randomToken()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, s.cookie(LoginCSRFCookie, tok, 0))
	return tok, nil
}

func (s *Service) loginPage(w http.ResponseWriter, r *http.Request, status int, next, username, errMsg string) {
	tok, err := s.loginCSRF(w, r)
	if err != nil {
		s.internalError(w, r, "login csrf", err)
		return
	}
	p := &page{Title: "Sign in", CSRF: tok, Next: safeNext(next), Username: username, Error: errMsg}
	if sess, err := s.session(r); err == nil && sess != nil {
		p.User = sess.Principal
	}
	s.render(w, status, "login", p)
}

func (s *Service) getLogin(w http.ResponseWriter, r *http.Request) {
	if s.idp != nil {
		s.startSignIn(w, r, r.URL.Query().Get("next"))
		return
	}
	s.loginPage(w, r, http.StatusOK, r.URL.Query().Get("next"), "", "")
}

func (s *Service) postLogin(w http.ResponseWriter, r *http.Request) {
	if s.idp != nil {
		s.message(w, http.StatusNotFound, "Not found", "Sign-in is through your identity provider: open the link again.", "not-found", true, nil)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	c, err := r.Cookie(s.CookieName(LoginCSRFCookie))
	if err != nil || !tokensEqual(c.Value, r.PostForm.Get("csrf")) {
		s.audit(r.Context(), slog.LevelWarn, "csrf_rejected", slog.String("page", "login"), remote(r))
		s.loginPage(w, r, http.StatusForbidden, next, "", "This sign-in form does not match the sign-in cookie of this browser (the cookie is missing, or the form is older or was changed). Try again with this form; the browser must keep cookies for this site.")
		return
	}
	username := strings.TrimSpace(r.PostForm.Get("username"))
	if !auth.ValidUserName(username) {
		shown := username
		if !utf8.ValidString(shown) || len(shown) > 64 {
			shown = ""
		}
		s.loginPage(w, r, http.StatusBadRequest, next, shown, "User names are 1 to 64 letters, digits, dots, underscores or hyphens.")
		return
	}
	s.startSession(w, r, username, next)
}

// startSession signs the browser in as principal (an auth.Principal.ID)
// and redirects it to next, a safeNext path: the demo form and the
// identity provider's callback both end here.
func (s *Service) startSession(w http.ResponseWriter, r *http.Request, principal, next string) {
	ctx := r.Context()
	// A fresh session id on every login (no session fixation); the old
	// session, if any, ends.
	if old, err := r.Cookie(s.CookieName(SessionCookie)); err == nil && validToken(old.Value) {
		if err := s.store.DeleteSession(ctx, old.Value); err != nil {
			s.internalError(w, r, "delete old session", err)
			return
		}
	}
	id, err := randomToken()
	if err != nil {
		s.internalError(w, r, "session id", err)
		return
	}
	csrf, err := randomToken()
	if err != nil {
		s.internalError(w, r, "session csrf", err)
		return
	}
	now := s.now()
	sess := &store.Session{ID: id, Principal: principal, CSRF: csrf, CreatedAt: now, ExpiresAt: now.Add(s.sessionTTL)}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		s.internalError(w, r, "create session", err)
		return
	}
	s.expireLegacyCookies(w)
	http.SetCookie(w, s.cookie(SessionCookie, id, int(s.sessionTTL.Seconds())))
	s.audit(ctx, slog.LevelInfo, "login", slog.String("principal", principal), remote(r))
	redirect(w, next)
}

func (s *Service) postLogout(w http.ResponseWriter, r *http.Request) {
	target := "/ui/login"
	if n := r.PostForm.Get("next"); n != "" {
		target = loginURL(n)
	}
	sess, err := s.session(r)
	if err != nil {
		s.internalError(w, r, "session", err)
		return
	}
	if sess == nil {
		// Nothing to end; just drop a stale cookie.
		s.expireLegacyCookies(w)
		http.SetCookie(w, s.cookie(SessionCookie, "", -1))
		redirect(w, target)
		return
	}
	if !tokensEqual(sess.CSRF, r.PostForm.Get("csrf")) {
		s.audit(r.Context(), slog.LevelWarn, "csrf_rejected", slog.String("page", "logout"), slog.String("principal", sess.Principal), remote(r))
		s.message(w, http.StatusForbidden, "Request refused", msgCSRFRefused+" You are still signed in. Reload the page and try again.", "error", true, nil)
		return
	}
	if err := s.store.DeleteSession(r.Context(), sess.ID); err != nil {
		s.internalError(w, r, "delete session", err)
		return
	}
	s.expireLegacyCookies(w)
	http.SetCookie(w, s.cookie(SessionCookie, "", -1))
	s.audit(r.Context(), slog.LevelInfo, "logout", slog.String("principal", sess.Principal), remote(r))
	redirect(w, target)
}

const (
	msgInvalidFlow = "This link is invalid or has expired."
	msgOtherUser   = "This request was made for a different account. Nothing was stored."
	msgDone        = "Done. Return to your MCP client: if it is waiting for this page, it continues by itself; otherwise choose Accept there to continue."
)

// checkFlow loads the flow a page is about and enforces that it is live,
// that the signed-in user is the one it was made for (SEC-U-S-06,
// SEC-U-S-07), and that it is a flow of this page's kind: oauth says
// whether the page is an OAuth one (/connect/), so no key can be typed
// for an OAuth purpose. On refusal it writes the response and returns nil.
func (s *Service) checkFlow(w http.ResponseWriter, r *http.Request, id string, sess *store.Session, oauth bool) *store.Flow {
	ctx := r.Context()
	if !validFlowID(id) {
		s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, sess)
		return nil
	}
	f, err := s.store.GetFlow(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, sess)
		return nil
	}
	if err != nil {
		s.internalError(w, r, "get flow", err)
		return nil
	}
	if !s.now().Before(f.ExpiresAt) {
		if !s.closedPage(w, r, f, sess) {
			s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, sess)
		}
		return nil
	}
	if f.Principal != sess.Principal {
		s.audit(ctx, slog.LevelWarn, "flow_refused_other_user",
			slog.String("flow_id", f.ID),
			slog.String("flow_principal", f.Principal),
			slog.String("session_principal", sess.Principal),
			slog.String("method", r.Method),
			remote(r))
		if s.mismatch != nil {
			s.mismatch(ctx, &IdentityMismatch{FlowID: f.ID, Purpose: f.Purpose, FlowPrincipal: f.Principal, SessionPrincipal: sess.Principal, Method: r.Method})
		}
		p := &page{Title: "Wrong account", Heading: "Wrong account", Message: msgOtherUser, MsgID: "wrong-account", Alert: true,
			User: sess.Principal, CSRF: sess.CSRF, Next: s.flowPath(f)}
		s.render(w, http.StatusForbidden, "message", p)
		return nil
	}
	if (s.provider(f.Purpose) != nil) != oauth {
		s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, sess)
		return nil
	}
	return f
}

func (s *Service) getKeyForm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.session(r)
	if err != nil {
		s.internalError(w, r, "session", err)
		return
	}
	if sess == nil {
		redirect(w, loginURL(r.URL.RequestURI()))
		return
	}
	f := s.checkFlow(w, r, r.URL.Query().Get("flow"), sess, false)
	if f == nil {
		return
	}
	if f.Status == store.FlowComplete {
		s.message(w, http.StatusOK, "Already done", "This step is already done. Return to your MCP client: if it is waiting for this page, it continues by itself; otherwise choose Accept there to continue.", "already-done", false, sess)
		return
	}
	s.keyForm(w, http.StatusOK, f, sess, "")
}

func (s *Service) keyForm(w http.ResponseWriter, status int, f *store.Flow, sess *store.Session, errMsg string) {
	heading := purposeHeading(f.Purpose)
	s.render(w, status, "keyform", &page{
		Title:   heading,
		Heading: heading,
		User:    sess.Principal,
		CSRF:    sess.CSRF,
		FlowID:  f.ID,
		Next:    s.flowPath(f),
		Error:   errMsg,
	})
}

// checkSecret validates a submitted key. Messages never include it.
func checkSecret(key string) string {
	switch {
	case key == "":
		return "Enter your API key."
	case len(key) > MaxSecretLen:
		return "That API key is too long (the limit is 4096 bytes). Nothing was stored."
	case !utf8.ValidString(key) || strings.IndexFunc(key, notPrintable) >= 0:
		return "That API key contains characters that are not allowed. Nothing was stored."
	}
	return ""
}

func (s *Service) postKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	flowID := r.PostForm.Get("flow")
	sess, err := s.session(r)
	if err != nil {
		s.internalError(w, r, "session", err)
		return
	}
	if sess == nil {
		next := "/ui/"
		if validFlowID(flowID) {
			next = "/ui/set_api_key?flow=" + flowID
		}
		redirect(w, loginURL(next))
		return
	}
	if !tokensEqual(sess.CSRF, r.PostForm.Get("csrf")) {
		s.audit(ctx, slog.LevelWarn, "csrf_rejected", slog.String("page", "set_api_key"), slog.String("principal", sess.Principal), remote(r))
		s.message(w, http.StatusForbidden, "Request refused", msgCSRFRefused+msgCSRFAgain, "error", true, sess)
		return
	}
	f := s.checkFlow(w, r, flowID, sess, false)
	if f == nil {
		return
	}
	if f.Status == store.FlowComplete {
		s.message(w, http.StatusConflict, "Already done", "This step was already completed. The key you just entered was not stored.", "already-done", true, sess)
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("api_key"))
	if msg := checkSecret(key); msg != "" {
		s.keyForm(w, http.StatusBadRequest, f, sess, msg)
		return
	}
	s.complete(w, r, f, sess, []byte(key), "key")
}

// complete seals secret for the flow's user, stores it and completes the
// flow in one transaction (store.CompleteFlow), then logs flow_completed
// (kind says how the secret was obtained) and shows the done page. On
// failure it answers with the reason; nothing is stored.
func (s *Service) complete(w http.ResponseWriter, r *http.Request, f *store.Flow, sess *store.Session, secret []byte, kind string) {
	ctx := r.Context()
	sealed, err := s.seal(f.Principal, f.Purpose, secret)
	if err != nil {
		s.internalError(w, r, "seal", err)
		return
	}
	err = s.store.CompleteFlow(ctx, f.ID, sess.Principal, sealed, s.now())
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, sess)
		return
	case errors.Is(err, store.ErrConflict):
		s.completeConflict(ctx, w, r, f.ID, sess)
		return
	default:
		s.internalError(w, r, "complete flow", err)
		return
	}
	s.audit(ctx, slog.LevelInfo, "flow_completed",
		slog.String("flow_id", f.ID), slog.String("principal", sess.Principal), slog.String("purpose", f.Purpose), slog.String("kind", kind), remote(r))
	s.flowChanged(ctx, f.ID)
	s.message(w, http.StatusOK, "Done", msgDone, "done", false, sess)
}

// completeConflict explains a CompleteFlow that lost a race: another
// submission finished it, or it expired meanwhile.
func (s *Service) completeConflict(ctx context.Context, w http.ResponseWriter, r *http.Request, id string, sess *store.Session) {
	f, err := s.store.GetFlow(ctx, id)
	switch {
	case err == nil && f.Status == store.FlowComplete:
		s.message(w, http.StatusConflict, "Already done", "This step was already completed. The key you just entered was not stored.", "already-done", true, sess)
	case err == nil || errors.Is(err, store.ErrNotFound):
		s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, sess)
	default:
		s.internalError(w, r, "get flow", err)
	}
}

// notPrintable reports runes a key must not hold: controls, format
// characters such as bidi overrides, line and paragraph separators, and
// private-use or unassigned code points. Spaces are allowed.
func notPrintable(r rune) bool { return !unicode.IsGraphic(r) }

// sameOrigin refuses cross-site form posts (login CSRF included, whose
// double-submit cookie another site on the same host could plant).
// Browsers send Sec-Fetch-Site to https and loopback origins (the only
// ones a BaseURL may have) and Origin on every POST; the pages' own posts
// carry this origin (Referrer-Policy same-origin). "Origin: null" is an
// opaque origin — a sandboxed frame, a data: URL, a post redirected from
// another site — and is refused whatever Sec-Fetch-Site says. A request
// with neither header is not from a browser, so no browser's cookies can
// be abused through it; it still needs the CSRF token of its form.
func sameOrigin(r *http.Request, base string) bool {
	o := r.Header.Get("Origin")
	if o == "null" {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "":
	case "same-origin", "none":
		return true
	default:
		return false
	}
	return o == "" || o == base
}
