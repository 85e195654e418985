package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/reports"
)

// pgCluster is a throwaway PostgreSQL cluster owned by one test.
type pgCluster struct {
	t       *testing.T
	bin     string // directory with initdb, pg_ctl
	dir     string // data directory
	sockDir string
	port    int
}

// asPostgres runs a PostgreSQL program as the postgres user when the test
// runs as root (initdb refuses root), else as the current user.
func (c *pgCluster) asPostgres(prog string, args ...string) (string, error) {
	cmdline := filepath.Join(c.bin, prog)
	for _, a := range args {
		cmdline += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("su", "postgres", "-s", "/bin/sh", "-c", cmdline)
	} else {
		cmd = exec.Command("/bin/sh", "-c", cmdline)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *pgCluster) start() {
	c.t.Helper()
	opts := fmt.Sprintf("-k %s -c listen_addresses=127.0.0.1 -p %d", c.sockDir, c.port)
	if out, err := c.asPostgres("pg_ctl", "-D", c.dir, "-o", opts, "-l", filepath.Join(c.sockDir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.sockDir, "log"))
		c.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

func (c *pgCluster) stop() {
	c.t.Helper()
	if out, err := c.asPostgres("pg_ctl", "-D", c.dir, "-m", "fast", "-w", "stop"); err != nil {
		c.t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

func (c *pgCluster) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// newPGClusterOwn initdbs and starts a cluster in t.TempDir, stopped when
// the test ends. It skips unless ELICIT_TEST_POSTGRES_BIN (a directory
// with initdb and pg_ctl) or ELICIT_TEST_POSTGRES_DSN is set and the
// binaries exist (/usr/lib/postgresql/*/bin when only the DSN is set).
func newPGClusterOwn(t *testing.T) *pgCluster {
	t.Helper()
	bin := os.Getenv("ELICIT_TEST_POSTGRES_BIN")
	if bin == "" {
		if os.Getenv("ELICIT_TEST_POSTGRES_DSN") == "" {
			t.Skip("set ELICIT_TEST_POSTGRES_BIN (e.g. /usr/lib/postgresql/15/bin) or ELICIT_TEST_POSTGRES_DSN to run the PostgreSQL outage test")
		}
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		sort.Strings(dirs)
		if len(dirs) == 0 {
			t.Skip("no /usr/lib/postgresql/*/bin/pg_ctl; set ELICIT_TEST_POSTGRES_BIN to run the PostgreSQL outage test")
		}
		bin = dirs[len(dirs)-1]
	}
	for _, p := range []string{"initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(bin, p)); err != nil {
			t.Skipf("ELICIT_TEST_POSTGRES_BIN: %v", err)
		}
	}
	root := t.TempDir()
	if os.Geteuid() == 0 {
		// The postgres user must reach the directory: open up the path
		// from the test's temporary root down and hand over the leaf.
		for d := root; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command("chown", "postgres", root).CombinedOutput()
		if err != nil {
			t.Fatalf("chown postgres: %v\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := &pgCluster{t: t, bin: bin, dir: filepath.Join(root, "data"), sockDir: root, port: port}
	if out, err := c.asPostgres("initdb", "-D", c.dir, "-A", "trust", "-U", "postgres"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.start()
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(c.dir, "postmaster.pid")); err == nil {
			c.asPostgres("pg_ctl", "-D", c.dir, "-m", "immediate", "-w", "stop")
		}
	})
	return c
}

// TestPostgresDown: with the cluster stopped mid-run, a tools/call that
// needs the store gets a JSON-RPC error within seconds and writes
// nothing; once the cluster is back, the same call succeeds.
func TestPostgresDown(t *testing.T) {
	c := newPGClusterOwn(t)
	e, _ := newPGCluster(t, c.dsn(), "")

	r := e.export(1, "alice", "2026-Q2", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	resume := retryWith(reports.KeyOptions, accepted, r.state())

	c.stop()
	for i, call := range []func() *mcpResponse{
		func() *mcpResponse { return e.export(2, "alice", "2026-Q2", "sales", resume, metaURL) },
		func() *mcpResponse { return e.list(3, "alice") },
	} {
		start := time.Now()
		r := call()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("call %d with PostgreSQL down took %v", i, d)
		}
		// A retryable -32603: HTTP 503, data {"retryable":true,...}.
		if r.Status != http.StatusServiceUnavailable || r.Error == nil || r.Error.Code != -32603 ||
			!strings.Contains(string(r.Error.Data), `"retryable":true`) {
			t.Fatalf("call %d with PostgreSQL down: want HTTP 503 and a retryable -32603, got HTTP %d: %s\nlog:\n%s", i, r.Status, r.Raw, e.logs.String())
		}
	}

	c.start()
	if got := pgDrafts(t, c.dsn(), "alice"); len(got) != 0 {
		t.Fatalf("drafts written while PostgreSQL was down: %q", got)
	}
	r = e.export(4, "alice", "2026-Q2", "sales", resume, metaURL)
	r.wantComplete(t, false, "")
	if got := pgDrafts(t, c.dsn(), "alice"); len(got) != 1 || !strings.HasSuffix(got[0], " "+reports.StatusPrepared) {
		t.Fatalf("drafts after the outage = %q, want one prepared", got)
	}
	e.list(5, "alice").wantComplete(t, false, "")
}
