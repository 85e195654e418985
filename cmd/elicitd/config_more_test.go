package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Settings review: special values in any case, clear errors for bad
// booleans and --auth, --metrics-addr apart from --addr.
func TestConfigValues(t *testing.T) {
	boolFile := writeConfig(t, `{"insecure-demo-auth": "yes"}`)
	tests := []struct {
		name    string
		args    []string
		want    func(*config) bool // nil: an error with wantErr
		wantErr string
	}{
		{"audit-log OFF", []string{"--audit-log", "OFF"}, func(c *config) bool { return c.auditLog == "off" }, ""},
		{"metrics-addr Off", []string{"--metrics-addr", "Off"}, func(c *config) bool { return c.metricsAddr == "off" }, ""},
		{"demo-oauth-addr OFF", []string{"--demo-oauth-addr", "OFF"}, func(c *config) bool { return c.demoOAuthAddr == "" }, ""},
		{"auth DEMO", []string{"--auth", "DEMO"}, func(c *config) bool { return c.auth.mode == "demo" }, ""},
		{"auth other", []string{"--auth", "basic"}, nil, `--auth: want demo or jwt, not "basic"`},
		{"bool from file", []string{"--config", boolFile}, nil, `insecure-demo-auth (from --config ` + boolFile + `): want true or false, not "yes"`},
		{"bool flag", []string{"--insecure-demo-auth=yes"}, nil, `want true or false, not "yes"`},
		{"metrics on addr", []string{"--addr", "127.0.0.1:3000", "--metrics-addr", "127.0.0.1:3000"}, nil, "is --addr's listener"},
		{"metrics on wildcard", []string{"--addr", "127.0.0.1:3000", "--metrics-addr", ":3000"}, nil, "is --addr's listener"},
		{"metrics elsewhere", []string{"--addr", "127.0.0.1:3000", "--metrics-addr", "127.0.0.1:3001"}, func(c *config) bool { return c.metricsAddr == "127.0.0.1:3001" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(tt.args, func(string) string { return "" }, &bytes.Buffer{})
			if tt.want != nil {
				if err != nil || !tt.want(cfg) {
					t.Fatalf("err %v, cfg %+v", err, cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// --audit-log OFF writes no file named OFF.
func TestAuditLogOffAnyCase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	a, closer, err := newAuditor(offOr("OFF"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer()
	a.write(t.Context(), &auditRecord{event: "mcp_round", outcome: "completed"})
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("--audit-log OFF created %s", entries[0].Name())
	}
}

// A FIFO as --config is refused without waiting for a writer.
func TestConfigFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := loadConfig([]string{"--config", fifo}, func(string) string { return "" }, &bytes.Buffer{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("--config FIFO: %v", err)
		}
	case <-time.After(10 * time.Second): // a hang, not a slow answer
		// Unblock the reader so the goroutine ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("--config FIFO hangs")
	}
}

// A flag error is reported once, with a hint, and no usage text; keys
// names its own --help.
func TestFlagErrorOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		hint string
	}{
		{[]string{"--bogus"}, "(see elicitd --help)"},
		{[]string{"keys", "list", "--bogus"}, "(see elicitd keys --help)"},
	} {
		var out, errOut bytes.Buffer
		err := run(tt.args, &out, &errOut)
		if err == nil || exitCode(err) != 2 || strings.Count(err.Error(), "flag provided but not defined: -bogus") != 1 || !strings.HasSuffix(err.Error(), tt.hint) {
			t.Errorf("%v: %v", tt.args, err)
		}
		if out.Len()+errOut.Len() != 0 {
			t.Errorf("%v printed besides the error:\n%s%s", tt.args, out.String(), errOut.String())
		}
	}
}

// Demo auth exposed beyond loopback is logged as a warning at start; on
// loopback it is not.
func TestDemoAuthExposedWarning(t *testing.T) {
	const warning = "demo auth is reachable beyond loopback"
	e := newEnvWith(t, func(c *config) { c.insecureDemoAuth, c.publicURL = true, "https://mcp.example.com" })
	if !strings.Contains(e.logs.String(), "level=WARN msg=\""+warning) {
		t.Fatalf("no warning:\n%s", e.logs.String())
	}
	if e := newEnvWith(t, func(c *config) { c.insecureDemoAuth = true }); strings.Contains(e.logs.String(), warning) {
		t.Fatalf("warning on loopback:\n%s", e.logs.String())
	}
}
