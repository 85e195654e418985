package check

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

// effectServer is a safe 2026-07-28 server whose tools have an effect
// the test can count: "send" asks a form confirmation and sends on
// accept; "link" asks in URL mode and never sees its page finished;
// "mixed" asks a form and a URL in one round. A retry with a state it
// did not issue, or for another user or tool, is refused; a replayed
// completed state gets the recorded result.
type effectServer struct {
	mu     sync.Mutex
	states map[string]string // state → user + " " + tool
	done   map[string]string // state → recorded result text
	sends  int               // effects: accepted "send" or "mixed" operations
	// sentOnce: "once" (one draft: send it and it is gone) was sent; a
	// new call then answers "already sent" without asking.
	sentOnce bool
}

func (s *effectServer) start(t *testing.T) string {
	t.Helper()
	s.states, s.done = map[string]string{}, map[string]string{}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	return hs.URL
}

func (s *effectServer) serve(w http.ResponseWriter, r *http.Request) {
	c := readEffectCall(w, r)
	switch c.method {
	case mcp.MethodDiscover:
		c.reply(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}`)
		return
	case mcp.MethodToolsList:
		c.reply(`{"resultType":"complete","tools":[{"name":"send","inputSchema":{"type":"object"}},{"name":"link","inputSchema":{"type":"object"}},` +
			`{"name":"mixed","inputSchema":{"type":"object"}},{"name":"once","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}`)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.params.RequestState == nil {
		if c.params.Name == "once" && s.sentOnce {
			c.reply(completeResult("Already sent; not sent again.", true))
			return
		}
		s.ask(c)
		return
	}
	s.retry(c)
}

// effectCall is one request to effectServer and its response writer.
type effectCall struct {
	w      http.ResponseWriter
	id     json.RawMessage
	method string
	user   string // the bearer token
	params effectParams
}

type effectParams struct {
	Name           string                     `json:"name"`
	RequestState   *string                    `json:"requestState"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Meta           struct {
		Caps mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

func readEffectCall(w http.ResponseWriter, r *http.Request) *effectCall {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params effectParams    `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	w.Header().Set("Content-Type", "application/json")
	return &effectCall{w: w, id: req.ID, method: req.Method, user: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), params: req.Params}
}

func (c *effectCall) reply(result string) {
	fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, c.id, result)
}

// refuse answers with a JSON-RPC error and HTTP 400.
func (c *effectCall) refuse(code int, message string) {
	c.w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, c.id, code, message)
}

func completeResult(text string, isError bool) string {
	return fmt.Sprintf(`{"resultType":"complete","content":[{"type":"text","text":%q}],"isError":%v}`, text, isError)
}

// ask answers with the tool's input requests and a new state issued for
// the user and tool, or -32021 when the client lacks the mode they need.
func (s *effectServer) ask(c *effectCall) {
	p := c.params
	caps := p.Meta.Caps
	if (p.Name != "link" && !caps.ElicitationForm()) || (p.Name != "send" && !caps.ElicitationURL()) {
		c.refuse(-32021, "Missing required client capability")
		return
	}
	b := make([]byte, 25)
	_, _ = rand.Read(b)
	st := base64.RawURLEncoding.EncodeToString(b)
	s.states[st] = c.user + " " + p.Name
	const form = `"confirm":{"method":"elicitation/create","params":{"mode":"form","message":"Send?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`
	const link = `"page":{"method":"elicitation/create","params":{"mode":"url","message":"Open","url":"https://example.com/page","elicitationId":"e1"}}`
	reqs := map[string]string{"send": form, "once": form, "link": link, "mixed": form + "," + link}[p.Name]
	c.reply(fmt.Sprintf(`{"resultType":"input_required","requestState":%q,"inputRequests":{%s}}`, st, reqs))
}

// retry answers a retry: a state not issued for this user and tool is
// refused, a completed one replayed; a confirmed send is sent once;
// anything else is asked again.
func (s *effectServer) retry(c *effectCall) {
	p := c.params
	st := *p.RequestState
	if s.states[st] != c.user+" "+p.Name {
		c.refuse(-32602, "invalid requestState")
		return
	}
	if text, ok := s.done[st]; ok {
		c.reply(completeResult(text, false))
		return
	}
	actions := answerActions(p.InputResponses)
	switch {
	case actions["confirm"] == "decline" || actions["page"] == "decline", actions["confirm"] == "cancel" || actions["page"] == "cancel":
		c.reply(completeResult("Nothing was sent: you said no.", true))
	case (p.Name == "send" || p.Name == "once") && actions["confirm"] == "accept":
		s.sends++
		s.sentOnce = s.sentOnce || p.Name == "once"
		s.done[st] = fmt.Sprintf("Sent, as send number %d.", s.sends)
		c.reply(completeResult(s.done[st], false))
	default:
		// The page is never finished; an invalid or missing answer is asked again.
		s.ask(c)
	}
}

// answerActions maps each input response to its action; an accepted
// confirmation without ok: true counts as "invalid".
func answerActions(responses map[string]json.RawMessage) map[string]string {
	actions := map[string]string{}
	for k, raw := range responses {
		var a struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		_ = json.Unmarshal(raw, &a)
		if a.Action == "accept" && k == "confirm" && a.Content["ok"] != true {
			a.Action = "invalid"
		}
		actions[k] = a.Action
	}
	return actions
}

// TestNoEffectsByDefault: without AllowEffects the checker sends no
// answer that could complete the tool — the server's effect never
// happens — and says so; the cases that need a completed accept are not
// run.
func TestNoEffectsByDefault(t *testing.T) {
	srv := &effectServer{}
	url := srv.start(t)
	notRun := []string{CaseFormInvalid, CaseReplayCompleted}
	rep, err := Run(context.Background(), Config{URL: url, Tool: "send", Token: "alice", OtherToken: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if srv.sends != 0 || len(rep.Effects.Completed) != 0 || rep.Effects.Allowed || rep.Effects.Started == 0 || rep.Effects.Calls <= rep.Effects.Started {
		t.Fatalf("default: %d sends, effects %+v", srv.sends, rep.Effects)
	}
	for _, r := range rep.Results {
		want := Pass
		switch r.ID {
		case CaseFormInvalid, CaseReplayCompleted:
			want = NotRun
		case CaseStateSegments, CaseReplayChangedArgs, CaseSwappedPending, CaseURLSafe, CaseURLNoLogin, CaseURLUnfinished:
			want = NotApplicable
		case CaseReplayOtherTool:
			want = r.Verdict // no read-only tool to replay against
		}
		if r.Verdict != want {
			t.Errorf("default %s: %s, want %s (%s)", r.ID, r.Verdict, want, r.Observed)
		}
	}
	if rep.Summary.NotRun != len(notRun) {
		t.Errorf("summary %+v", rep.Summary)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"effects:  not allowed", "left:     nothing completed", ", 2 not run without --allow-effects",
		"destructiveHint not set (true)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestEffectsWhenAllowed: with AllowEffects the cases that need a
// completed accept run, and the report lists the operations they completed.
func TestEffectsWhenAllowed(t *testing.T) {
	srv := &effectServer{}
	url := srv.start(t)
	rep, err := Run(context.Background(), Config{URL: url, Tool: "send", Token: "alice", OtherToken: "bob", AllowEffects: true})
	if err != nil {
		t.Fatal(err)
	}
	if srv.sends == 0 || len(rep.Effects.Completed) != srv.sends || !rep.Effects.Allowed {
		t.Errorf("allowed: %d sends, %d completed in the report", srv.sends, len(rep.Effects.Completed))
	}
	for _, id := range []string{CaseFormInvalid, CaseReplayCompleted} {
		if r := rep.Result(id); r.Verdict != Pass {
			t.Errorf("allowed %s: %s (%s)", id, r.Verdict, r.Observed)
		}
	}
}

// TestEffectsLast: with AllowEffects, against a tool whose effect can
// happen once (a draft that is gone once sent), the answer that completes
// the tool is sent last: every other case runs while the draft is unsent,
// the effect happens once, and the cases that need it still run.
func TestEffectsLast(t *testing.T) {
	srv := &effectServer{}
	url := srv.start(t)
	rep, err := Run(context.Background(), Config{URL: url, Tool: "once", Token: "alice", OtherToken: "bob", AllowEffects: true})
	if err != nil {
		t.Fatal(err)
	}
	if srv.sends != 1 || len(rep.Effects.Completed) != 1 {
		t.Errorf("%d sends, %d completed in the report; want 1", srv.sends, len(rep.Effects.Completed))
	}
	for _, r := range rep.Results {
		if r.Verdict == CouldNotTest || r.Verdict == Fail || r.Verdict == NotRun {
			if r.ID == CaseReplayOtherTool {
				continue // no read-only tool to replay against
			}
			t.Errorf("%s: %s (%s)", r.ID, r.Verdict, r.Observed)
		}
	}
	for _, id := range []string{CaseFormInvalid, CaseReplayCompleted} {
		if r := rep.Result(id); r.Verdict != Pass {
			t.Errorf("%s: %s, want pass (%s)", id, r.Verdict, r.Observed)
		}
	}
}

// TestURLConsentIsNoEffect: accepting a URL-mode request is consent, not
// completion, so url-accept-unfinished runs by default; in a round that
// also asks a form, accepting would send the form's answers, so it does
// not.
func TestURLConsentIsNoEffect(t *testing.T) {
	url := (&effectServer{}).start(t)
	for _, tc := range []struct {
		tool string
		want Verdict
	}{{"link", Pass}, {"mixed", NotRun}} {
		rep, err := Run(context.Background(), Config{URL: url, Tool: tc.tool, Token: "alice", FetchLinks: FetchNever})
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Result(CaseURLUnfinished); r.Verdict != tc.want {
			t.Errorf("%s: url-accept-unfinished %s, want %s (%s)", tc.tool, r.Verdict, tc.want, r.Observed)
		}
		if len(rep.Effects.Completed) != 0 || rep.Failed() {
			t.Errorf("%s: completed %q, summary %+v", tc.tool, rep.Effects.Completed, rep.Summary)
		}
	}
}

func TestWithheld(t *testing.T) {
	form := inputReq{method: mcp.MethodElicitationCreate, elicit: &mcp.ElicitRequestParams{Mode: "form"}}
	link := inputReq{method: mcp.MethodElicitationCreate, elicit: &mcp.ElicitRequestParams{Mode: "url", URL: "https://example.com/"}}
	sampling := inputReq{method: mcp.MethodSamplingCreate}
	for _, tc := range []struct {
		name            string
		reqs            map[string]inputReq
		accept, decline bool // withheld without AllowEffects
	}{
		{"form", map[string]inputReq{"f": form}, true, false},
		{"url", map[string]inputReq{"u": link}, false, false},
		{"form and url", map[string]inputReq{"f": form, "u": link}, true, false},
		{"url and sampling", map[string]inputReq{"u": link, "s": sampling}, true, false},
		{"sampling only", map[string]inputReq{"s": sampling}, true, true},
	} {
		op := &outcome{inputReq: true, requests: tc.reqs}
		c := &checker{}
		if a, d := c.withheld(op, answerGood), c.withheld(op, answerDecline); a != tc.accept || d != tc.decline {
			t.Errorf("%s: accept withheld %v, decline withheld %v; want %v, %v", tc.name, a, d, tc.accept, tc.decline)
		}
		c.cfg.AllowEffects = true
		if c.withheld(op, answerGood) || c.withheld(op, answerDecline) {
			t.Errorf("%s: withheld with AllowEffects", tc.name)
		}
	}
}

// TestWriteTextSaysItOnce: when the tool asks this user nothing (already
// connected), every case has the same observation: the text report says
// it once, for every case, with how to get a state that can be checked.
func TestWriteTextSaysItOnce(t *testing.T) {
	done := &fake{hook: func(w http.ResponseWriter, _ *http.Request, method string, id json.RawMessage) bool {
		if method != mcp.MethodToolsCall {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":"Billing is already connected."}]}}`, id)
		return true
	}}
	rep, err := Run(context.Background(), Config{URL: done.start(t), Tool: "t", Token: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if n := strings.Count(out, "Billing is already connected."); n != 2 { // once observed, once left behind
		t.Errorf("the observation is written %d times, want once (plus the completed call):\n%s", n-1, out)
	}
	for _, want := range []string{"21 cases: every case", "NOT APPLICABLE", "a fresh user (another --token", "21 cases: 0 pass, 0 fail, 21 not applicable"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text report lacks %q:\n%s", want, out)
		}
	}
	if len(rep.Results) != 21 {
		t.Errorf("%d results in the report, want 21 (grouping is for the text only)", len(rep.Results))
	}
}

// The JSON report shows text as text: R&D > plan, not R\u0026D \u003e plan.
func TestWriteJSONTextAsText(t *testing.T) {
	rep := &Report{URL: "http://127.0.0.1/mcp", Tool: "export_report"}
	rep.add(Result{ID: CaseDecline, Verdict: Pass, Observed: `complete result "Draft labelled R&D > plan <v2>"`})
	var js strings.Builder
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `R&D > plan <v2>`) {
		t.Errorf("JSON report:\n%s", js.String())
	}
}

// A retry that accepts a URL-mode request may be held by the server for a
// minute; Config.Progress hears of each one before it is sent.
func TestProgressBeforeURLAccept(t *testing.T) {
	var (
		mu            sync.Mutex
		notes, unsaid int
	)
	s := &effectServer{}
	s.start(t) // for its maps: the test serves it through hs, which watches
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if strings.Contains(string(body), `"page":{"action":"accept"}`) {
			if notes == 0 {
				unsaid++
			}
			notes--
		}
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.serve(w, r)
	}))
	defer hs.Close()
	rep, err := Run(context.Background(), Config{URL: hs.URL, Tool: "link", Token: "alice", FetchLinks: FetchNever,
		Progress: func(msg string) {
			if msg != WaitNote {
				t.Errorf("progress %q", msg)
			}
			mu.Lock()
			notes++
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Result(CaseURLUnfinished); r.Verdict != Pass {
		t.Fatalf("url-accept-unfinished: %s %s", r.Verdict, r.Observed)
	}
	if unsaid != 0 || notes != 0 {
		t.Errorf("%d URL accepts sent without a note first; %d notes left over", unsaid, notes)
	}
}
