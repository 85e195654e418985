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
// The checker talks to the server through mcpclient.SendRaw (its own
// capabilities per request, hand-made answers, altered states) and fetches
// URL-mode links with no cookies, following redirects only within the
// link's origin. It never prints the tokens it was given.
package check

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/mcp-elicit/elicit/mcp"
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
	// Observed is what the server did (server text clipped and escaped,
	// tokens redacted).
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
}

// Report is the outcome of one Run.
type Report struct {
	// URL is the endpoint and Tool the tool that was checked.
	URL  string `json:"url"`
	Tool string `json:"tool"`
	// Server is the server's self-reported identity, when it sent one.
	Server *mcp.Implementation `json:"server,omitempty"`
	// ProtocolVersion is the version the checker spoke.
	ProtocolVersion string `json:"protocolVersion"`
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
	default:
		r.Summary.CouldNotTest++
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as a table: one block per case with its
// verdict, expectation and observation, then the counts.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	server := "unknown server"
	if r.Server != nil {
		server = r.Server.Name + " " + r.Server.Version
	}
	fmt.Fprintf(&b, "elicit check %s  tool %s  (%s, protocol %s)\n\n", r.URL, r.Tool, escape(server), r.ProtocolVersion)
	width := 0
	for _, res := range r.Results {
		width = max(width, len(res.ID))
	}
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-*s  %-14s  expect:   %s\n", width, res.ID, strings.ToUpper(string(res.Verdict)), res.Expectation)
		fmt.Fprintf(&b, "%-*s  %-14s  observed: %s\n", width, "", "", res.Observed)
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d cases: %d pass, %d fail, %d not applicable, %d could not test\n",
		len(r.Results), s.Pass, s.Fail, s.NotApplicable, s.CouldNotTest)
	_, err := io.WriteString(w, b.String())
	return err
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
	// when it requires some. "" means the first tool the server marks
	// read-only or non-destructive: the checker calls no other tool that
	// might change something.
	OtherTool string
	// HTTPClient sends the MCP requests; nil means a new client. URL-mode
	// links are fetched with a separate client that keeps no cookies.
	HTTPClient *http.Client
}

// escape clips s to n runes and writes control, format and other
// non-graphic characters as \u escapes, so server text cannot reorder or
// hide a line of the report.
func escape(s string) string { return clipEscape(s, 160) }

func clipEscape(s string, n int) string {
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == n {
			b.WriteString("…")
			break
		}
		i++
		if r == ' ' || (unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r)) {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, "\\u%04x", r)
	}
	return b.String()
}
