package postgres_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// TestAcceptLegRoundTrips runs export_report (examples/reports over
// mcpserver and streamhttp, as elicitd serves it) against PostgreSQL and
// counts the round trips of the accept leg, which prepares a draft: the
// ledger completion (BEGIN, lock and the operation's row; then the draft's
// insert, the ledger row and COMMIT), which is also the replay lookup. At
// most two; before, it took three with a replay lookup of its own, and
// nine before the completion was pipelined (BEGIN, lock, lookup,
// SAVEPOINT, INSERT, RELEASE, INSERT, COMMIT, and the replay lookup).
// The other outcome of the leg (decline) takes two as well, and the replay
// of a completed operation two (the lookup, which finds the row, and the
// ROLLBACK).
func TestAcceptLegRoundTrips(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	rt := &postgres.RoundTrips{}
	// One connection: every statement is prepared on it by the warm-up,
	// as in steady state.
	st, err := postgres.OpenWith(t.Context(), dsn, &postgres.Options{MaxConns: 1, DialFunc: rt.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	flows, err := connect.New(connect.Options{Store: st, MasterKey: make([]byte, 32), BaseURL: "http://127.0.0.1", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(mcp.Implementation{Name: "t", Version: "1"}, &mcpserver.Options{Logger: logger})
	reports.New(flows, st, logger).Register(srv)
	ts := httptest.NewServer(streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{}, Logger: logger}))
	defer ts.Close()

	call := func(id int, extra string) map[string]any {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"export_report","arguments":{"period":"2026-Q2","dataset":"sales"},%s`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`, id, extra)
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Authorization": "Bearer alice", "Mcp-Method": "tools/call", "Mcp-Name": reports.ToolExport} {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Result map[string]any `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Result == nil {
			t.Fatalf("HTTP %d, %v: %v", resp.StatusCode, err, out)
		}
		return out.Result
	}
	firstLeg := func(id int) string {
		t.Helper()
		r := call(id, "")
		state, _ := r["requestState"].(string)
		if r["resultType"] != "input_required" || state == "" {
			t.Fatalf("first leg: %v", r)
		}
		return state
	}
	retry := func(answer, state string) string {
		return `"inputResponses":{"` + reports.KeyOptions + `":` + answer + `},"requestState":"` + state + `",`
	}
	const accept = `{"action":"accept","content":{"detail":"summary","label":"Q2"}}`
	const maxRoundTrips = 2
	// Warm-up: one flow of each kind prepares every statement.
	call(2, retry(accept, firstLeg(1)))
	call(4, retry(`{"action":"decline"}`, firstLeg(3)))
	rt.Reset()

	for i, tc := range []struct {
		name, answer string
		isError      bool
	}{
		{"accept (prepares a draft)", accept, false},
		{"decline", `{"action":"decline"}`, true},
	} {
		state := firstLeg(10 + 2*i)
		if n := rt.Reset(); n != 0 {
			t.Errorf("%s: the first leg made %d round trips, want none", tc.name, n)
		}
		r := call(11+2*i, retry(tc.answer, state))
		n := rt.Reset()
		t.Logf("%s: %d round trips", tc.name, n)
		if r["resultType"] != "complete" || (r["isError"] == true) != tc.isError {
			t.Fatalf("%s: %v", tc.name, r)
		}
		if n > maxRoundTrips {
			t.Errorf("%s: %d round trips, want at most %d", tc.name, n, maxRoundTrips)
		}
		// A replay of the completed operation answers from the ledger.
		if again := call(100+i, retry(tc.answer, state)); fmt.Sprint(again["content"]) != fmt.Sprint(r["content"]) {
			t.Errorf("%s: replay answered %v, want the recorded %v", tc.name, again, r)
		}
		n = rt.Reset()
		t.Logf("%s, replayed: %d round trips", tc.name, n)
		if n > maxRoundTrips {
			t.Errorf("%s: the replay made %d round trips, want at most %d", tc.name, n, maxRoundTrips)
		}
	}
	drafts, err := st.ListRecords(t.Context(), reports.KindDraft, "alice")
	if err != nil || len(drafts) != 2 {
		t.Fatalf("drafts: %d, %v; want 2 (warm-up and accept)", len(drafts), err)
	}
}
