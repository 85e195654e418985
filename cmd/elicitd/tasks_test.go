package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// metaTasks is the _meta of a client that elicits with forms and declares
// the tasks extension.
var metaTasks = mcptest.Meta(`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)

const recipientAnswer = `{"action":"accept","content":{"recipient":"bob@example.com"}}`

// exportAndSend calls export_and_send for 2026-Q2 sales.
func (e *env) exportAndSend(id int, user, extra, meta string) *mcpResponse {
	e.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"period":"2026-Q2","dataset":"sales"},%s%s}}`,
		id, reports.ToolExportAndSend, extra, meta)
	return e.mcp(user, "tools/call", reports.ToolExportAndSend, body)
}

// startExportTask starts export_and_send as a task and returns its id.
func (e *env) startExportTask(t *testing.T, user string) string {
	t.Helper()
	r := e.exportAndSend(1, user, "", metaTasks)
	id, _ := r.Result["taskId"].(string)
	if r.Status != 200 || r.resultType() != "task" || id == "" {
		t.Fatalf("want a CreateTaskResult, got HTTP %d: %s", r.Status, r.Raw)
	}
	return id
}

// task sends a tasks/* request for taskID as user; extra adds params
// members (with a trailing comma).
func (e *env) task(user, method, taskID, extra string) *mcpResponse {
	e.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":{"taskId":%s,%s%s}}`, method, jsonString(taskID), extra, metaTasks)
	return e.mcp(user, method, taskID, body)
}

// answerTask sends tasks/update with answer (JSON) to the recipient question.
func (e *env) answerTask(t *testing.T, user, taskID, answer string) {
	t.Helper()
	r := e.task(user, "tasks/update", taskID, `"inputResponses":{"`+reports.KeyRecipient+`":`+answer+`},`)
	if r.Status != 200 || r.resultType() != "complete" || len(r.Result) != 2 {
		t.Fatalf("tasks/update: want the empty ack, got HTTP %d: %s", r.Status, r.Raw)
	}
}

// awaitTask polls tasks/get until the task has status (a hang guard, not
// a timing assertion) and returns that answer; another terminal status
// fails the test.
func (e *env) awaitTask(t *testing.T, user, taskID, status string) *mcpResponse {
	t.Helper()
	var r *mcpResponse
	waitFor(t, "task "+status, func() bool {
		r = e.task(user, "tasks/get", taskID, "")
		got, _ := r.Result["status"].(string)
		if got != status && mcp.TaskStatus(got).Terminal() || r.Status != 200 {
			t.Fatalf("waiting for %s: HTTP %d: %s", status, r.Status, r.Raw)
		}
		return got == status
	})
	return r
}

// taskResult is the CallToolResult a completed task inlines, as a response.
func taskResult(t *testing.T, r *mcpResponse) *mcpResponse {
	t.Helper()
	res, _ := r.Result["result"].(map[string]any)
	if res == nil {
		t.Fatalf("no result inlined: %s", r.Raw)
	}
	return &mcpResponse{Status: 200, Raw: r.Raw, Result: res}
}

// statusHolds is a store that, while hold is set, holds a task's run
// after each new statusMessage it stores, until the test has looked at
// the task: so that tasks/get shows each message of a run that would
// otherwise pass them in a moment.
type statusHolds struct {
	store.Store
	hold   atomic.Bool
	stored chan string   // each new message, once stored
	next   chan struct{} // lets the run go on
	mu     sync.Mutex
	last   string
}

func (s *statusHolds) UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	rec, err := s.Store.UpdateTask(ctx, id, update)
	if err != nil || !s.hold.Load() || rec.Status != mcp.TaskWorking {
		return rec, err
	}
	s.mu.Lock()
	fresh := rec.StatusMessage != s.last
	s.last = rec.StatusMessage
	s.mu.Unlock()
	if fresh {
		s.stored <- rec.StatusMessage
		<-s.next
	}
	return rec, err
}

// wantExportProgress checks that tasks/get shows each progress message of
// the export of task id as the run stores it.
func (e *reportsEnv) wantExportProgress(t *testing.T, st *statusHolds, id string) {
	t.Helper()
	for part := range reports.ExportParts {
		want := fmt.Sprintf("Exporting the sales report for 2026-Q2 (%d/%d)", part, reports.ExportParts)
		select {
		case got := <-st.stored:
			if got != want {
				t.Fatalf("the run stored the statusMessage %q, want %q", got, want)
			}
		case <-time.After(time.Minute): // a hang guard
			t.Fatalf("gave up waiting for %q", want)
		}
		if g := e.task("alice", "tasks/get", id, ""); g.Result["status"] != "working" || g.Result["statusMessage"] != want {
			t.Fatalf("tasks/get during the export: want working, %q: %s", want, g.Raw)
		}
		if part == reports.ExportParts-1 {
			st.hold.Store(false)
		}
		st.next <- struct{}{}
	}
}

// TestExportAndSendTask: export_and_send runs as a task on elicitd's own
// store: the export runs and tasks/get shows its progress, the task asks
// the recipient (input_required, with a status message of its own), the
// answer comes with tasks/update, and the send is made once however often
// the update is replayed or raced; the completed task has no status
// message left; decline and cancel are distinct results that send
// nothing; a client without the extension gets the same steps as MRTR
// rounds.
func TestExportAndSendTask(t *testing.T) {
	st := &statusHolds{stored: make(chan string), next: make(chan struct{})}
	st.hold.Store(true)
	e := newReportsEnv(t, func(c *config) { c.wrapStore = func(s store.Store) store.Store { st.Store = s; return st } })
	id := e.startExportTask(t, "alice")
	e.wantExportProgress(t, st, id)
	g := e.awaitTask(t, "alice", id, "input_required")
	asked := &mcpResponse{Status: 200, Raw: g.Raw, Result: map[string]any{"resultType": "input_required", "inputRequests": g.Result["inputRequests"]}}
	params := asked.input(t, reports.KeyRecipient)
	rows := regexp.MustCompile(`exported \((\d+) rows\)`).FindStringSubmatch(params["message"].(string))
	if params["mode"] != "form" || rows == nil {
		t.Fatalf("the recipient question: %s", g.Raw)
	}
	if want := "Exported " + rows[1] + " rows; waiting for the recipient"; g.Result["statusMessage"] != want {
		t.Fatalf("input_required: statusMessage %v, want %q", g.Result["statusMessage"], want)
	}
	if r := e.task("bob", "tasks/get", id, ""); r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "Unknown task" {
		t.Fatalf("bob reads alice's task: %s", r.Raw)
	}

	var wg sync.WaitGroup
	for range 8 { // raced: one send
		wg.Add(1)
		go func() { defer wg.Done(); e.answerTask(t, "alice", id, recipientAnswer) }()
	}
	wg.Wait()
	completed := e.awaitTask(t, "alice", id, "completed")
	if m, ok := completed.Result["statusMessage"]; ok {
		t.Fatalf("the completed task still says %q", m)
	}
	done := taskResult(t, completed)
	done.wantComplete(t, false, `Sent the sales report for 2026-Q2 (`+fmt.Sprint(done.structured()["rows"])+` rows) to "bob@example.com".`)
	for range 3 { // replayed after the end: acknowledged, nothing sent
		e.answerTask(t, "alice", id, recipientAnswer)
	}
	sends := e.wantSends(t, "alice", 1)
	if outcome, res := e.recordedResult(t, sends[0]); outcome != reports.OutcomeSent || res["structuredContent"].(map[string]any)["send_id"] != sends[0].ID {
		t.Fatalf("ledger: %s %v", outcome, res)
	}
	e.wantLedger(t, "alice", reports.OutcomeSent)

	for _, tt := range []struct{ answer, text, outcome string }{
		{declined, reports.TextExportSendDeclined, reports.OutcomeDeclined},
		{cancelled, reports.TextExportSendCancelled, reports.OutcomeCancelled},
	} {
		id := e.startExportTask(t, "carol")
		e.awaitTask(t, "carol", id, "input_required")
		e.answerTask(t, "carol", id, tt.answer)
		taskResult(t, e.awaitTask(t, "carol", id, "completed")).wantComplete(t, true, tt.text)
	}
	e.wantSends(t, "carol", 0)
	e.wantLedger(t, "carol", reports.OutcomeDeclined, reports.OutcomeCancelled)

	// Without the extension: MRTR rounds in the call.
	r := e.exportAndSend(1, "dave", "", metaForm)
	r.input(t, reports.KeyRecipient)
	r = e.exportAndSend(2, "dave", retryWith(reports.KeyRecipient, recipientAnswer, r.state()), metaForm)
	r.wantComplete(t, false, "")
	e.wantSends(t, "dave", 1)
}

// TestExportAndSendCancelled: tasks/cancel during the export stops it
// (the run's context ends), the task is cancelled, nothing is sent, and
// the ledger holds the task's operation as cancelled (so no later run of
// it can send).
func TestExportAndSendCancelled(t *testing.T) {
	e := newReportsEnv(t, func(c *config) { c.exportTime = time.Hour })
	id := e.startExportTask(t, "alice")
	waitFor(t, "the export to run", func() bool { return strings.Contains(e.logs.String(), "reports: export running") })
	if r := e.task("alice", "tasks/cancel", id, ""); r.Status != 200 || r.resultType() != "complete" || len(r.Result) != 2 {
		t.Fatalf("tasks/cancel: %s", r.Raw)
	}
	waitFor(t, "the export to stop", func() bool { return strings.Contains(e.logs.String(), "reports: export stopped") })
	e.awaitTask(t, "alice", id, "cancelled")
	e.answerTask(t, "alice", id, recipientAnswer) // after the end: acknowledged, ignored
	e.app.mcp.WaitTasks()
	e.wantSends(t, "alice", 0)
	e.wantLedger(t, "alice", mcpserver.TaskCancelOutcome)
}

// settleDrops is a store whose task outcomes are lost while drop is set:
// what an instance that dies between a task's effect and storing its
// outcome leaves behind.
type settleDrops struct {
	store.Store
	drop    atomic.Bool
	dropped atomic.Int32
}

func (s *settleDrops) UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	if s.drop.Load() {
		if rec, err := s.Store.GetTask(ctx, id); err == nil {
			if c := rec.Clone(); update(c) == nil && c.Status.Terminal() {
				s.dropped.Add(1)
				return nil, errors.New("the instance died")
			}
		}
	}
	return s.Store.UpdateTask(ctx, id, update)
}

// TestExportAndSendTakeoverAfterSend: the run sent the report (ledger row
// and send record committed) but its instance died before storing the
// task's outcome; once the lease has run out, the instance a tasks/get
// reaches takes the task over and runs the handler again from the top,
// which finds the send in the ledger (keyed by the task's operation) and
// completes the task with that result: one send.
func TestExportAndSendTakeoverAfterSend(t *testing.T) {
	st := &settleDrops{}
	e := newReportsEnv(t, func(c *config) {
		c.taskLease = 30 * time.Second
		c.wrapStore = func(s store.Store) store.Store { st.Store = s; return st }
	})
	id := e.startExportTask(t, "alice")
	e.awaitTask(t, "alice", id, "input_required")
	st.drop.Store(true)
	e.answerTask(t, "alice", id, recipientAnswer)
	waitFor(t, "the run to end", func() bool { return st.dropped.Load() > 0 })
	e.app.mcp.WaitTasks()
	sends := e.wantSends(t, "alice", 1)
	if g := e.task("alice", "tasks/get", id, ""); g.Result["status"] != "working" {
		t.Fatalf("before the lease ran out: %s", g.Raw)
	}
	st.drop.Store(false)
	e.advance(31 * time.Second)
	done := taskResult(t, e.awaitTask(t, "alice", id, "completed"))
	if done.isError() || done.structured()["send_id"] != sends[0].ID {
		t.Fatalf("the taken-over run's result is not the recorded send %s: %s", sends[0].ID, done.Raw)
	}
	e.wantSends(t, "alice", 1)
	e.wantLedger(t, "alice", reports.OutcomeSent)
	if !strings.Contains(e.logs.String(), "answered from the ledger") {
		t.Fatal("the re-run did not answer from the ledger")
	}
}

// TestElicitdSweepsTasks: elicitd's sweeper deletes tasks past --task-ttl
// and counts them in elicitd_swept_rows_total{kind="tasks"}.
func TestElicitdSweepsTasks(t *testing.T) {
	e := newReportsEnv(t, func(c *config) { c.taskTTL = time.Minute })
	id := e.startExportTask(t, "alice")
	e.awaitTask(t, "alice", id, "input_required")
	e.advance(2 * time.Minute)
	if r := e.task("alice", "tasks/get", id, ""); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("an expired task: %s", r.Raw)
	}
	if _, err := e.app.sweeper.sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.GetTask(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the expired task is still stored: %v", err)
	}
	if !strings.Contains(e.logs.String(), "tasks=1") {
		t.Fatalf("the sweep did not log the task: %s", e.logs.String())
	}
	_, _, m := e.browser().get(e.url + "/metrics")
	if !strings.Contains(m, `elicitd_swept_rows_total{kind="tasks"} 1`+"\n") {
		t.Fatalf("/metrics: %s", grepLines(m, "elicitd_swept"))
	}
}

// TestExportAndSendCancelRacesAnswer: the recipient's answer and a
// tasks/cancel sent at the same time (even races), or the cancel right
// after the answer's acknowledgement, racing the run it started (odd
// races), many times over. Whichever wins,
// the task tells the truth about the send: cancelled has none, completed
// has exactly one (the cancel came after the send and was too late).
// Also on PostgreSQL when ELICIT_TEST_POSTGRES_DSN is set.
func TestExportAndSendCancelRacesAnswer(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { raceCancelAndAnswer(t, newReportsEnv(t)) })
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
			t.Skip("set ELICIT_TEST_POSTGRES_DSN to run the race on PostgreSQL")
		}
		dsn := pgtest.SchemaDSN(t) // a schema of its own
		raceCancelAndAnswer(t, newReportsEnv(t, func(c *config) { c.storeURL = dsn }))
	})
}

func raceCancelAndAnswer(t *testing.T, e *reportsEnv) {
	const races = 30
	var cancelled, completed int
	for i := range races {
		user := fmt.Sprintf("racer%d", i)
		id := e.startExportTask(t, user)
		e.awaitTask(t, user, id, "input_required")
		cancel := func() {
			if r := e.task(user, "tasks/cancel", id, ""); r.Status != 200 || r.resultType() != "complete" {
				t.Errorf("tasks/cancel: %s", r.Raw)
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			e.answerTask(t, user, id, recipientAnswer)
			if i%2 == 1 {
				cancel()
			}
		})
		if i%2 == 0 {
			wg.Go(cancel)
		}
		wg.Wait()
		e.app.mcp.WaitTasks()
		g := e.task(user, "tasks/get", id, "")
		sends, err := e.app.sweeper.st.ListRecords(t.Context(), reports.KindSend, user)
		if err != nil {
			t.Fatal(err)
		}
		switch g.Result["status"] {
		case "cancelled":
			cancelled++
			if len(sends) != 0 {
				t.Errorf("race %d: cancelled with %d sends", i, len(sends))
			}
		case "completed":
			completed++
			if len(sends) != 1 || taskResult(t, g).isError() {
				t.Errorf("race %d: completed with %d sends: %s", i, len(sends), g.Raw)
			}
		default:
			t.Errorf("race %d: %s", i, g.Raw)
		}
	}
	t.Logf("%d races: %d cancelled, %d completed", races, cancelled, completed)
}

// TestExportAndSendRefusedAnswerReplayed: export_and_send refuses a
// recipient that is not an e-mail address and asks again; the client
// sends that tasks/update again (its acknowledgement was lost), five
// times, then 30 times at once. Each is acknowledged and ignored: the
// task still waits for the corrected question, one correction used, so
// a second refused answer is corrected once more instead of ending the
// task; a valid answer then sends once. On SQLite, and on PostgreSQL
// when ELICIT_TEST_POSTGRES_DSN is set.
func TestExportAndSendRefusedAnswerReplayed(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { replayRefusedRecipient(t, newReportsEnv(t)) })
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
			t.Skip("set ELICIT_TEST_POSTGRES_DSN to run it on PostgreSQL")
		}
		replayRefusedRecipient(t, newReportsEnv(t, func(c *config) { c.storeURL = pgtest.SchemaDSN(t) }))
	})
}

func replayRefusedRecipient(t *testing.T, e *reportsEnv) {
	const bad = `{"action":"accept","content":{"recipient":"not-an-address"}}`
	id := e.startExportTask(t, "alice")
	e.awaitTask(t, "alice", id, "input_required")
	pending := func() []string {
		t.Helper()
		e.app.mcp.WaitTasks()
		g := e.awaitTask(t, "alice", id, "input_required")
		reqs, _ := g.Result["inputRequests"].(map[string]any)
		keys := make([]string, 0, len(reqs))
		for k := range reqs {
			keys = append(keys, k)
		}
		return keys
	}
	e.answerTask(t, "alice", id, bad)
	first := pending() // corrected: asks again
	for range 5 {
		e.answerTask(t, "alice", id, bad)
		e.app.mcp.WaitTasks()
	}
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() { e.answerTask(t, "alice", id, bad) })
	}
	wg.Wait()
	if keys := pending(); len(keys) != 1 || keys[0] != first[0] || keys[0] == reports.KeyRecipient {
		t.Fatalf("after 35 replays: keys %v, want %v, a key of its own", keys, first)
	}
	update := func(key, answer string) {
		t.Helper()
		r := e.task("alice", "tasks/update", id, `"inputResponses":{"`+key+`":`+answer+`},`)
		if r.Status != 200 || r.resultType() != "complete" {
			t.Fatalf("tasks/update: %s", r.Raw)
		}
	}
	update(first[0], bad) // the second correction, still there
	second := pending()
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("the second correction: keys %v", second)
	}
	update(second[0], recipientAnswer)
	e.app.mcp.WaitTasks()
	taskResult(t, e.awaitTask(t, "alice", id, "completed")).wantComplete(t, false, "")
	sends, err := e.app.sweeper.st.ListRecords(t.Context(), reports.KindSend, "alice") // the store elicitd runs on
	if err != nil || len(sends) != 1 {
		t.Fatalf("sends: %d, %v; want 1", len(sends), err)
	}
}

// TestElicitdTaskLimit: --max-tasks-per-user bounds a user's live tasks
// in the store: past it, export_and_send answers with a tool error that
// says how many tasks the user has and creates none; another user is not
// held back; cancelling one makes room. On SQLite, and on PostgreSQL when
// ELICIT_TEST_POSTGRES_DSN is set.
func TestElicitdTaskLimit(t *testing.T) {
	limited := func(c *config) { c.maxTasksPerUser, c.exportTime = 2, time.Hour }
	t.Run("sqlite", func(t *testing.T) { taskLimit(t, newReportsEnv(t, limited)) })
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
			t.Skip("set ELICIT_TEST_POSTGRES_DSN to run it on PostgreSQL")
		}
		taskLimit(t, newReportsEnv(t, limited, func(c *config) { c.storeURL = pgtest.SchemaDSN(t) }))
	})
}

func taskLimit(t *testing.T, e *reportsEnv) {
	started := map[string][]string{}
	start := func(user string) {
		started[user] = append(started[user], e.startExportTask(t, user))
	}
	defer func() { // the exports run for an hour: cancel them, then wait for their runs
		for user, ids := range started {
			for _, id := range ids {
				e.task(user, "tasks/cancel", id, "")
			}
		}
		e.app.mcp.WaitTasks()
	}()
	start("alice")
	start("alice")
	over := e.exportAndSend(3, "alice", "", metaTasks)
	over.wantComplete(t, true, "")
	if !strings.Contains(over.text(), "you have 2 tasks in progress") || !strings.Contains(over.text(), "2 is the most one user may have") {
		t.Fatalf("over the limit: %s", over.Raw)
	}
	start("bob")
	if r := e.task("alice", "tasks/cancel", started["alice"][0], ""); r.Status != 200 || r.resultType() != "complete" {
		t.Fatalf("tasks/cancel: %s", r.Raw)
	}
	start("alice")
}

// TestTaskLimitSetting: --max-tasks-per-user takes a whole number of at
// least 1, or off for no limit.
func TestTaskLimitSetting(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
		ok    bool
	}{{"100", 100, true}, {"1", 1, true}, {"off", -1, true}, {"OFF", -1, true}, {"0", 0, false}, {"-3", 0, false}, {"many", 0, false}} {
		cfg, err := loadConfig([]string{"--max-tasks-per-user", tt.value}, func(string) string { return "" }, nil)
		if (err == nil) != tt.ok || (tt.ok && cfg.maxTasksPerUser != tt.want) {
			t.Errorf("--max-tasks-per-user %s: %v, %v", tt.value, cfg, err)
		}
	}
	if cfg, err := loadConfig(nil, func(string) string { return "" }, nil); err != nil || cfg.maxTasksPerUser != 100 {
		t.Fatalf("default: %v, %v", cfg, err)
	}
}
