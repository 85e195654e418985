package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/check"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

// TestElicitCheck runs elicit check against elicitd: for connect_billing
// and, with effects allowed, export_report every case that applies
// passes, none fails and none is left untested; the ones that cannot
// apply to the tool are named. The drafts export_report's check left
// behind are the ones its report lists.
func TestElicitCheck(t *testing.T) {
	cases := []struct {
		tool  string
		args  string
		allow bool
		na    []string // the cases that do not apply to this tool
	}{
		{"connect_billing", "", false, []string{check.CaseStateSegments, check.CaseReplayChangedArgs, check.CaseSwappedPending,
			check.CaseFormInvalid, check.CaseFormSecret}},
		{"export_report", `{"period":"2026-Q2","dataset":"sales"}`, true, []string{check.CaseStateSegments,
			check.CaseURLSafe, check.CaseURLNoLogin, check.CaseURLUnfinished}},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			e := newReportsEnv(t)
			rep, err := check.Run(context.Background(), check.Config{URL: e.url + "/mcp", Tool: tc.tool,
				Args: json.RawMessage(tc.args), Token: "alice", OtherToken: "bob", AllowEffects: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			na := map[string]bool{}
			for _, id := range tc.na {
				na[id] = true
			}
			for _, r := range rep.Results {
				want := check.Pass
				if na[r.ID] {
					want = check.NotApplicable
				}
				if r.Verdict != want {
					t.Errorf("%s: %s, want %s; observed: %s", r.ID, r.Verdict, want, r.Observed)
				}
			}
			if len(rep.Results) != 21 || rep.Failed() {
				t.Errorf("%d results, failed %v", len(rep.Results), rep.Failed())
			}
			drafts := e.records(reports.KindDraft, "alice")
			if len(drafts) != len(rep.Effects.Completed) || (tc.allow && len(drafts) == 0) {
				t.Errorf("%d drafts left behind, the report lists %d completed operations: %q", len(drafts), len(rep.Effects.Completed), rep.Effects.Completed)
			}
			var out strings.Builder
			if err := rep.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if tc.allow && !strings.Contains(out.String(), fmt.Sprintf("left:     %d completed operations", len(drafts))) {
				t.Errorf("the text report does not say what was left behind:\n%s", out.String())
			}
		})
	}
}

// TestElicitCheckJWT: under --auth jwt, opening connect_billing's link
// with no cookies goes to elicitd's sign-in and on to the issuer: the
// checker sees a redirect to sign in, so url-no-login passes.
func TestElicitCheckJWT(t *testing.T) {
	e, idp := newJWTEnv(t)
	tok := func(sub string) string {
		return idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: sub, Audience: []string{e.url + "/mcp"}})
	}
	rep, err := check.Run(context.Background(), check.Config{URL: e.url + "/mcp", Tool: "connect_billing", Token: tok("carol"), OtherToken: tok("dave")})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Result(check.CaseURLNoLogin); r.Verdict != check.Pass || !strings.Contains(r.Observed, "a redirect to sign in") {
		t.Errorf("url-no-login: %s %q", r.Verdict, r.Observed)
	}
	if rep.Failed() {
		t.Errorf("failed: %+v", rep.Summary)
	}
}

// TestElicitCheckLeavesNoEffect: by default elicit check completes no
// effect. On a real draft with the reporting account connected,
// send_report's check leaves the draft unsent and list_drafts unchanged;
// export_report's leaves no draft behind.
func TestElicitCheckLeavesNoEffect(t *testing.T) {
	e := newReportsEnv(t)
	draft := e.prepare(t, "alice", "2026-Q2", "sales")
	e.toConfirmation(t, "alice", draft, "boss@example.com") // connects the account
	before := e.list(90, "alice").text()

	for _, tc := range []struct{ tool, args string }{
		{reports.ToolSend, `{"draft_id":` + jsonString(draft) + `,"recipient":"boss@example.com"}`},
		{reports.ToolExport, `{"period":"2026-Q3","dataset":"usage"}`},
	} {
		rep, err := check.Run(t.Context(), check.Config{URL: e.url + "/mcp", Tool: tc.tool,
			Args: json.RawMessage(tc.args), Token: "alice", OtherToken: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed() {
			t.Errorf("%s: a case failed: %+v", tc.tool, rep.Summary)
		}
		for _, id := range []string{check.CaseFormInvalid, check.CaseReplayCompleted} {
			if r := rep.Result(id); r.Verdict != check.NotRun || !strings.Contains(r.Observed, "not run without --allow-effects") {
				t.Errorf("%s %s: %s %q, want not run", tc.tool, id, r.Verdict, r.Observed)
			}
		}
		if rep.Summary.Pass < 10 || rep.Effects.Allowed || len(rep.Effects.Completed) != 0 || rep.Effects.Started == 0 {
			t.Errorf("%s: summary %+v, effects %+v", tc.tool, rep.Summary, rep.Effects)
		}
		e.wantDrafts(t, "alice", reports.StatusPrepared)
		e.wantDrafts(t, "bob")
		e.wantSends(t, "alice", 0)
		if after := e.list(91, "alice").text(); after != before {
			t.Errorf("%s: list_drafts changed:\n%s\nwas\n%s", tc.tool, after, before)
		}
	}
}
