package main

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// brokenWriter fails every write while broken is set, like /dev/full.
type brokenWriter struct {
	broken atomic.Bool
	buf    syncBuffer
}

func (w *brokenWriter) Write(p []byte) (int, error) {
	if w.broken.Load() {
		return 0, errors.New("no space left on device")
	}
	return w.buf.Write(p)
}

// TestAuditWriteFailures: a record that cannot be written is counted in
// elicitd_audit_write_errors_total, logged at most once a minute with the
// number lost, and keeps /readyz at 503 until a write works again.
func TestAuditWriteFailures(t *testing.T) {
	sink := &brokenWriter{}
	sink.broken.Store(true)
	e := newEnvWith(t, func(c *config) { c.auditOut = sink })
	b := e.browser()
	status := func(path string) (int, string) {
		code, _, body := b.get(e.url + path)
		return code, body
	}
	failedLines := func() int { return strings.Count(e.logs.String(), "audit log write failed") }

	e.connect(1, "alice", "")
	e.connect(2, "alice", "")
	if code, body := status("/readyz"); code != 503 || body != "not ready: the last audit record could not be written\n" {
		t.Fatalf("/readyz while the audit log fails: %d %q", code, body)
	}
	if _, m := status("/metrics"); !strings.Contains(m, "elicitd_audit_write_errors_total 2\n") {
		t.Fatalf("/metrics: %s", grepLines(m, "elicitd_audit"))
	}
	if n := failedLines(); n != 1 || !strings.Contains(e.logs.String(), "lost_records=1") {
		t.Fatalf("%d failure lines in the log, want 1 with lost_records=1:\n%s", n, e.logs.String())
	}
	// A minute on, the next failure is logged with the count since.
	e.advance(auditErrorLogEvery)
	e.connect(3, "alice", "")
	if n := failedLines(); n != 2 || !strings.Contains(e.logs.String(), "lost_records=2") {
		t.Fatalf("%d failure lines, want 2, the second with lost_records=2:\n%s", n, e.logs.String())
	}
	sink.broken.Store(false)
	e.connect(4, "alice", "")
	if code, body := status("/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz once the audit log works again: %d %q", code, body)
	}
	if !strings.Contains(e.logs.String(), "audit log writable again") || !strings.Contains(sink.buf.String(), `"msg":"mcp_round"`) {
		t.Fatalf("recovery not logged or record not written:\n%s", e.logs.String())
	}
}

// --audit-log /dev/full: the file opens, every write fails, and the
// auditor says so.
func TestAuditLogDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	a, closer, err := newAuditor("/dev/full", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer()
	a.write(t.Context(), &auditRecord{event: "mcp_round", outcome: "completed", round: 0})
	if !a.failing.Load() {
		t.Fatal("a write to /dev/full did not count as failed")
	}
}

// An unknown tool's 5000-byte name reaches neither the audit record nor
// the error message whole.
func TestUnknownToolNameBounded(t *testing.T) {
	audit := &syncBuffer{}
	e := newEnvWith(t, func(c *config) { c.auditOut = audit })
	name := strings.Repeat("u", 5000) // Mcp-Name carries it too: ASCII
	r := e.mcp("alice", "tools/call", name, callBody(1, name, "", metaURL))
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("unknown tool: %d %.200s", r.Status, r.Raw)
	}
	if len(r.Raw) > 1000 || !strings.Contains(r.Error.Message, "…(5000 bytes)") {
		t.Fatalf("error echoes %d bytes: %.300s", len(r.Raw), r.Raw)
	}
	lines := auditLines(t, audit.String())
	got := lines[len(lines)-1]
	if got.Outcome != "fault" || len(got.Name) > 128+len("…(5000 bytes)") || !strings.HasSuffix(got.Name, "…(5000 bytes)") {
		t.Fatalf("audit name is %d bytes: %.200q", len(got.Name), got.Name)
	}
}
