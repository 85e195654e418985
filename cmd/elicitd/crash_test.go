//go:build unix

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// TestSIGKILLDuringWriteBurst kills a real elicitd (SQLite) with SIGKILL
// while 16 clients send export_report accept legs: every draft whose
// creation was acknowledged is in the database after the crash, every
// draft has its ledger row, and every recorded prepare has its draft
// (nothing half-written); the database reopens clean.
func TestSIGKILLDuringWriteBurst(t *testing.T) {
	dir, bin := buildElicitd(t)
	addr := freeLoopbackAddr(t)
	data := filepath.Join(dir, "data")
	proc := startProcess(t, bin, environWithoutElicit(), "--addr", addr, "--data", data, "--audit-log", "off")
	e := &reportsEnv{env: &env{t: t, url: "http://" + addr, logs: &syncBuffer{}, rec: &recorder{}}}
	const legs, workers, killAfter = 400, 16, 100
	bodies := e.firstLegs(t, "alice", legs)

	var (
		mu    sync.Mutex
		acked []string
		n     atomic.Int64
		wg    sync.WaitGroup
		next  atomic.Int64
	)
	killed := make(chan struct{})
	var once sync.Once
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= legs {
					return
				}
				status, _, raw, err := rawCall(e.url, "alice", reports.ToolExport, bodies[i])
				if err != nil {
					return // the process is gone
				}
				var resp struct {
					Result struct {
						ResultType        string `json:"resultType"`
						StructuredContent struct {
							DraftID string `json:"draft_id"`
						} `json:"structuredContent"`
					} `json:"result"`
				}
				if status == 200 && json.Unmarshal([]byte(raw), &resp) == nil && resp.Result.ResultType == "complete" && resp.Result.StructuredContent.DraftID != "" {
					mu.Lock()
					acked = append(acked, resp.Result.StructuredContent.DraftID)
					mu.Unlock()
					if n.Add(1) == killAfter {
						once.Do(func() { proc.cmd.Process.Kill(); close(killed) })
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("the burst ended before %d acknowledgements (%d)", killAfter, n.Load())
	}
	proc.wait()

	st, err := sqlite.Open(filepath.Join(data, "elicitd.db"))
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drafts, err := st.ListRecords(ctx, reports.KindDraft, "alice")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, d := range drafts {
		have[d.ID] = true
		op, err := st.GetOperation(ctx, d.OperationID)
		if err != nil || op.Outcome != reports.OutcomePrepared {
			t.Errorf("draft %s without its ledger row: %v", d.ID, err)
		}
	}
	for _, id := range acked {
		if !have[id] {
			t.Errorf("acknowledged draft %s lost", id)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "elicitd.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var prepared int
	var check string
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM operations WHERE outcome = ?`, reports.OutcomePrepared).Scan(&prepared); err != nil || prepared != len(drafts) {
		t.Errorf("%d prepare operations recorded (%v) for %d drafts", prepared, err, len(drafts))
	}
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after SIGKILL: %q, %v", check, err)
	}
	t.Logf("SIGKILL after %d acknowledged drafts: %d acknowledged in all, %d in the database", killAfter, len(acked), len(drafts))
	if len(drafts) > legs {
		t.Fatalf("%d drafts from %d operations", len(drafts), legs)
	}
}
