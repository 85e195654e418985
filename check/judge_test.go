package check

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

func TestAcceptedRefused(t *testing.T) {
	op := &outcome{inputReq: true, requests: map[string]inputReq{"k": {}}}
	rpc := &outcome{rpc: &mcpclient.RPCError{Code: -32602}}
	again := &outcome{inputReq: true, requests: map[string]inputReq{"k": {}}}
	next := &outcome{inputReq: true, requests: map[string]inputReq{"other": {}}}
	ok := &outcome{complete: true, text: "Draft d_7f6ba20069d194b4 prepared"}
	declined := &outcome{complete: true, isError: true, text: "You declined (operation 41)."}
	declinedToo := &outcome{complete: true, isError: true, text: "You declined (operation 42)."}
	badState := &outcome{complete: true, isError: true, text: "That state is not valid."}
	for _, tc := range []struct {
		name              string
		control, o        *outcome
		accepted, refused bool
	}{
		{"success control, success", ok, ok, true, false},
		{"success control, JSON-RPC error", ok, rpc, false, true},
		{"success control, asked again", ok, again, false, true},
		{"success control, next question", ok, next, true, false},
		{"success control, error result", ok, badState, false, true},
		{"decline control, the same decline", declined, declinedToo, true, false},
		{"decline control, another error result", declined, badState, false, true},
		{"decline control, success", declined, ok, true, false},
		{"failed request", ok, &outcome{err: context.Canceled}, false, false},
	} {
		c := &checker{controlOut: tc.control}
		if a, r := c.accepted(tc.o, op), c.refused(tc.o, op); a != tc.accepted || r != tc.refused {
			t.Errorf("%s: accepted %v refused %v, want %v %v", tc.name, a, r, tc.accepted, tc.refused)
		}
	}
}

// refuser asks on the first call and refuses every retry: it gives no
// evidence about its state handling, so no state case may pass.
func refuser(t *testing.T) string { return (&fake{refuseRetries: true}).start(t) }

func TestRefusingEverythingPassesNoStateCase(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rep, err := Run(context.Background(), Config{URL: refuser(t), Tool: "t", Token: "alice", OtherToken: "bob", AllowEffects: allow})
		if err != nil {
			t.Fatal(err)
		}
		mayPass := map[string]bool{CaseCapability: false, CaseDecline: true, CaseCancel: true, CaseResponsesMissing: true,
			CaseFormSecret: true, CaseStatePlaintext: true}
		for _, r := range rep.Results {
			if r.Verdict == Pass && !mayPass[r.ID] {
				t.Errorf("%s passed on a server that refuses every retry: %s", r.ID, r.Observed)
			}
			if r.Verdict == Fail && r.ID != CaseCapability {
				t.Errorf("%s failed: %s", r.ID, r.Observed)
			}
		}
		noControl := []string{CaseStateBitFlip, CaseReplayOtherUser, CaseResponsesWrongKey}
		if allow {
			noControl = append(noControl, CaseFormInvalid)
		} else if r := rep.Result(CaseFormInvalid); r.Verdict != NotRun {
			t.Errorf("%s without effects: %s %q, want not run", CaseFormInvalid, r.Verdict, r.Observed)
		}
		for _, id := range noControl {
			if r := rep.Result(id); r.Verdict != CouldNotTest || !strings.Contains(r.Observed, "no genuine answer moved the call on") {
				t.Errorf("%s (effects %v): %s %q, want could not test for lack of a control", id, allow, r.Verdict, r.Observed)
			}
		}
	}
}

// TestFormSecretBeyondEnglish: form-secret fails on a form whose secret is
// named in another language, in leetspeak, or marked by writeOnly or a
// card-number default, and passes on an ordinary form.
func TestFormSecretBeyondEnglish(t *testing.T) {
	for _, tc := range []struct {
		prop, want string // want "" = pass
	}{
		{`"kennwort":{"type":"string"}`, `"kennwort": its name mentions "kennwort"`},
		{`"k":{"type":"string","title":"Numéro de carte"}`, `its title mentions "numero de carte"`},
		{`"k":{"type":"string","description":"Your t0ken"}`, `its description mentions "token"`},
		{`"k":{"type":"string","writeOnly":true}`, `it is marked writeOnly`},
		{`"k":{"type":"string","default":"4111111111111111"}`, `its default looks like a card number`},
		{`"label":{"type":"string","title":"Label"}`, ""},
	} {
		schema := json.RawMessage(`{"type":"object","properties":{` + tc.prop + `}}`)
		c := &checker{first: &outcome{requests: map[string]inputReq{"ask": {method: mcp.MethodElicitationCreate,
			elicit: &mcp.ElicitRequestParams{Mode: mcp.ElicitationModeForm, Message: "m", RequestedSchema: schema}}}}}
		r := c.caseFormSecret(context.Background())
		switch {
		case tc.want == "" && r.Verdict != Pass:
			t.Errorf("%s: %s %q, want pass", tc.prop, r.Verdict, r.Observed)
		case tc.want != "" && (r.Verdict != Fail || !strings.Contains(r.Observed, tc.want)):
			t.Errorf("%s: %s %q, want fail with %q", tc.prop, r.Verdict, r.Observed, tc.want)
		}
	}
}
