package connect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcp-elicit/elicit/auth"
)

// IdentityProvider signs browsers in through an OpenID Connect issuer,
// replacing the demo user-name form (Options.SignIn). *jwtauth.OIDC
// implements it. The principal it returns must be the one the MCP
// endpoint's authenticator gives the same user (issuer and subject), so
// that the same-user check on a flow page compares like with like.
type IdentityProvider interface {
	// AuthCodeURL returns the issuer's authorization URL for one sign-in
	// with this state, nonce and PKCE verifier (S256 challenge).
	AuthCodeURL(state, nonce, verifier string) string
	// Exchange redeems code (the callback's iss parameter, "" if absent,
	// must name the issuer) with verifier and returns the signed-in
	// principal once the ID token is verified and carries nonce.
	Exchange(ctx context.Context, code, iss, verifier, nonce string) (auth.Principal, error)
}

// SignInCallbackPath is where the issuer sends the browser back: register
// BaseURL + SignInCallbackPath as the client's redirect URI.
const SignInCallbackPath = "/ui/login/callback"

// signInTTL bounds the time between leaving for the issuer and coming back.
const signInTTL = 10 * time.Minute

// signInAD is the additional data of sealed sign-in cookies, so that
// neither a vault blob nor anything else sealed with the key is accepted
// as one.
var signInAD = []byte("elicit sign-in v1")

// signIn is the content of the SignInCookie: one sign-in in progress,
// sealed with the vault key; it lasts signInTTL and is cleared by the
// callback.
type signIn struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"next"`
	Expires  int64  `json:"exp"` // Unix seconds
}

// startSignIn sends the browser to the issuer, remembering in a sealed
// cookie what the callback needs to check (state binds the callback to
// this browser, nonce binds the ID token to this sign-in, the PKCE
// verifier binds the code to this client).
func (s *Service) startSignIn(w http.ResponseWriter, r *http.Request, next string) {
	si := signIn{Next: safeNext(next), Expires: s.now().Add(signInTTL).Unix()}
	for _, v := range []*string{&si.State, &si.Nonce, &si.Verifier} {
		tok, err := randomToken() // 43 characters: a valid PKCE verifier too
		if err != nil {
			s.internalError(w, r, "sign-in token", err)
			return
		}
		*v = tok
	}
	plain, err := json.Marshal(si)
	if err != nil {
		s.internalError(w, r, "sign-in cookie", err)
		return
	}
	sealed, err := s.sealWith(signInAD, plain)
	if err != nil {
		s.internalError(w, r, "sign-in cookie", err)
		return
	}
	http.SetCookie(w, s.cookie(SignInCookie, base64.RawURLEncoding.EncodeToString(sealed), int(signInTTL.Seconds())))
	// Not redirect(): the target is the issuer, not a local path.
	w.Header().Set("Location", s.idp.AuthCodeURL(si.State, si.Nonce, si.Verifier))
	w.WriteHeader(http.StatusSeeOther)
}

// pendingSignIn opens the browser's sign-in cookie; nil if it has none, or
// one that is forged, foreign or expired.
func (s *Service) pendingSignIn(r *http.Request) *signIn {
	c, err := r.Cookie(s.CookieName(SignInCookie))
	if err != nil || len(c.Value) > 1024 {
		return nil
	}
	blob, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return nil
	}
	plain, err := s.openWith(signInAD, blob)
	if err != nil {
		return nil
	}
	var si signIn
	if json.Unmarshal(plain, &si) != nil || si.State == "" || si.Nonce == "" || si.Verifier == "" || s.now().Unix() >= si.Expires {
		return nil
	}
	return &si
}

// getSignInCallback finishes a sign-in: the state must match the
// browser's cookie (login CSRF), the issuer must not report an error, and
// the code must redeem for a valid ID token with the nonce. Then the
// browser gets a session as that principal and goes back to where it was
// going. The query (code, state) is never logged.
func (s *Service) getSignInCallback(w http.ResponseWriter, r *http.Request) {
	if s.idp == nil {
		s.message(w, http.StatusNotFound, "Not found", "There is no page here.", "not-found", true, nil)
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	si := s.pendingSignIn(r)
	http.SetCookie(w, s.cookie(SignInCookie, "", -1)) // one use, whatever happens
	switch {
	case si == nil:
		s.audit(ctx, slog.LevelWarn, "signin_refused", slog.String("reason", "no sign-in in progress in this browser"), remote(r))
		s.message(w, http.StatusBadRequest, "Sign-in expired", "This sign-in expired or was started in another browser. Open the link from your MCP client again.", "error", true, nil)
		return
	case !tokensEqual(si.State, q.Get("state")):
		s.audit(ctx, slog.LevelWarn, "signin_refused", slog.String("reason", "state does not match"), remote(r))
		s.message(w, http.StatusForbidden, "Request refused", "This sign-in did not start in this browser. Nothing was changed.", "error", true, nil)
		return
	case q.Has("error"):
		code := q.Get("error")
		if !validErrorCode(code) {
			code = "(malformed)"
		}
		s.audit(ctx, slog.LevelInfo, "signin_refused", slog.String("reason", "issuer answered an error"), slog.String("error", code), remote(r))
		s.message(w, http.StatusForbidden, "Not signed in", "The identity provider did not sign you in. Open the link from your MCP client to try again.", "error", true, nil)
		return
	}
	p, err := s.idp.Exchange(ctx, q.Get("code"), q.Get("iss"), si.Verifier, si.Nonce)
	if err != nil {
		s.audit(ctx, slog.LevelWarn, "signin_refused", slog.String("reason", err.Error()), remote(r))
		s.message(w, http.StatusForbidden, "Not signed in", "Sign-in could not be completed. Open the link from your MCP client to try again.", "error", true, nil)
		return
	}
	s.startSession(w, r, p.ID(), si.Next)
}

// validErrorCode reports whether an OAuth error code is safe to log as
// is: 1–64 characters of %x20-21 / %x23-5B / %x5D-7E (RFC 6749 §4.1.2.1).
func validErrorCode(e string) bool {
	if e == "" || len(e) > 64 {
		return false
	}
	for i := 0; i < len(e); i++ {
		if c := e[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
