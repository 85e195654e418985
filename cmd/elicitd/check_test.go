package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-elicit/elicit/check"
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
