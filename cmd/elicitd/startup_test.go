package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A start refused for what can fail without writing (issuer discovery,
// the PostgreSQL connection, the metrics port) leaves no data directory,
// master.key or database behind.
func TestRefusedStartCreatesNothing(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, busyPort, _ := net.SplitHostPort(busy.Addr().String())
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unreachable issuer", []string{"--auth", "jwt", "--jwt-issuer", "http://" + freeLoopbackAddr(t), "--oidc-client-id", "x", "--public-url", "http://127.0.0.1:1"}, "--auth jwt"},
		{"unreachable postgres", []string{"--store", "postgres://elicit:hunter2secret@" + freeLoopbackAddr(t) + "/elicit?sslmode=disable"}, "opening the store: postgres: "},
		{"metrics port taken", []string{"--metrics-addr", "localhost:" + busyPort}, "--metrics-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"--data", data, "--addr", "127.0.0.1:0", "--demo-oauth-addr", "off", "--audit-log", "off"}, tt.args...)
			var out, errOut bytes.Buffer
			err := run(args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error()+errOut.String(), "hunter2secret") {
				t.Fatalf("the password shows: %v\n%s", err, errOut.String())
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				entries, _ := os.ReadDir(data)
				t.Fatalf("refused start created %s (%v): %v", data, err, entries)
			}
		})
	}
}

// The server and the keys command report an unreachable PostgreSQL the
// same way, without the URL's password.
func TestKeysStoreErrorPrefix(t *testing.T) {
	t.Setenv(masterKeyEnv, "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
	out, err := runKeysIn(t, []string{"list"}, "--store", "postgres://elicit:hunter2secret@"+freeLoopbackAddr(t)+"/elicit?sslmode=disable")
	if err == nil || !strings.HasPrefix(err.Error(), "opening the store: postgres: ") || strings.Contains(err.Error()+out, "hunter2secret") {
		t.Fatalf("err = %v\n%s", err, out)
	}
}

// --help, asked for, goes to stdout (elicitd --help | less); usage errors
// to stderr.
func TestHelpOnStdout(t *testing.T) {
	tests := []struct {
		args    []string
		wantOut bool // else: nothing on stdout
	}{
		{[]string{"--help"}, true},
		{[]string{"-h"}, true},
		{[]string{"keys", "--help"}, true},
		{[]string{"keys", "help"}, true},
		{[]string{"keys", "list", "--help"}, true},
		{[]string{"keys", "retire", "k1", "--help"}, true},
		{[]string{"--bogus"}, false},
		{[]string{"keys", "spin"}, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(tt.args, &out, &errOut)
			if tt.wantOut && (err != nil || !strings.Contains(out.String(), "Usage") || errOut.Len() > 0) {
				t.Fatalf("err %v; stdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
			}
			if !tt.wantOut && (err == nil || out.Len() > 0) {
				t.Fatalf("err %v; stdout:\n%s", err, out.String())
			}
		})
	}
}
