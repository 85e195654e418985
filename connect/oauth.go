package connect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-elicit/elicit/store"
)

// The OAuth client flow (URL mode for third-party OAuth; the forwarded-link attack it
// defeats is in docs/flows.md §connect_calendar):
//
//  1. The tool starts a flow (StartFlow) for an OAuth purpose; its
//     elicitation URL is BaseURL/connect/<flow id>, on this server, never
//     the provider's (FlowURL).
//  2. GET /connect/<id> needs the browser login and the flow's own user
//     (anyone else: 403, an audit line, nothing stored, no redirect); it
//     shows who is signed in and a button.
//  3. POST /connect/<id> (same checks, plus the session's CSRF token and
//     same-origin) makes a fresh random state and PKCE verifier, keeps
//     them server-side bound to the flow and user (an attempt record in
//     the ledger, the verifier sealed), and only then redirects to the
//     provider with the state and the S256 challenge.
//  4. GET /connect/callback: the state must be known; the first callback
//     that presents it consumes it, whatever follows (single use); the
//     browser user must again be the flow's user, the flow pending and
//     unexpired; then the code is exchanged (with the verifier, from this
//     server to the provider, never with the client's MCP token) and the
//     tokens are sealed into the vault for that user as the flow's secret,
//     completing the flow in the same transaction.
//
// The tokens never go back to the MCP client: tools use them server-side
// through OAuthClient (SEC-U-S-08, SEC-U-S-09, SEC-U-S-10).

// Paths of the OAuth routes.
const (
	connectPrefix = "/connect/"
	callbackPath  = "/connect/callback"
)

// AttemptTTL is how long a redirect to the provider may take to come back
// to the callback (and never longer than the flow lives).
const AttemptTTL = 10 * time.Minute

// AttemptKind is the ledger record kind of an OAuth attempt: ID is the
// hex SHA-256 of the state (the state itself is stored nowhere), Status
// "started" or "used", Data the sealed attempt. An attempt is of no use
// after AttemptTTL: a store sweep may remove it then
// (store.Retention.Records), and the operations that wrote it with it.
const AttemptKind = "oauth_attempt"

const (
	attemptKind    = AttemptKind
	attemptStarted = "started"
	attemptUsed    = "used"
)

// errTooManyAttempts refuses an attempt past Options.MaxAttempts.
var errTooManyAttempts = errors.New("connect: too many OAuth attempts")

// exchangeTimeout bounds the token request to the provider.
const exchangeTimeout = 15 * time.Second

// OAuthProvider is a third-party OAuth 2.1 authorization server that the
// Service is a client of. Flows whose purpose is Purpose use the OAuth
// pages instead of the key page, and their vault secret holds the tokens.
type OAuthProvider struct {
	// Purpose names the flows and the vault secret, as in StartFlow
	// (1–64 characters of [A-Za-z0-9._-]).
	Purpose string
	// Name is shown on the pages, e.g. "Calendar provider"; "" means
	// Purpose.
	Name string
	// Heading titles the connect page; "" means "Connect " + Name.
	Heading string
	// Config holds the client id and secret, the endpoint and the scopes.
	// RedirectURL is ignored: it is always BaseURL + "/connect/callback",
	// which must be the redirect URI registered with the provider.
	// AuthStyle should be set (AuthStyleInHeader or AuthStyleInParams):
	// auto-detection would send the code twice.
	Config oauth2.Config
	// HTTPClient makes the token and API requests; nil means a client with
	// a 15-second timeout. It must not add the MCP client's credentials.
	HTTPClient *http.Client
}

// AddOAuthProvider registers p. Call it before serving. It fails on an
// invalid purpose, a purpose already registered, or a Config without
// client id or endpoint URLs.
func (s *Service) AddOAuthProvider(p OAuthProvider) error {
	if !validPurpose(p.Purpose) {
		return errors.New("connect: AddOAuthProvider: purpose must be 1-64 characters of [A-Za-z0-9._-]")
	}
	if p.Config.ClientID == "" || p.Config.Endpoint.AuthURL == "" || p.Config.Endpoint.TokenURL == "" {
		return errors.New("connect: AddOAuthProvider: Config needs ClientID, Endpoint.AuthURL and Endpoint.TokenURL")
	}
	for _, u := range []string{p.Config.Endpoint.AuthURL, p.Config.Endpoint.TokenURL} {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return fmt.Errorf("connect: AddOAuthProvider: %q is not an http(s) URL", u)
		}
	}
	p.Config.RedirectURL = s.baseURL + callbackPath
	if p.Name == "" {
		p.Name = p.Purpose
	}
	if p.Heading == "" {
		p.Heading = "Connect " + p.Name
	}
	if p.HTTPClient == nil {
		p.HTTPClient = &http.Client{Timeout: exchangeTimeout}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.providers == nil {
		s.providers = map[string]*OAuthProvider{}
	}
	if _, dup := s.providers[p.Purpose]; dup {
		return fmt.Errorf("connect: AddOAuthProvider: purpose %q already registered", p.Purpose)
	}
	s.providers[p.Purpose] = &p
	return nil
}

// provider returns the OAuth provider of purpose, or nil.
func (s *Service) provider(purpose string) *OAuthProvider {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.providers[purpose]
}

// OAuthToken returns principal's stored tokens for the OAuth purpose, for
// server-side use only: never put any of it in an MCP result, a log or a
// URL (SEC-U-S-08). store.ErrNotFound if the user has not connected.
func (s *Service) OAuthToken(ctx context.Context, principal, purpose string) (*oauth2.Token, error) {
	_, tok, err := s.oauthToken(ctx, principal, purpose)
	return tok, err
}

// oauthToken returns the stored blob and its decoded token.
func (s *Service) oauthToken(ctx context.Context, principal, purpose string) ([]byte, *oauth2.Token, error) {
	if s.provider(purpose) == nil {
		return nil, nil, fmt.Errorf("connect: no OAuth provider for purpose %q", purpose)
	}
	blob, err := s.store.GetSecret(ctx, principal, purpose)
	if err != nil {
		return nil, nil, err
	}
	plain, err := s.open(principal, purpose, blob)
	if err != nil {
		return nil, nil, err
	}
	var tok oauth2.Token
	if err := json.Unmarshal(plain, &tok); err != nil || tok.AccessToken == "" {
		return nil, nil, errors.New("connect: stored OAuth token does not decode")
	}
	return blob, &tok, nil
}

// OAuthClient returns an HTTP client, valid while ctx is, that sends
// principal's access token for purpose to the provider's APIs and nothing
// of the MCP request (SEC-U-S-09). When the access token has expired
// (judged by x/oauth2 on the system clock) it is refreshed, and the new
// tokens replace the stored ones unless a reconnect replaced them
// meanwhile (store.ReplaceSecret), so a provider that rotates refresh
// tokens keeps working. store.ErrNotFound if the user has not connected.
func (s *Service) OAuthClient(ctx context.Context, principal, purpose string) (*http.Client, error) {
	blob, tok, err := s.oauthToken(ctx, principal, purpose)
	if err != nil {
		return nil, err
	}
	p := s.provider(purpose)
	hctx := context.WithValue(ctx, oauth2.HTTPClient, p.HTTPClient)
	src := &savingSource{svc: s, ctx: ctx, principal: principal, purpose: purpose,
		base: p.Config.TokenSource(hctx, tok), blob: blob, access: tok.AccessToken}
	return oauth2.NewClient(hctx, src), nil
}

// savingSource writes a refreshed token back to the vault.
type savingSource struct {
	svc                *Service
	ctx                context.Context
	principal, purpose string
	base               oauth2.TokenSource

	mu     sync.Mutex
	blob   []byte // the stored sealed token this source derives from
	access string // its access token
}

// Token implements oauth2.TokenSource. A failed write is logged, and the
// fresh token is still used for this client.
func (t *savingSource) Token() (*oauth2.Token, error) {
	tok, err := t.base.Token()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok.AccessToken == t.access {
		return tok, nil
	}
	plain, err := json.Marshal(tok)
	var sealed []byte
	if err == nil {
		sealed, err = t.svc.seal(t.principal, t.purpose, plain)
	}
	if err == nil {
		err = t.svc.store.ReplaceSecret(t.ctx, t.principal, t.purpose, t.blob, sealed, t.svc.now())
	}
	attrs := []slog.Attr{slog.String("principal", t.principal), slog.String("purpose", t.purpose)}
	switch {
	case err == nil:
		t.blob, t.access = sealed, tok.AccessToken
		t.svc.audit(t.ctx, slog.LevelInfo, "oauth_token_refreshed", attrs...)
	case errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound):
		// Reconnected or removed meanwhile: the newer state wins.
		t.access = tok.AccessToken
		t.svc.audit(t.ctx, slog.LevelInfo, "oauth_token_refresh_not_stored", append(attrs, slog.String("reason", "changed_meanwhile"))...)
	default:
		t.svc.log.LogAttrs(t.ctx, slog.LevelError, "connect: store refreshed token", append(attrs, slog.Any("err", err))...)
	}
	return tok, nil
}

// attempt is the sealed content of an attempt record.
type attempt struct {
	Flow     string `json:"flow"`
	Verifier string `json:"verifier"`
}

// stateKey is the record id of a state: its hex SHA-256, so the database
// holds nothing that could be replayed at the callback.
func stateKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

func attemptName(key string) string { return attemptKind + "." + key }

func (s *Service) getConnect(w http.ResponseWriter, r *http.Request) {
	s.connectPage(w, r, false)
}

func (s *Service) postConnect(w http.ResponseWriter, r *http.Request) {
	s.connectPage(w, r, true)
}

// connectPage serves GET and POST /connect/<id>. GET shows the page; POST
// (CSRF-checked) starts an attempt and redirects to the provider. Both
// refuse anyone but the flow's user before anything else happens.
func (s *Service) connectPage(w http.ResponseWriter, r *http.Request, post bool) {
	ctx := r.Context()
	id := r.URL.Path[len(connectPrefix):]
	sess, err := s.session(r)
	if err != nil {
		s.internalError(w, r, "session", err)
		return
	}
	if sess == nil {
		if !validFlowID(id) {
			s.message(w, http.StatusNotFound, "Link not valid", msgInvalidFlow, "invalid", true, nil)
			return
		}
		redirect(w, loginURL(connectPrefix+id))
		return
	}
	if post && !tokensEqual(sess.CSRF, r.PostForm.Get("csrf")) {
		s.audit(ctx, slog.LevelWarn, "csrf_rejected", slog.String("page", "connect"), slog.String("principal", sess.Principal), remote(r))
		s.message(w, http.StatusForbidden, "Request refused", msgCSRFRefused+msgCSRFAgain, "error", true, sess)
		return
	}
	f := s.checkFlow(w, r, id, sess, true)
	if f == nil {
		return
	}
	if f.Status == store.FlowComplete {
		s.message(w, http.StatusOK, "Already done", "This step is already done. Return to your MCP client: if it is waiting for this page, it continues by itself; otherwise choose Accept there to continue.", "already-done", false, sess)
		return
	}
	p := s.provider(f.Purpose)
	if !post {
		// The form posts here and is then redirected to the provider, so
		// the provider's origin must be an allowed form action.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "+origin(p.Config.Endpoint.AuthURL)+"; frame-ancestors 'none'; base-uri 'none'")
		s.render(w, http.StatusOK, "connect", &page{
			Title: p.Heading, Heading: p.Heading, User: sess.Principal, CSRF: sess.CSRF,
			FlowID: f.ID, Next: s.flowPath(f), Provider: p.Name, ProviderHost: hostOf(p.Config.Endpoint.AuthURL),
		})
		return
	}
	state, err := randomToken()
	if err != nil {
		s.internalError(w, r, "state", err)
		return
	}
	verifier := oauth2.GenerateVerifier()
	key := stateKey(state)
	plain, err := json.Marshal(attempt{Flow: f.ID, Verifier: verifier})
	if err != nil {
		s.internalError(w, r, "attempt", err)
		return
	}
	sealed, err := s.seal(f.Principal, attemptName(key), plain)
	if err != nil {
		s.internalError(w, r, "seal attempt", err)
		return
	}
	now := s.now()
	op := &store.Operation{ID: "oauth_start." + key, Principal: f.Principal, Name: "connect oauth start " + f.Purpose, Outcome: attemptStarted, CompletedAt: now}
	err = s.store.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
		// The cap bounds the rows a user can add between sweeps; it
		// counts the live attempts, created less than AttemptTTL ago.
		n, err := fx.Count(ctx, attemptKind, f.Principal, now.Add(-AttemptTTL+time.Nanosecond))
		if err != nil {
			return err
		}
		if n >= int64(s.maxAttempt) {
			return errTooManyAttempts
		}
		return fx.Insert(ctx, &store.Record{Kind: attemptKind, ID: key, Principal: f.Principal, Status: attemptStarted,
			Data: sealed, CreatedAt: now, UpdatedAt: now})
	})
	if errors.Is(err, errTooManyAttempts) {
		s.audit(ctx, slog.LevelWarn, "oauth_attempts_capped", slog.String("flow_id", f.ID), slog.String("principal", f.Principal),
			slog.Int("max_attempts", s.maxAttempt), remote(r))
		w.Header().Set("Retry-After", strconv.Itoa(int(AttemptTTL.Seconds())))
		s.message(w, http.StatusTooManyRequests, "Too many attempts", "You started too many sign-ins in the last few minutes. Nothing was stored. Wait a few minutes, then open the link from your MCP client again.", "too-many", true, sess)
		return
	}
	if err != nil {
		s.internalError(w, r, "store attempt", err)
		return
	}
	s.audit(ctx, slog.LevelInfo, "oauth_redirect", slog.String("flow_id", f.ID), slog.String("principal", f.Principal),
		slog.String("purpose", f.Purpose), slog.String("provider", hostOf(p.Config.Endpoint.AuthURL)), remote(r))
	w.Header().Set("Location", p.Config.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	w.WriteHeader(http.StatusSeeOther)
}

// refuseCallback logs why a callback was refused and answers with a page
// that says nothing was stored.
func (s *Service) refuseCallback(w http.ResponseWriter, r *http.Request, status int, reason, msg string, sess *store.Session, attrs ...slog.Attr) {
	attrs = append([]slog.Attr{slog.String("reason", reason), remote(r)}, attrs...)
	if sess != nil {
		attrs = append(attrs, slog.String("session_principal", sess.Principal))
	}
	s.audit(r.Context(), slog.LevelWarn, "oauth_callback_refused", attrs...)
	s.message(w, status, "Not connected", msg, "refused", true, sess)
}

const (
	msgUnknownState = "This sign-in link is unknown, expired or was already used. Nothing was stored. Open the link from your MCP client again."
	msgNoSession    = "You are not signed in on this site any more. Nothing was stored. Open the link from your MCP client again."
)

// getCallback is the provider's redirect back (RFC 6749 §4.1.2): the
// attempt its state names is consumed once, then the browser user must
// be the flow's user, and the code is exchanged for the tokens the vault
// keeps.
func (s *Service) getCallback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		// A HEAD (a link checker, a prefetch) must not consume the state.
		w.Header().Set("Allow", http.MethodGet)
		s.message(w, http.StatusMethodNotAllowed, "Method not allowed", "This page does not accept that request method.", "error", true, nil)
		return
	}
	sess, err := s.session(r)
	if err != nil {
		s.internalError(w, r, "session", err)
		return
	}
	att, ok := s.consumeAttempt(w, r, sess)
	if !ok {
		return
	}
	if sess == nil {
		s.refuseCallback(w, r, http.StatusForbidden, "no_session", msgNoSession, nil, slog.String("flow_id", att.Flow))
		return
	}
	// checkFlow compares the browser user with the flow's user (the
	// attempt's principal is the flow's) and refuses with an audit line.
	f := s.checkFlow(w, r, att.Flow, sess, true)
	if f == nil {
		return
	}
	if f.Status == store.FlowComplete {
		s.message(w, http.StatusConflict, "Already done", "This step was already completed. Nothing new was stored.", "already-done", true, sess)
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		// The provider's error code is logged only if it is a plain token.
		code := "other"
		if validPurpose(e) {
			code = e
		}
		s.audit(r.Context(), slog.LevelInfo, "oauth_not_approved", slog.String("flow_id", f.ID), slog.String("principal", f.Principal), slog.String("error", code))
		// The denial ends the step: a held retry is answered at once, and
		// says so (Step: Texts.Denied); a new call starts afresh.
		if _, err := s.CloseFlow(r.Context(), f, FlowDenied); err != nil && !errors.Is(err, store.ErrConflict) {
			s.internalError(w, r, "close denied flow", err)
			return
		}
		s.message(w, http.StatusOK, "Not connected", "Access was not granted at "+s.provider(f.Purpose).Name+". Nothing was stored. To try again, start again from your MCP client.", "denied", true, sess)
		return
	}
	code := q.Get("code")
	if code == "" || len(code) > 2048 || len(q["code"]) != 1 {
		s.refuseCallback(w, r, http.StatusBadRequest, "no_code", msgUnknownState, sess, slog.String("flow_id", f.ID))
		return
	}
	s.exchange(w, r, f, sess, att, code)
}

// consumeAttempt finds the attempt the callback's state names and uses
// it up: the first callback that presents a known state consumes it,
// whatever happens next, and of concurrent ones only one does. An
// unknown, replayed or expired state is refused (ok false, the answer
// written).
func (s *Service) consumeAttempt(w http.ResponseWriter, r *http.Request, sess *store.Session) (att *attempt, ok bool) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	if !validToken(state) || len(q["state"]) != 1 {
		s.refuseCallback(w, r, http.StatusBadRequest, "malformed_state", msgUnknownState, sess)
		return nil, false
	}
	key := stateKey(state)
	rec, err := s.store.GetRecord(ctx, attemptKind, key)
	if errors.Is(err, store.ErrNotFound) {
		s.refuseCallback(w, r, http.StatusBadRequest, "unknown_state", msgUnknownState, sess)
		return nil, false
	}
	if err != nil {
		s.internalError(w, r, "get attempt", err)
		return nil, false
	}
	now := s.now()
	op := &store.Operation{ID: "oauth_callback." + key, Principal: rec.Principal, Name: "connect oauth callback", Outcome: attemptUsed, CompletedAt: now}
	err = s.store.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
		cur, err := fx.Get(ctx, attemptKind, key)
		if err != nil {
			return err
		}
		if cur.Status != attemptStarted {
			return store.ErrConflict
		}
		cur.Status, cur.UpdatedAt = attemptUsed, now
		return fx.Update(ctx, cur)
	})
	if errors.Is(err, store.ErrConflict) {
		s.refuseCallback(w, r, http.StatusBadRequest, "replayed_state", msgUnknownState, sess, slog.String("attempt_principal", rec.Principal))
		return nil, false
	}
	if err != nil {
		s.internalError(w, r, "consume attempt", err)
		return nil, false
	}
	plain, err := s.open(rec.Principal, attemptName(key), rec.Data)
	att = &attempt{}
	if err == nil {
		err = json.Unmarshal(plain, att)
	}
	if err != nil {
		s.internalError(w, r, "open attempt", err)
		return nil, false
	}
	if !now.Before(rec.CreatedAt.Add(AttemptTTL)) {
		s.refuseCallback(w, r, http.StatusBadRequest, "expired_state", msgUnknownState, sess, slog.String("flow_id", att.Flow))
		return nil, false
	}
	return att, true
}

// exchange trades the code for tokens at the provider (with the PKCE
// verifier) and completes the flow with them.
func (s *Service) exchange(w http.ResponseWriter, r *http.Request, f *store.Flow, sess *store.Session, att *attempt, code string) {
	ctx := r.Context()
	p := s.provider(f.Purpose)
	xctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, p.HTTPClient), exchangeTimeout)
	defer cancel()
	tok, err := p.Config.Exchange(xctx, code, oauth2.VerifierOption(att.Verifier))
	if err != nil {
		// A RetrieveError's text holds the provider's body; log its code only.
		reason := "transport"
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			reason = "provider_" + re.ErrorCode
			if !validPurpose(re.ErrorCode) && re.Response != nil {
				reason = fmt.Sprintf("provider_http_%d", re.Response.StatusCode)
			}
		}
		s.audit(ctx, slog.LevelWarn, "oauth_exchange_failed", slog.String("flow_id", f.ID), slog.String("principal", f.Principal), slog.String("reason", reason))
		s.message(w, http.StatusBadGateway, "Not connected", p.Name+" did not accept the sign-in. Nothing was stored. Open the link from your MCP client again to retry.", "exchange-failed", true, sess)
		return
	}
	blob, err := json.Marshal(tok)
	if err != nil {
		s.internalError(w, r, "encode token", err)
		return
	}
	s.complete(w, r, f, sess, blob, "oauth")
}

// origin returns scheme://host of an absolute URL, for the CSP.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// hostOf returns the host of an absolute URL, shown to the user.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
