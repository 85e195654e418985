package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/examples/reports"
)

// TestMessagesSayHow: the answers a client gets when it is refused say
// what to do: a 401 how to authenticate (with a correct challenge), a
// -32022 every version the endpoint serves (the 2025 ones through the
// legacy bridge too, as server/discover does), an argument error which
// argument and what is wrong, a form answer's re-ask which field is
// missing.
func TestMessagesSayHow(t *testing.T) {
	e := newReportsEnv(t)
	for _, tc := range []struct {
		auth, message, challenge string
	}{
		{"Authorization:", "Unauthorized: send Authorization: Bearer <your user name>", `Bearer realm="elicitd"`},
		{"Authorization: Bearer al ice", "Unauthorized: the bearer token must be a user name of 1 to 64 letters, digits, '.', '_' or '-': send Authorization: Bearer <your user name>",
			`Bearer realm="elicitd", error="invalid_token"`},
	} {
		r := e.mcp("alice", "tools/call", "connect_billing", callBody(1, "connect_billing", "", metaURL), tc.auth)
		r.wantError(t, http.StatusUnauthorized, -32600)
		if r.Error.Message != tc.message || r.Header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("%q: message %q, WWW-Authenticate %q; want %q, %q", tc.auth, r.Error.Message, r.Header.Get("WWW-Authenticate"), tc.message, tc.challenge)
		}
	}

	served := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}
	v := strings.Replace(callBody(2, "connect_billing", "", metaURL), "2026-07-28", "2099-01-01", 1)
	r := e.mcp("alice", "tools/call", "connect_billing", v, "MCP-Protocol-Version: 2099-01-01")
	r.wantError(t, http.StatusBadRequest, -32022)
	var data struct{ Supported []string }
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || !reflect.DeepEqual(data.Supported, served) {
		t.Errorf("-32022 data %s, want supported %q", r.Error.Data, served)
	}
	d := e.mcp("alice", "server/discover", "", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{`+metaURL+`}}`)
	if got, _ := json.Marshal(d.Result["supportedVersions"]); string(got) != `["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]` {
		t.Errorf("discover supportedVersions %s", got)
	}

	for _, tc := range []struct{ args, name, says string }{
		{`{"period":"2026-Q2"}`, "dataset", "required"},
		{`{"period":"2026-Q2","dataset":"sales","colour":"red"}`, "colour", "not a known argument"},
	} {
		body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"export_report","arguments":` + tc.args + `,` + metaURL + `}}`
		r = e.mcp("alice", "tools/call", reports.ToolExport, body)
		r.wantError(t, http.StatusBadRequest, -32602)
		if !strings.Contains(r.Error.Message, `"`+tc.name+`"`) || !strings.Contains(r.Error.Message, tc.says) {
			t.Errorf("%s: %q, want it to name %q and say %q", tc.args, r.Error.Message, tc.name, tc.says)
		}
	}
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send_report","arguments":{"draft_id":7,"recipient":"bob@example.com"},` + metaURL + `}}`
	r = e.mcp("alice", "tools/call", reports.ToolSend, body)
	r.wantError(t, http.StatusBadRequest, -32602)
	if !strings.Contains(r.Error.Message, `"draft_id"`) || !strings.Contains(r.Error.Message, "string") {
		t.Errorf("argument of the wrong type: %q, want it to name \"draft_id\" and say it must be a string", r.Error.Message)
	}

	first := e.export(6, "alice", "2026-Q2", "sales", "", metaURL)
	first.input(t, reports.KeyOptions)
	again := e.export(7, "alice", "2026-Q2", "sales", retryWith(reports.KeyOptions, `{"action":"accept","content":{"detail":"summary"}}`, first.state()), metaURL)
	if msg, _ := again.input(t, reports.KeyOptions)["message"].(string); !strings.Contains(msg, "Your previous answer was not accepted: Label (label): missing; it is required.") {
		t.Errorf("re-ask: %q", msg)
	}
}
