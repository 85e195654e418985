package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
)

// auditLine is one decoded audit record.
type auditLine struct {
	Msg           string  `json:"msg"`
	Outcome       string  `json:"outcome"`
	OperationID   string  `json:"operation_id"`
	Principal     string  `json:"principal"`
	Method        string  `json:"method"`
	Name          string  `json:"name"`
	Round         *int    `json:"round"`
	Code          int     `json:"code"`
	LatencyMs     float64 `json:"latency_ms"`
	FlowID        string  `json:"flow_id"`
	FlowPrincipal string  `json:"flow_principal"`
}

func auditLines(t *testing.T, raw string) []auditLine {
	t.Helper()
	var out []auditLine
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		var a auditLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("audit line is not JSON: %q", l)
		}
		out = append(out, a)
	}
	return out
}

// TestAuditStream runs every flow — billing pending, accepted, declined,
// cancelled; reports form and send; a client without the mode; a tampered
// and an expired state; another user on a page — and checks that the
// audit stream holds one record per round, in order, with the right
// category, and that no secret, form content, label text, state or URL
// query appears in it.
func TestAuditStream(t *testing.T) {
	audit := &syncBuffer{}
	e := newReportsEnv(t, func(c *config) { c.auditOut = audit })
	const label = "Board pack LABEL-7731"
	const reportingKey = "rk_TESTKEY_93e1"
	formAnswer := `{"action":"accept","content":{"detail":"detailed","label":"` + label + `"}}`

	var want []string // the outcome of each MCP round, in order
	round := func(r *mcpResponse, outcome string) *mcpResponse {
		t.Helper()
		want = append(want, outcome)
		return r
	}
	var states []string
	keep := func(r *mcpResponse) *mcpResponse { states = append(states, r.state()); return r }

	// Billing: asked, accepted too early (pending), bob on alice's page,
	// the key typed, accepted, then declined and cancelled on that state:
	// replays, which get the first answer's result and outcome.
	round(e.mcp("alice", "tools/call", billing.ToolName, callBody(6, billing.ToolName, "", metaForm)), "capability_missing").wantError(t, 400, -32021)
	first := keep(round(e.connect(1, "alice", ""), "input_required"))
	_, _, link := first.elicitation(t)
	keep(round(e.connect(2, "alice", answer("accept", first.state())), "pending"))
	if status, _ := e.browser().login(e.url, link, "bob"); status != http.StatusForbidden {
		t.Fatalf("bob on alice's page: %d", status)
	}
	alice := e.browser()
	_, page := alice.login(e.url, link, "alice")
	if status, _ := alice.fillKey(e.url, page, link, testKey); status != 200 {
		t.Fatalf("key POST: %d", status)
	}
	round(e.connect(3, "alice", answer("accept", first.state())), "accepted").wantComplete(t, false, billing.TextConnected)
	round(e.connect(4, "alice", answer("decline", first.state())), "accepted").wantComplete(t, false, billing.TextConnected)
	round(e.connect(5, "alice", answer("cancel", first.state())), "accepted").wantComplete(t, false, billing.TextConnected)
	tampered := first.state()[:len(first.state())-6] + "AAAAAA"
	round(e.connect(7, "alice", answer("accept", tampered)), "invalid_state").wantError(t, 400, -32602)

	// Reports: the form, then sending (account page, confirmation).
	r := keep(round(e.export(10, "alice", "2026-Q2", "sales", "", metaURL), "input_required"))
	r = round(e.export(11, "alice", "2026-Q2", "sales", retryWith(reports.KeyOptions, formAnswer, r.state()), metaURL), "accepted")
	draft, _ := r.structured()["draft_id"].(string)
	s := keep(round(e.send(12, "alice", draft, "bob@example.com", "", metaURL), "input_required"))
	e.connectAccount(t, s.input(t, reports.KeyConnect)["url"].(string), "alice")
	s = keep(round(e.send(13, "alice", draft, "bob@example.com", retryWith(reports.KeyConnect, urlAccept, s.state()), metaURL), "accepted"))
	s.input(t, reports.KeyConfirm)
	round(e.send(14, "alice", draft, "bob@example.com", retryWith(reports.KeyConfirm, confirmed, s.state()), metaURL), "accepted").wantComplete(t, false, "")
	round(e.list(15, "alice"), "completed")
	round(e.export(16, "alice", "2026-Q3", "sales", "", metaNone), "capability_missing").wantError(t, 400, -32021)

	// An expired state: export restarts with a fresh question.
	r = keep(round(e.export(17, "alice", "2026-Q4", "sales", "", metaURL), "input_required"))
	e.advance(10*time.Minute + time.Second)
	round(e.export(18, "alice", "2026-Q4", "sales", retryWith(reports.KeyOptions, formAnswer, r.state()), metaURL), "expired")

	lines := auditLines(t, audit.String())
	checkAuditRecords(t, lines, want)
	if n := strings.Count(audit.String(), `"page_refused"`); n != 1 {
		t.Fatalf("%d identity_mismatch records, want 1 (bob opened the page once)", n)
	}
	// Rounds of one operation share its id: billing rounds 0, then 1.
	if lines[1].OperationID != lines[2].OperationID || *lines[1].Round != 0 || *lines[2].Round != 1 {
		t.Fatalf("billing rounds: %+v %+v", lines[1], lines[2])
	}

	checkAuditHides(t, audit.String(), states, testKey, reportingKey, label, "LABEL-7731", `"detail":"detailed"`, "bob@example.com", "flow=", "?", "http://")
	// Nor anything of the answers on the operational log's audit side:
	// the secret is in no log at all.
	if strings.Contains(e.logs.String(), testKey) || strings.Contains(e.logs.String(), reportingKey) {
		t.Fatal("a secret reached the operational log")
	}
}

// checkAuditRecords checks the audit records: one mcp_round per round
// with the outcomes of want in order, each with its fields (an operation
// id and a round unless the state was refused), and page_refused records
// of bob on alice's flow.
func checkAuditRecords(t *testing.T, lines []auditLine, want []string) {
	t.Helper()
	var got []string
	for i, l := range lines {
		switch l.Msg {
		case "mcp_round":
			got = append(got, l.Outcome)
			if l.Principal != "alice" || l.Method != "tools/call" || l.Name == "" || l.LatencyMs <= 0 {
				t.Errorf("record %d lacks a field: %+v", i, l)
			}
			if hasOp := regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(l.OperationID); hasOp != (l.Outcome != "invalid_state") || (l.Round == nil) != !hasOp {
				t.Errorf("record %d: operation id %q, round %v", i, l.OperationID, l.Round)
			}
		case "page_refused":
			if l.Outcome != "identity_mismatch" || l.Principal != "bob" || l.FlowPrincipal != "alice" || l.FlowID == "" || l.Name != "billing_key" {
				t.Errorf("page record: %+v", l)
			}
		default:
			t.Errorf("unexpected audit record %q", l.Msg)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("audit outcomes:\n got %v\nwant %v", got, want)
	}
}

// checkAuditHides checks that the audit stream holds none of the
// requestStates (nor their first 40 characters) and none of forbidden.
func checkAuditHides(t *testing.T, audit string, states []string, forbidden ...string) {
	t.Helper()
	for _, st := range states {
		forbidden = append(forbidden, st, st[:40])
	}
	for _, f := range forbidden {
		if strings.Contains(audit, f) {
			t.Errorf("the audit stream contains %q", f)
		}
	}
}

// TestMetricsDeclineIsNotAFault: after a decline, /metrics counts it
// under elicitd_outcomes_total{outcome="declined"} and nothing under
// elicitd_faults_total; a malformed answer then counts as a fault, and
// the decline stays where it was.
func TestMetricsDeclineIsNotAFault(t *testing.T) {
	e := newEnv(t)
	first := e.connect(1, "alice", "")
	e.connect(2, "alice", answer("decline", first.state()))
	scrape := func() string {
		t.Helper()
		resp, err := http.Get(e.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("/metrics: %d", resp.StatusCode)
		}
		return string(b)
	}
	m := scrape()
	for _, line := range []string{
		`elicitd_outcomes_total{method="tools/call",outcome="declined"} 1`,
		`elicitd_outcomes_total{method="tools/call",outcome="input_required"} 1`,
		`elicitd_outcomes_total{method="tools/call",outcome="cancelled"} 0`,
		`elicitd_outcomes_total{method="tools/call",outcome="lease_lost"} 0`,
		`elicitd_request_duration_seconds_count{method="tools/call"} 2`,
		`elicitd_build_info{goversion="go`,
		// The fault family is visible before the first fault.
		"# HELP elicitd_faults_total ",
		"# TYPE elicitd_faults_total counter",
		`elicitd_faults_total{code="-32602",method="tools/call"} 0`,
		`elicitd_faults_total{code="-32603",method="resources/read"} 0`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	for _, l := range strings.Split(grepLines(m, "elicitd_faults_total{"), "\n") {
		if !strings.HasSuffix(l, " 0") {
			t.Fatalf("a decline was counted as a fault:\n%s", grepLines(m, "elicitd_faults_total"))
		}
	}
	e.connect(3, "alice", `"inputResponses":{"billing_key":12},"requestState":"`+first.state()+`",`).wantError(t, 400, -32602)
	m = scrape()
	for _, line := range []string{
		`elicitd_faults_total{code="-32602",method="tools/call"} 1`,
		`elicitd_outcomes_total{method="tools/call",outcome="declined"} 1`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s:\n%s", line, grepLines(m, "elicitd_"))
		}
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestHealthAndReadiness: /healthz answers while the process runs;
// /readyz answers 200 while the store answers and 503 once it is closed.
func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t)
	get := func(path string) (int, string) {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	e.app.Close() // the store goes away
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != "not ready: store unreachable\n" {
		t.Fatalf("/readyz with the store closed: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz with the store closed: %d", code)
	}
}

// With --metrics-addr, /metrics leaves the public listener; the separate
// listener serves it with the health endpoints.
func TestMetricsAddrMovesMetrics(t *testing.T) {
	e := newReportsEnv(t, func(c *config) { c.metricsAddr = "127.0.0.1:0" })
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics on the public listener: %d", resp.StatusCode)
	}
	ops := httptest.NewServer(e.app.opsMux())
	defer ops.Close()
	for path, want := range map[string]string{"/metrics": "elicitd_build_info", "/healthz": "ok", "/readyz": "ready"} {
		resp, err := http.Get(ops.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s on the metrics listener: %d %.80q", path, resp.StatusCode, b)
		}
	}
}

// --audit-log: a file is created 0600 and appended to; off writes nothing.
func TestAuditLogDestinations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec := &auditRecord{event: "mcp_round", outcome: "declined", principal: "alice", round: 1}
	for i := 0; i < 2; i++ { // two runs append to one file
		a, closer, err := newAuditor(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.write(t.Context(), rec)
		if err := closer(); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), `"outcome":"declined"`); n != 2 {
		t.Fatalf("audit file holds %d records:\n%s", n, b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file mode %v", fi.Mode().Perm())
	}
	var out bytes.Buffer
	for dest, want := range map[string]int{"-": 1, "off": 0} {
		out.Reset()
		a, _, err := newAuditor(dest, &out)
		if err != nil {
			t.Fatal(err)
		}
		a.write(t.Context(), rec)
		if n := strings.Count(out.String(), "mcp_round"); n != want {
			t.Errorf("--audit-log %s wrote %d records", dest, n)
		}
	}
	if _, _, err := newAuditor(filepath.Join(t.TempDir(), "no", "such", "dir", "a"), nil); err == nil {
		t.Fatal("an unwritable audit file was accepted")
	}
}
