//go:build unix

package main

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// taskProcess starts an elicitd process named name with a one-second
// task lease, the given export time and args, and returns it with an env
// that talks to it directly.
func taskProcess(t *testing.T, bin, name, exportTime string, environ []string, args ...string) (*namedProcess, *env) {
	t.Helper()
	addr := freeLoopbackAddr(t)
	args = append([]string{"--addr", addr, "--task-lease", "1s", "--export-time", exportTime, "--audit-log", "off", "--log-level", "debug"}, args...)
	p := &namedProcess{process: startProcess(t, bin, environ, args...), name: name, addr: addr}
	return p, &env{t: t, url: "http://" + addr, logs: p.out, rec: &recorder{}}
}

// waitExportRunning waits until p logs that it runs the export of task id.
func waitExportRunning(t *testing.T, p *namedProcess, id string) {
	t.Helper()
	waitFor(t, p.name+" to run the export", func() bool {
		for _, line := range strings.Split(p.out.String(), "\n") {
			if strings.Contains(line, "reports: export running") && strings.Contains(line, "task="+id) {
				return true
			}
		}
		return false
	})
}

// wantSentOnce checks that each of ids' tasks sent once: sends has one
// send per task, each with its "sent" ledger row.
func wantSentOnce(t *testing.T, st store.Store, user string, tasks int) {
	t.Helper()
	sends, err := st.ListRecords(t.Context(), reports.KindSend, user)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, s := range sends {
		op, err := st.GetOperation(t.Context(), s.OperationID)
		if err != nil || op.Outcome != reports.OutcomeSent || ops[s.OperationID] {
			t.Fatalf("send %s: operation %s, %v (seen %v)", s.ID, s.OperationID, err, ops[s.OperationID])
		}
		ops[s.OperationID] = true
	}
	if len(sends) != tasks {
		t.Fatalf("%d sends for %d tasks", len(sends), tasks)
	}
}

// wantSentOnceSQLite is wantSentOnce on the SQLite store in data.
func wantSentOnceSQLite(t *testing.T, data, user string, tasks int) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(data, "elicitd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantSentOnce(t, st, user, tasks)
}

// TestTasksTwoProcessesPostgres runs two elicitd processes on one
// PostgreSQL schema and one ELICIT_MASTER_KEY. A task started on A is
// read, answered and completed on B. Then A runs with a long export, is
// SIGKILLed in the middle of it, and B takes the task over once A's lease
// has run out: the export runs again on B, the task asks, is answered on
// B and completes; each task sent once.
func TestTasksTwoProcessesPostgres(t *testing.T) {
	if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN to run the two-process tasks test")
	}
	bin := testElicitd(t)
	dsn := pgtest.SchemaDSN(t)
	key := make([]byte, 32)
	rand.Read(key)
	environ := append(environWithoutElicit(), masterKeyEnv+"="+base64.StdEncoding.EncodeToString(key))
	shared := []string{"--store", dsn}

	a, onA := taskProcess(t, bin, "A", "0s", environ, append(shared, "--data", t.TempDir())...)
	b, onB := taskProcess(t, bin, "B", "0s", environ, append(shared, "--data", t.TempDir())...)
	first := onA.startExportTask(t, "alice")
	onB.awaitTask(t, "alice", first, "input_required")
	onB.answerTask(t, "alice", first, recipientAnswer)
	taskResult(t, onB.awaitTask(t, "alice", first, "completed")).wantComplete(t, false, "")
	taskResult(t, onA.awaitTask(t, "alice", first, "completed")).wantComplete(t, false, "")
	if !strings.Contains(b.out.String(), "task="+first) || strings.Contains(a.out.String(), "outcome=sent") {
		t.Fatal("the send did not run on B")
	}

	a.killHard(t)
	a2, onA2 := taskProcess(t, bin, "A2", "1h", environ, append(shared, "--data", t.TempDir())...)
	second := onA2.startExportTask(t, "alice")
	waitExportRunning(t, a2, second)
	a2.killHard(t)
	onB.awaitTask(t, "alice", second, "input_required")
	waitExportRunning(t, b, second)
	if !strings.Contains(b.out.String(), "taking over a task whose run stopped") {
		t.Fatal("B did not log the takeover")
	}
	onB.answerTask(t, "alice", second, recipientAnswer)
	taskResult(t, onB.awaitTask(t, "alice", second, "completed")).wantComplete(t, false, "")

	st, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantSentOnce(t, st, "alice", 2)
}

// TestTaskSurvivesRestartSQLite: tasks live in elicitd's SQLite store. A
// task waiting for input survives a SIGKILL and a restart and is answered
// after it; a task whose export was running when the process was
// SIGKILLed is taken over by the restarted process once the lease has run
// out, and completes; each sent once.
func TestTaskSurvivesRestartSQLite(t *testing.T) {
	bin := testElicitd(t)
	data := t.TempDir()
	environ := environWithoutElicit()

	p1, on1 := taskProcess(t, bin, "first", "0s", environ, "--data", data)
	waiting := on1.startExportTask(t, "alice")
	on1.awaitTask(t, "alice", waiting, "input_required")
	p1.killHard(t)

	p2, on2 := taskProcess(t, bin, "second", "1h", environ, "--data", data)
	on2.awaitTask(t, "alice", waiting, "input_required")
	working := on2.startExportTask(t, "alice")
	waitExportRunning(t, p2, working)
	p2.killHard(t)

	p3, on3 := taskProcess(t, bin, "third", "0s", environ, "--data", data)
	on3.answerTask(t, "alice", waiting, recipientAnswer)
	taskResult(t, on3.awaitTask(t, "alice", waiting, "completed")).wantComplete(t, false, "")
	on3.awaitTask(t, "alice", working, "input_required")
	waitExportRunning(t, p3, working)
	on3.answerTask(t, "alice", working, recipientAnswer)
	taskResult(t, on3.awaitTask(t, "alice", working, "completed")).wantComplete(t, false, "")

	wantSentOnceSQLite(t, data, "alice", 2)
}

// TestTaskInterruptedBySIGTERM runs two elicitd processes on one SQLite
// file with a one-hour task lease. A task's export (an hour long) runs
// on A when A gets SIGTERM: A drains, interrupts the run, releases its
// lease, audits the run as interrupted and exits 0. B's tasks/get then
// takes the task over at once (waiting out the lease would take an
// hour, past the poll's hang guard), runs the export again, and the task
// completes with one send.
func TestTaskInterruptedBySIGTERM(t *testing.T) {
	bin := testElicitd(t)
	data := t.TempDir()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	environ := environWithoutElicit()
	long := []string{"--data", data, "--task-lease", "1h"}
	a, onA := taskProcess(t, bin, "A", "1h", environ, append(long, "--shutdown-grace", "100ms", "--audit-log", audit)...)
	b, onB := taskProcess(t, bin, "B", "0s", environ, long...)
	id := onA.startExportTask(t, "alice")
	waitExportRunning(t, a, id)
	onB.awaitTask(t, "alice", id, "working")

	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.wait(); err != nil || a.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("A's exit: %v\n%s", err, a.out.String())
	}
	records, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(records), `"outcome":"interrupted"`) || !strings.Contains(string(records), `"task_id":"`+id+`"`) {
		t.Fatalf("A's audit has no interrupted run of task %s:\n%s", id, records)
	}

	onB.awaitTask(t, "alice", id, "input_required")
	if !strings.Contains(b.out.String(), "taking over a task whose run stopped") {
		t.Fatal("B did not log the takeover")
	}
	onB.answerTask(t, "alice", id, recipientAnswer)
	taskResult(t, onB.awaitTask(t, "alice", id, "completed")).wantComplete(t, false, "")
	wantSentOnceSQLite(t, data, "alice", 1)
}
