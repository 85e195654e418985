package report

import (
	"strings"
	"testing"
	"time"
)

// The PostgreSQL section shows the database backends' CPU next to the
// servers' when the runs measured it, the median over the rounds; the
// SQLite section, and a PostgreSQL section without it, keep their
// columns.
func TestFlowsDBCPU(t *testing.T) {
	runs := func(store string, db bool) []Run {
		var rs []Run
		ex, st := FlowScenario("export", store), FlowScenario("status", store)
		for round, ms := range []time.Duration{400, 500, 600} {
			dbFlow, dbInsert, dbRead := ms*time.Microsecond, ms/3*time.Microsecond, ms/10*time.Microsecond
			if !db {
				dbFlow, dbInsert, dbRead = 0, 0, 0
			}
			rs = append(rs,
				Run{Server: StoreServer(store), Scenario: ex, Conns: 16, Round: round, Requests: 1000, RPS: 3000,
					ServerCPUPerReq: 120 * time.Microsecond, DBCPUPerReq: dbInsert},
				Run{Server: ElicitdServer(store), Scenario: ex, Conns: 16, Round: round, Requests: 2000, RPS: 2000, FlowsPerSec: 1000,
					ServerCPUPerReq: 300 * time.Microsecond, ServerCPUPerFlow: 600 * time.Microsecond, DBCPUPerReq: dbFlow / 2, DBCPUPerFlow: dbFlow,
					Legs: []Latency{{P50: time.Millisecond}, {P50: 6 * time.Millisecond}}},
				Run{Server: ElicitdServer(store), Scenario: st, Conns: 16, Round: round, Requests: 5000, RPS: 5000,
					ServerCPUPerReq: 110 * time.Microsecond, DBCPUPerReq: dbRead})
		}
		return rs
	}
	for _, tc := range []struct {
		name   string
		stores []string
		db     bool
		want   []string
		absent []string
	}{
		{"postgres, measured", []string{Postgres}, true,
			[]string{"| elicitd CPU / flow | PostgreSQL CPU / flow | bare store CPU / insert | PostgreSQL CPU / insert |",
				"| 600.0 µs | 500.0 µs | 120.0 µs | 166.0 µs |", "| elicitd CPU / request | PostgreSQL CPU / request |", "| 110.0 µs | 50.0 µs |",
				"`application_name`"}, nil},
		{"postgres, remote database", []string{Postgres}, false, nil, []string{"PostgreSQL CPU", "`application_name`"}},
		{"sqlite", []string{SQLite}, false, nil, []string{"PostgreSQL CPU"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Results{Settings: Settings{Stores: tc.stores, Flows: []string{"export", "status"}, Rounds: 3, ServerProcs: 2}}
			for _, st := range tc.stores {
				r.Runs = append(r.Runs, runs(st, tc.db)...)
			}
			var b strings.Builder
			if err := WriteMarkdown(&b, r, Summarize(r), ""); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, section(out))
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("unexpected %q in:\n%s", a, section(out))
				}
			}
		})
	}
}

// section is the real flows' part of a report, for failure messages.
func section(out string) string {
	if i := strings.Index(out, "## Real flows"); i >= 0 {
		out = out[i:]
	}
	if len(out) > 4000 {
		out = out[:4000]
	}
	return out
}
