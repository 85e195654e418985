//go:build unix

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// TestSIGKILLDuringWriteBurst kills a real elicitd (SQLite) with SIGKILL
// while 16 clients send export_report accept legs: every draft whose
// creation was acknowledged is in the database after the crash, every
// draft has its ledger row, and every recorded prepare has its draft
// (nothing half-written); the database reopens clean.
func TestSIGKILLDuringWriteBurst(t *testing.T) {
	dir, bin := buildElicitd(t)
	data := filepath.Join(dir, "data")
	acked := killDuringWriteBurst(t, bin, "--data", data)
	db := filepath.Join(data, "elicitd.db")
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	drafts := checkDraftsKept(t, st, acked)
	st.Close()
	checkDatabaseAfterKill(t, db, drafts)
	t.Logf("SIGKILL after %d acknowledged drafts: %d acknowledged in all, %d in the database", burstKillAfter, len(acked), drafts)
}

// TestSIGKILLDuringWriteBurstPostgres is TestSIGKILLDuringWriteBurst on
// PostgreSQL, whose ledger completion sends the effect's writes, the
// ledger row and COMMIT in one pipeline: a process killed mid-pipeline
// leaves nothing of that operation, and every acknowledged draft is kept
// with its ledger row.
func TestSIGKILLDuringWriteBurstPostgres(t *testing.T) {
	if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable) to run the PostgreSQL crash test")
	}
	dir, bin := buildElicitd(t)
	dsn := pgtest.SchemaDSN(t)
	acked := killDuringWriteBurst(t, bin, "--data", filepath.Join(dir, "data"), "--store", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	drafts := checkDraftsKept(t, st, acked)
	st.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var prepared int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM operations WHERE outcome = $1`, reports.OutcomePrepared).Scan(&prepared); err != nil || prepared != drafts {
		t.Errorf("%d prepare operations recorded (%v) for %d drafts", prepared, err, drafts)
	}
	t.Logf("SIGKILL after %d acknowledged drafts: %d acknowledged in all, %d in the database", burstKillAfter, len(acked), drafts)
}

// The write burst: burstLegs export_report accept legs of alice from 16
// clients, and SIGKILL once burstKillAfter drafts were acknowledged.
const burstLegs, burstKillAfter = 400, 100

// killDuringWriteBurst starts elicitd with args (and a free --addr),
// sends the write burst, kills the process once burstKillAfter drafts
// were acknowledged, waits for it to end and returns the acknowledged
// draft ids.
func killDuringWriteBurst(t *testing.T, bin string, args ...string) []string {
	t.Helper()
	addr := freeLoopbackAddr(t)
	proc := startProcess(t, bin, environWithoutElicit(), append([]string{"--addr", addr, "--audit-log", "off"}, args...)...)
	e := &reportsEnv{env: &env{t: t, url: "http://" + addr, logs: &syncBuffer{}, rec: &recorder{}}}
	acked, killed := burstUntilKilled(e.url, e.firstLegs(t, "alice", burstLegs), 16, burstKillAfter, func() { proc.cmd.Process.Kill() })
	if !killed {
		t.Fatalf("the burst ended before %d acknowledgements (%d)", burstKillAfter, len(acked))
	}
	proc.wait()
	return acked
}

// burstUntilKilled sends bodies (export_report legs of alice) from
// workers goroutines and calls kill once killAfter drafts were
// acknowledged; it returns the acknowledged draft ids, and whether kill
// was called, once every worker stopped (the process gone or the bodies
// sent).
func burstUntilKilled(url string, bodies []string, workers, killAfter int, kill func()) (acked []string, killed bool) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int64
		once sync.Once
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(bodies); i = int(next.Add(1) - 1) {
				id, err := exportedDraft(url, bodies[i])
				if err != nil {
					return // the process is gone
				}
				if id == "" {
					continue
				}
				mu.Lock()
				acked = append(acked, id)
				n := len(acked)
				mu.Unlock()
				if n == killAfter {
					once.Do(func() { kill(); killed = true })
				}
			}
		}()
	}
	wg.Wait()
	return acked, killed
}

// exportedDraft sends one export_report leg and returns the id of the
// draft its complete result acknowledges ("" for any other answer).
func exportedDraft(url, body string) (string, error) {
	status, _, raw, err := rawCall(url, "alice", reports.ToolExport, body)
	if err != nil {
		return "", err
	}
	var resp struct {
		Result struct {
			ResultType        string `json:"resultType"`
			StructuredContent struct {
				DraftID string `json:"draft_id"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if status != 200 || json.Unmarshal([]byte(raw), &resp) != nil || resp.Result.ResultType != "complete" {
		return "", nil
	}
	return resp.Result.StructuredContent.DraftID, nil
}

// checkDraftsKept checks the reopened store after the write burst: every
// acknowledged draft is there, each with its ledger row, and there are no
// more drafts than operations sent. It returns how many there are.
func checkDraftsKept(t *testing.T, st store.Ledger, acked []string) int {
	t.Helper()
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
	if len(drafts) > burstLegs {
		t.Fatalf("%d drafts from %d operations", len(drafts), burstLegs)
	}
	return len(drafts)
}

// checkDatabaseAfterKill checks that no prepare operation is left without
// its draft and that SQLite's integrity check passes.
func checkDatabaseAfterKill(t *testing.T, path string, drafts int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var prepared int
	var check string
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM operations WHERE outcome = ?`, reports.OutcomePrepared).Scan(&prepared); err != nil || prepared != drafts {
		t.Errorf("%d prepare operations recorded (%v) for %d drafts", prepared, err, drafts)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after SIGKILL: %q, %v", check, err)
	}
}
