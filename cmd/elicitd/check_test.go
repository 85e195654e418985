package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/check"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

// TestElicitCheck runs elicit check against elicitd: for connect_billing
// and export_report every case that applies passes, none fails and none
// is left untested; the ones that cannot apply to the tool are named.
func TestElicitCheck(t *testing.T) {
	cases := []struct {
		tool string
		args string
		na   []string // the cases that do not apply to this tool
	}{
		{"connect_billing", "", []string{check.CaseStateSegments, check.CaseReplayChangedArgs, check.CaseSwappedPending,
			check.CaseFormInvalid, check.CaseFormSecret}},
		{"export_report", `{"period":"2026-Q2","dataset":"sales"}`, []string{check.CaseStateSegments,
			check.CaseURLSafe, check.CaseURLNoLogin, check.CaseURLUnfinished}},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			e := newEnv(t)
			rep, err := check.Run(context.Background(), check.Config{URL: e.url + "/mcp", Tool: tc.tool,
				Args: json.RawMessage(tc.args), Token: "alice", OtherToken: "bob"})
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
