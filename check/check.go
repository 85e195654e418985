// Package check tests an MCP 2026-07-28 server's elicitation safety from
// the outside, the way an attacker or a careless client would meet it: it
// calls one tool until the tool asks for input (an InputRequiredResult,
// basic/patterns/mrtr.mdx), then answers it wrongly on purpose — without
// the requested mode, with decline and cancel, with a tampered or
// replayed requestState, with missing, extra or misplaced inputResponses,
// with form answers that break the schema — and inspects what the server
// asked for: secrets in form mode, URL-mode links that carry user data or
// log a browser in.
//
// Each case reports what a safe server does, what was observed, and a
// verdict. A case passes only on positive evidence: a refusal counts only
// when the same request with the genuine state and answers was accepted
// (the control), so a server that refuses everything cannot pass the
// state cases. Cases the tool gives no occasion for are "not applicable";
// cases whose evidence could not be obtained (a URL flow the checker
// cannot finish, a control that was itself refused) are "could not test",
// with the reason.
//
// The checker completes no effect unless Config.AllowEffects says so: by
// default it never sends an answer that could complete the tool (an
// accept with valid form content, or the plain answer of a sampling or
// roots request); it declines, cancels, tampers, and accepts URL-mode
// requests, which is consent only and which no safe server takes as
// completion. The control is then a decline or a cancel, and the cases
// that need an operation completed with accept are "not run". The report
// says what the checker did and what it left behind (Report.Effects),
// next to the tool's annotations, which it reports but does not rely on:
// they are hints from the server under test.
//
// The checker talks to the server through mcpclient.SendRaw (its own
// capabilities per request, hand-made answers, altered states) and fetches
// URL-mode links with no cookies, following redirects only within the
// link's origin, and by default only links on the endpoint's own origin or
// https links that pass url-safe (Config.FetchLinks). It never prints the
// tokens it was given, nor the password of the endpoint URL's userinfo
// or the HTTP Basic credentials made of it (Config.Redact).
//
// # Public surface
//
// Run with a Config returns a Report of Results (Verdict, the Case*
// names, Summary, Effects); StartError (with its Kind* values) and
// ErrConfig when no check could start; LinkPolicy (Fetch*) and
// ClientInfo.
package check

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// Verdict is the outcome of one case.
type Verdict string

// Verdicts.
const (
	// Pass: the server behaved as a safe server must, and the evidence
	// for it was observed (not inferred from silence).
	Pass Verdict = "pass"
	// Fail: the server did what a safe server must not.
	Fail Verdict = "fail"
	// NotApplicable: the tool gives no occasion for the case (e.g. no
	// requestState, no URL-mode request, no --other-token).
	NotApplicable Verdict = "not applicable"
	// CouldNotTest: the case applies but its evidence could not be
	// obtained; Observed says why.
	CouldNotTest Verdict = "could not test"
	// NotRun: the case needs an operation completed with accept, which
	// would run the tool's effect, and Config.AllowEffects is false.
	NotRun Verdict = "not run"
)

// Case ids, in the order they run and are reported.
const (
	CaseCapability        = "capability-missing-mode"
	CaseDecline           = "decline"
	CaseCancel            = "cancel"
	CaseStateBitFlip      = "state-bit-flip"
	CaseStateTruncated    = "state-truncated"
	CaseStateReencoded    = "state-re-encoded"
	CaseStateSegments     = "state-segments-swapped"
	CaseStatePlaintext    = "state-plaintext"
	CaseReplayOtherUser   = "replay-other-user"
	CaseReplayChangedArgs = "replay-changed-arguments"
	CaseReplayOtherTool   = "replay-other-tool"
	CaseResponsesMissing  = "responses-missing"
	CaseResponsesExtra    = "responses-extra"
	CaseResponsesWrongKey = "responses-wrong-key"
	CaseReplayCompleted   = "replay-completed"
	CaseSwappedPending    = "swapped-pending"
	CaseFormInvalid       = "form-invalid-answers"
	CaseFormSecret        = "form-secret"
	CaseURLSafe           = "url-safe"
	CaseURLNoLogin        = "url-no-login"
	CaseURLUnfinished     = "url-accept-unfinished"
)

// Result is one case's outcome.
type Result struct {
	// ID is one of the Case constants.
	ID string `json:"id"`
	// Expectation is what a safe server does, in one sentence.
	Expectation string `json:"expectation"`
	// Observed is what the server did: server text clipped and with the
	// secrets redacted, but not escaped (WriteText escapes control and
	// invisible characters once, as \n or \x1b; WriteJSON as \u escapes).
	Observed string `json:"observed"`
	// Verdict is the case's verdict.
	Verdict Verdict `json:"verdict"`
}

// Summary counts results by verdict.
type Summary struct {
	Pass          int `json:"pass"`
	Fail          int `json:"fail"`
	NotApplicable int `json:"notApplicable"`
	CouldNotTest  int `json:"couldNotTest"`
	NotRun        int `json:"notRun"`
}

// Effects is what the checker's calls did on the server and left behind.
type Effects struct {
	// Allowed is Config.AllowEffects: whether answers that could complete
	// the tool were sent.
	Allowed bool `json:"allowed"`
	// Annotations are the checked tool's hints as tools/list gave them
	// (nil: none). They are reported, not relied on.
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	// Calls counts the tools/call requests for the checked tool; Started
	// counts those that were first calls (each begins an operation).
	Calls   int `json:"calls"`
	Started int `json:"started"`
	// Completed holds the text of every successful complete result the
	// checked tool gave (clipped, secrets redacted): each is an operation
	// that may have had the tool's effect.
	Completed []string `json:"completed"`
	// OtherCalls counts the calls of other tools (replay-other-tool), by name.
	OtherCalls map[string]int `json:"otherCalls,omitempty"`
}

// Report is the outcome of one Run.
type Report struct {
	// URL is the endpoint and Tool the tool that was checked.
	URL  string `json:"url"`
	Tool string `json:"tool"`
	// Server is the server's self-reported identity, when it sent one.
	Server *mcp.Implementation `json:"server,omitempty"`
	// DiscoveryError says why server/discover failed (the server answered,
	// but not as a 2026-07-28 server), when it did; Server is then nil and
	// every case is "could not test".
	DiscoveryError string `json:"discoveryError,omitempty"`
	// ProtocolVersion is the version the checker spoke.
	ProtocolVersion string `json:"protocolVersion"`
	// Effects says what the checker did and left behind.
	Effects Effects `json:"effects"`
	// Results has one entry per case, in the order of the Case constants.
	Results []Result `json:"results"`
	// Summary counts Results by verdict.
	Summary Summary `json:"summary"`
}

// Failed reports whether any case failed.
func (r *Report) Failed() bool { return r.Summary.Fail > 0 }

// Tested reports whether any case reached a verdict on evidence (pass or
// fail). A report with none — every case not applicable or could not test,
// as with a rejected token or a tool that asked for nothing — proves
// nothing about the server.
func (r *Report) Tested() bool { return r.Summary.Pass+r.Summary.Fail > 0 }

// Result returns the result of the case id, or nil.
func (r *Report) Result(id string) *Result {
	for i := range r.Results {
		if r.Results[i].ID == id {
			return &r.Results[i]
		}
	}
	return nil
}

func (r *Report) add(res Result) {
	r.Results = append(r.Results, res)
	switch res.Verdict {
	case Pass:
		r.Summary.Pass++
	case Fail:
		r.Summary.Fail++
	case NotApplicable:
		r.Summary.NotApplicable++
	case NotRun:
		r.Summary.NotRun++
	default:
		r.Summary.CouldNotTest++
	}
}

// WriteJSON writes the report as indented JSON. Control, bidi and other
// invisible characters in its strings are written as \u escapes, the way
// elicit call --json writes them, so the report reads on a terminal as it
// is and decodes to the same values.
func (r *Report) WriteJSON(w io.Writer) error { return termtext.WriteJSON(w, r) }

// WriteText writes the report as a table: what the checker did and left
// behind (Effects), one block per case with its verdict, expectation and
// observation, then the counts. Cases with the same verdict and
// observation (every case, when the tool asked nothing) are one block
// naming them all.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	server := "server did not name itself"
	switch {
	case r.DiscoveryError != "":
		server = "server/discover failed"
	case r.Server != nil:
		server = r.Server.Name + " " + r.Server.Version
	}
	fmt.Fprintf(&b, "elicit check %s  tool %s  (%s, protocol %s)\n\n", escapeText(r.URL), escapeText(r.Tool), clipEscape(server, 160), escapeText(r.ProtocolVersion))
	r.Effects.write(&b, escapeText(r.Tool))
	b.WriteString("\n")
	width := 0
	for _, res := range r.Results {
		width = max(width, len(res.ID))
	}
	type group struct {
		first Result
		ids   []string
	}
	var groups []*group
	byText := map[[2]string]*group{}
	for _, res := range r.Results {
		k := [2]string{string(res.Verdict), res.Observed}
		if g := byText[k]; g != nil {
			g.ids = append(g.ids, res.ID)
			continue
		}
		g := &group{first: res, ids: []string{res.ID}}
		byText[k] = g
		groups = append(groups, g)
	}
	for _, g := range groups {
		res := g.first
		if len(g.ids) == 1 {
			fmt.Fprintf(&b, "%-*s  %-14s  expect:   %s\n", width, res.ID, strings.ToUpper(string(res.Verdict)), res.Expectation)
			fmt.Fprintf(&b, "%-*s  %-14s  observed: %s\n", width, "", "", escapeText(res.Observed))
			continue
		}
		names := strings.Join(g.ids, ", ")
		if len(g.ids) == len(r.Results) {
			names = "every case"
		}
		fmt.Fprintf(&b, "%d cases: %s\n", len(g.ids), names)
		fmt.Fprintf(&b, "%-*s  %-14s  observed: %s\n", width, "", strings.ToUpper(string(res.Verdict)), escapeText(res.Observed))
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d cases: %d pass, %d fail, %d not applicable, %d could not test",
		len(r.Results), s.Pass, s.Fail, s.NotApplicable, s.CouldNotTest)
	if s.NotRun > 0 {
		fmt.Fprintf(&b, ", %d not run without --allow-effects", s.NotRun)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// write describes the effects for the text report; tool is the escaped
// tool name.
func (e *Effects) write(b *strings.Builder, tool string) {
	if e.Allowed {
		fmt.Fprintf(b, "effects:  ALLOWED (--allow-effects): answers that complete %s were sent\n", tool)
	} else {
		fmt.Fprintf(b, "effects:  not allowed: no answer that could complete %s was sent (--allow-effects sends them)\n", tool)
	}
	fmt.Fprintf(b, "hints:    %s\n", hintsText(e.Annotations))
	did := fmt.Sprintf("%d calls of %s, %d operations started, %d completed", e.Calls, tool, e.Started, len(e.Completed))
	for _, name := range sortedKeys(e.OtherCalls) {
		did += fmt.Sprintf("; %d calls of %s", e.OtherCalls[name], clipEscape(name, 40))
	}
	fmt.Fprintf(b, "did:      %s\n", did)
	if len(e.Completed) == 0 {
		fmt.Fprintf(b, "left:     nothing completed; the operations started were left unfinished (declined, cancelled, tampered with or asked again), and what a server keeps for them expires with their requestState\n")
		return
	}
	// The same result up to its identifiers is shown once, with a count.
	var order []string
	count := map[string]int{}
	first := map[string]string{}
	for _, t := range e.Completed {
		k := ids.ReplaceAllString(t, "#")
		if count[k] == 0 {
			order = append(order, k)
			first[k] = t
		}
		count[k]++
	}
	var parts []string
	for _, k := range order {
		p := quoted(first[k], 100)
		if count[k] > 1 {
			p += fmt.Sprintf(" (%d times, identifiers aside)", count[k])
		}
		parts = append(parts, p)
	}
	fmt.Fprintf(b, "left:     %d completed operations, each with %s's effect if it has one: %s\n", len(e.Completed), tool, escapeText(strings.Join(parts, "; ")))
}

// hintsText describes a tool's annotations with the defaults the spec
// gives an absent hint.
func hintsText(a *mcp.ToolAnnotations) string {
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	hint := func(name string, v *bool, def bool) string {
		switch {
		case v == nil:
			return fmt.Sprintf("%s not set (%v)", name, def)
		default:
			return fmt.Sprintf("%s %v", name, *v)
		}
	}
	return strings.Join([]string{hint("readOnlyHint", a.ReadOnlyHint, false), hint("destructiveHint", a.DestructiveHint, true),
		hint("idempotentHint", a.IdempotentHint, false)}, ", ") + "; reported, not relied on"
}

// Config says what to check.
type Config struct {
	// URL is the MCP endpoint, e.g. "http://127.0.0.1:3000/mcp".
	URL string
	// Tool is the tool to call; it should ask for input on its first call.
	Tool string
	// Args are the tool arguments (a JSON object); nil means {}.
	Args json.RawMessage
	// Token is the bearer token of the user the checker acts as; "" sends
	// none.
	Token string
	// OtherToken, when set, is a second user's token, for replaying one
	// user's state as another (replay-other-user).
	OtherToken string
	// OtherTool names the tool to replay the state against
	// (replay-other-tool); it is called with no arguments, or with Args
	// when it requires some. A named tool must be listed by tools/list
	// (else Run fails with a KindNoTool StartError); when it requires
	// arguments Args lacks, replay-other-tool is "could not test" and
	// names them. "" means the first tool the server marks read-only or
	// non-destructive: the checker calls no other tool that might change
	// something.
	OtherTool string
	// HTTPClient sends the MCP requests; nil means a new client. URL-mode
	// links are fetched with a separate client that keeps no cookies.
	HTTPClient *http.Client
	// FetchLinks says which URL-mode links url-no-login may open; "" means
	// FetchSafe.
	FetchLinks LinkPolicy
	// Logger receives the MCP client's notes about server oddities (a tool
	// dropped for bad x-mcp-header annotations, a request on a response
	// stream); they quote the server. Nil means slog.Default().
	Logger *slog.Logger
	// Progress, when set, is told before each retry that accepts a
	// URL-mode request without finishing its page: a server may hold
	// such a retry until the page is done (connect.Step holds it up to
	// connect.DefaultWait, 30 s) and answer only then, so a check of
	// a URL tool can be quiet for a minute or more. The message is WaitNote. It
	// runs on Run's goroutine.
	Progress func(msg string)
	// AllowEffects lets the checker complete the tool: accept with valid
	// form content as often as the cases need (a dozen operations or
	// more), each running the tool's effect — a draft prepared, a report
	// sent. False (the default) sends no answer that could complete it;
	// the cases that need one are NotRun.
	AllowEffects bool
}

// LinkPolicy says which URL-mode links the checker opens. A link comes
// from the server under test, so opening it is a request the server
// chose: it must not reach hosts the checker's machine can see but the
// server should not make it visit (server-side request forgery).
type LinkPolicy string

// Link policies.
const (
	// FetchNever opens no link: url-no-login is "could not test".
	FetchNever LinkPolicy = "never"
	// FetchSafe opens a link on the endpoint's own origin, or an https
	// link that passes url-safe whose host is not in a special-purpose
	// block of the IANA registries (loopback, private, shared CGNAT,
	// link-local, documentation, benchmarking, NAT64, 6to4 of one of
	// these, multicast, reserved, …), checked on every connection, so a
	// name resolving to one is refused too.
	FetchSafe LinkPolicy = "safe"
	// FetchAny opens any http(s) link (the behaviour before FetchSafe).
	FetchAny LinkPolicy = "any"
)

// Redact replaces in s the tokens (as "<token>" and "<other-token>"), the
// password of the URL's userinfo, or its user name when it has no
// password (as "xxxxx", also in a URL that does not parse), and the HTTP
// Basic credentials Go's client derives from that userinfo (base64 of
// "user:password", as "<basic-credentials>"), also in their URL-escaped
// spellings: a server may echo the Authorization header.
// Values shorter than three characters are left: replacing them would
// garble every word, and they guard nothing. A token shorter than
// MinMaskedToken (a demo token such as a user name) is masked only where
// it stands as a credential, after "Bearer ": masked everywhere, it
// would garble the text it also occurs in (a label "hu6 label" shown as
// "<token> label").
func (cfg *Config) Redact(s string) string {
	info, masked, ok := userinfo(cfg.URL)
	var pws, basic []string
	if ok {
		s = strings.ReplaceAll(s, cfg.URL, masked)
		user, pw, hasPW := strings.Cut(info, ":")
		if hasPW {
			pws = append(pws, pw)
		} else {
			pws = append(pws, user) // a user name alone may well be a token
		}
		if u, err := url.Parse(cfg.URL); err == nil && u.User != nil {
			// What net/http sends for a URL with userinfo and no
			// Authorization header (Request.SetBasicAuth).
			user = u.User.Username()
			pw, _ = u.User.Password()
			pws = append(pws, pw)
			if !hasPW {
				pws = append(pws, user)
			}
		} else if p, err := url.PathUnescape(pw); err == nil {
			pws = append(pws, p)
		}
		up := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
		basic = append(basic, up, strings.TrimRight(up, "="))
	}
	type secret struct{ value, as string }
	var secrets []secret
	for _, t := range []secret{{cfg.Token, "<token>"}, {cfg.OtherToken, "<other-token>"}} {
		if len(t.value) >= MinMaskedToken {
			secrets = append(secrets, t)
		} else if len(t.value) >= 3 {
			s = maskBearer(s, t.value, t.as)
		}
	}
	for _, b := range basic {
		secrets = append(secrets, secret{b, "<basic-credentials>"})
	}
	for _, pw := range pws {
		secrets = append(secrets, secret{pw, "xxxxx"})
	}
	for _, t := range secrets {
		if len(t.value) < 3 {
			continue
		}
		for _, v := range []string{t.value, url.QueryEscape(t.value), url.PathEscape(t.value)} {
			s = strings.ReplaceAll(s, v, t.as)
		}
	}
	return s
}

// MinMaskedToken is the length from which Config.Redact masks a token
// wherever it occurs. Real bearer tokens are far longer (an opaque OAuth
// token, a JWT); a shorter one is a demo token, masked only after
// "Bearer ".
const MinMaskedToken = 8

// maskBearer replaces value where it follows "Bearer " (as the
// Authorization header spells it, or in lower or upper case) in s.
func maskBearer(s, value, as string) string {
	for _, p := range []string{"Bearer ", "bearer ", "BEARER "} {
		s = strings.ReplaceAll(s, p+value, p+as)
	}
	return s
}

// userinfo finds the userinfo of raw by its text alone, so that a URL
// that does not parse is masked too: what lies between "://" and the last
// "@" before the next "/". masked is raw with the password part (after
// the first ":") replaced by "xxxxx", as url.URL.Redacted does, or the
// whole userinfo when it has no ":" (a user name alone may be a token).
func userinfo(raw string) (info, masked string, ok bool) {
	_, rest, found := strings.Cut(raw, "://")
	if !found {
		return "", raw, false
	}
	authority := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return "", raw, false
	}
	info = authority[:at]
	start := len(raw) - len(rest)
	shown := "xxxxx"
	if user, _, hasPW := strings.Cut(info, ":"); hasPW {
		shown = user + ":xxxxx"
	}
	return info, raw[:start] + shown + raw[start+at:], true
}

// HasUserinfo reports whether the endpoint URL carries a user name or a
// password (even one that does not parse): net/http would send it as HTTP
// Basic credentials, where MCP expects a bearer token (Config.Token).
func (cfg *Config) HasUserinfo() bool {
	_, _, ok := userinfo(cfg.URL)
	return ok
}

// StartError is Run's error when the check could not start, before any
// case ran: the server unreachable, the token refused, the endpoint not
// an MCP server, the tool not listed. Message is redacted (Config.Redact).
type StartError struct {
	// Kind is one of the Kind constants.
	Kind string
	// Message says what happened, without the "check: " prefix.
	Message string
	// Err is the underlying error (not redacted), nil for KindNoTool.
	Err error
}

// Kinds of StartError.
const (
	KindUnreachable  = "unreachable"   // no HTTP answer
	KindTokenRefused = "token-refused" // HTTP 401 or 403
	KindNotMCP       = "not-mcp"       // an answer that is not JSON-RPC
	KindNoTool       = "no-such-tool"  // tools/list does not list the tool or the other tool
	KindListFailed   = "list-failed"   // tools/list answered an error
	KindInterrupted  = "interrupted"   // the context was cancelled
	KindTimedOut     = "timed-out"     // the context's deadline passed
)

func (e *StartError) Error() string { return "check: " + e.Message }

// Unwrap returns Err.
func (e *StartError) Unwrap() error { return e.Err }

// startError classifies err, from the request named step, as a run that
// cannot start; nil when err is something else (a JSON-RPC error or a
// protocol error the cases will report).
func (cfg *Config) startError(step string, err error) *StartError {
	var (
		conn   *mcpclient.ConnectionError
		authE  *mcpclient.AuthError
		notMCP *mcpclient.NotMCPError
	)
	se := &StartError{Err: err}
	switch {
	case errors.Is(err, context.Canceled):
		se.Kind, se.Message = KindInterrupted, "interrupted during "+step
	case errors.Is(err, context.DeadlineExceeded):
		se.Kind, se.Message = KindTimedOut, "timed out during "+step
	case errors.As(err, &conn):
		// The transport's error may quote the server: a certificate's DNS
		// names, a malformed header line.
		se.Kind, se.Message = KindUnreachable, "cannot reach the MCP server at "+cfg.URL+": "+escapeText(conn.Err.Error())
	case errors.As(err, &authE):
		se.Kind = KindTokenRefused
		switch {
		case cfg.Token == "" && authE.StatusCode == http.StatusUnauthorized:
			se.Message = fmt.Sprintf("the server requires a token: HTTP %d on %s, and none was given", authE.StatusCode, step)
		default:
			se.Message = fmt.Sprintf("the server refused the token: HTTP %d on %s", authE.StatusCode, step)
		}
		if authE.WWWAuthenticate != "" {
			se.Message += " (WWW-Authenticate: " + clipEscape(cfg.Redact(authE.WWWAuthenticate), 160) + ")"
		}
	case errors.As(err, &notMCP):
		se.Kind = KindNotMCP
		se.Message = fmt.Sprintf("not an MCP endpoint: HTTP %d", notMCP.StatusCode)
		if notMCP.ContentType != "" {
			se.Message += " " + clipEscape(notMCP.ContentType, 60)
		}
		se.Message += " on " + step + ": " + clipEscape(cfg.Redact(notMCP.Reason), 160)
	default:
		return nil
	}
	se.Message = cfg.Redact(se.Message)
	return se
}

// clip cuts s to n runes, marking a cut with "…". Server text is clipped
// raw: the text report escapes it once (escapeText) and the JSON encoder
// escapes it for JSON, so neither shows it escaped twice.
func clip(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// quoted is clip(s, n) between double quotes, for a value in a sentence.
func quoted(s string, n int) string { return `"` + clip(s, n) + `"` }

// escapeText is termtext.Line: control, format and other invisible
// characters of s as escapes (\n, \x1b, \u202e), so server text cannot
// reorder or hide a line of a text report or message.
func escapeText(s string) string { return termtext.Line(s) }

// clipEscape is escapeText(clip(s, n)), for the messages of errors, which
// are text only.
func clipEscape(s string, n int) string { return escapeText(clip(s, n)) }
