package datadir_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/connect/datadir"
	"github.com/mcp-elicit/elicit/internal/pagetest"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// A secret typed on the page is kept, encrypted, in the directory, and
// read back after the directory is closed and opened again.
func TestOpenKeepsSecretsAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	opts := connect.Options{BaseURL: ts.URL, Logger: quiet}

	d, err := datadir.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ui/", d.Flows.Handler())
	ctx := context.Background()
	f, err := d.Flows.StartFlow(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	if err := pagetest.New().FinishKey(d.Flows.FlowURL(f), "alice", "sk_live_kept"); err != nil {
		t.Fatal(err)
	}
	bound := reqstate.Binding{Principal: "alice", Method: "tools/call", Name: "refund"}
	state, err := d.Sealer.Seal(&reqstate.Claims{Binding: bound, Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	if runtime.GOOS != "windows" {
		for name, want := range map[string]os.FileMode{"": 0o700, keyring.MasterKeyFile: 0o600, datadir.DatabaseFile: 0o600} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s/%s: %v %v, want mode %v", dir, name, fi.Mode().Perm(), err, want)
			}
		}
	}

	d, err = datadir.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path != dir {
		t.Errorf("Path = %q", d.Path)
	}
	got, err := d.Flows.Secret(ctx, "alice", "billing_key")
	if err != nil || string(got) != "sk_live_kept" {
		t.Fatalf("after reopening: %q %v", got, err)
	}
	// A question asked before the restart is answered after it.
	if c, err := d.Sealer.Open(state, bound); err != nil || c.Round != 1 {
		t.Fatalf("state sealed before reopening: %+v %v", c, err)
	}
	// The Store is the same database the Service uses.
	if flow, err := d.Store.GetFlow(ctx, f.ID); err != nil || flow.Principal != "alice" {
		t.Fatalf("Store.GetFlow: %+v %v", flow, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	loose := t.TempDir()
	if err := os.WriteFile(filepath.Join(loose, keyring.MasterKeyFile), make([]byte, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		dir  string
		opts connect.Options
		want string
	}{
		{"a store of its own", t.TempDir(), connect.Options{Store: st, BaseURL: "http://127.0.0.1:3000"}, "leave them unset"},
		{"a master key of its own", t.TempDir(), connect.Options{MasterKey: make([]byte, 32), BaseURL: "http://127.0.0.1:3000"}, "leave them unset"},
		{"no BaseURL", t.TempDir(), connect.Options{}, "BaseURL"},
		{"demo sign-in beyond loopback", t.TempDir(), connect.Options{BaseURL: "https://mcp.example.com"}, "InsecureDemoSignIn"},
		{"no directory", "", connect.Options{BaseURL: "http://127.0.0.1:3000"}, "empty data directory"},
		{"a master key others can read", loose, connect.Options{BaseURL: "http://127.0.0.1:3000"}, "chmod 600"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "a master key others can read" && runtime.GOOS == "windows" {
				t.Skip("no file modes on Windows")
			}
			tt.opts.Logger = quiet
			d, err := datadir.Open(tt.dir, tt.opts)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.HasPrefix(err.Error(), "datadir: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want one with %q", err, tt.want)
			}
		})
	}
}

// A master key file replaced after the database was set up is refused,
// rather than sealing states and secrets no one can open.
func TestOpenRefusesAnotherMasterKey(t *testing.T) {
	dir := t.TempDir()
	opts := connect.Options{BaseURL: "http://127.0.0.1:3000", Logger: quiet}
	d, err := datadir.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.WriteFile(filepath.Join(dir, keyring.MasterKeyFile), make([]byte, keyring.MasterKeySize), 0o600); err != nil {
		t.Fatal(err)
	}
	if d, err := datadir.Open(dir, opts); !errors.Is(err, keyring.ErrWrongMasterKey) {
		if err == nil {
			d.Close()
		}
		t.Fatalf("another master key: %v", err)
	}
}

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "datadir-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	data, err := datadir.Open(filepath.Join(dir, "data"), connect.Options{BaseURL: "http://127.0.0.1:8080", Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer data.Close()
	// The Service behind a URL step: mount data.Flows.Handler() at "/ui/"
	// and give data.Flows to connect.Step.
	f, err := data.Flows.StartFlow(context.Background(), "alice", "billing_key")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.TrimSuffix(data.Flows.FlowURL(f), f.ID) + "<flow id>")
	// Output:
	// http://127.0.0.1:8080/ui/set_api_key?flow=<flow id>
}
