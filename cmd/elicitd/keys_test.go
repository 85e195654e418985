package main

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// keysEnv is a store ring with a settable clock.
type keysEnv struct {
	keys  *stateKeys
	clock atomic.Int64
}

func newKeysEnv(t *testing.T, master []byte) *keysEnv {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &keysEnv{}
	e.clock.Store(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano())
	e.keys, err = newStateKeys(&config{}, st, master, func() time.Time { return time.Unix(0, e.clock.Load()) })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *keysEnv) ids(t *testing.T) string {
	t.Helper()
	ring, err := e.keys.load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ring))
	for i, k := range ring {
		ids[i] = k.ID
	}
	return strings.Join(ids, ",")
}

// wantIDs fails unless the ring's key ids, sealing key first, are want.
func (e *keysEnv) wantIDs(t *testing.T, want, when string) {
	t.Helper()
	if got := e.ids(t); got != want {
		t.Fatalf("%s: ring = %s, want %s", when, got, want)
	}
}

// wantRetire retires id and fails unless the error holds refusal (""
// means success is wanted).
func (e *keysEnv) wantRetire(t *testing.T, id, refusal, when string) {
	t.Helper()
	_, err := e.keys.retire(t.Context(), id, false)
	switch {
	case refusal == "" && err != nil:
		t.Fatalf("%s: retire %s: %v", when, id, err)
	case refusal != "" && (err == nil || !strings.Contains(err.Error(), refusal)):
		t.Fatalf("%s: retire %s: %v, want %q", when, id, err, refusal)
	}
}

// The ring's life: the derived k1 alone; a rotation stores k1 and adds a
// key that only opens until its stored activation time, then seals; k1
// can then be retired, the sealing or a pending key never.
func TestStateKeyRingLifecycle(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	e := newKeysEnv(t, master)
	ctx := t.Context()
	e.wantIDs(t, "k1", "fresh")
	derived, _ := e.keys.load(ctx)
	sealer, err := reqstate.New(derived, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := reqstate.Binding{Principal: "alice", Method: "tools/call", Name: "t"}
	oldState, _ := sealer.Seal(&reqstate.Claims{Binding: b})

	added, _, err := e.keys.rotate(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	newID := added.ID
	e.wantIDs(t, "k1,"+newID, "just after rotate (k1 still seals)")
	e.wantRetire(t, "k1", "seals", "k1 seals")
	e.wantRetire(t, newID, "still to activate", "the new key is pending")
	e.clock.Add(int64(time.Minute))
	e.wantIDs(t, newID+",k1", "a minute later")
	// The stored k1 is the derived key: states sealed before still open.
	if err := e.keys.refresh(ctx, sealer); err != nil {
		t.Fatal(err)
	}
	if _, err := sealer.Open(oldState, b); err != nil {
		t.Fatalf("state sealed by the derived key after rotation: %v", err)
	}
	e.wantRetire(t, newID, "seals", "the new key seals")
	e.wantRetire(t, "nope", "no key", "an unknown key")
	// k1 sealed until a minute ago: its states stay valid for the TTL.
	e.wantRetire(t, "k1", "--force", "right after k1 stopped sealing")
	e.clock.Add(int64(reqstate.DefaultTTL) - 1)
	e.wantRetire(t, "k1", "--force", "1ns before k1's last states expire")
	e.clock.Add(1)
	e.wantRetire(t, "k1", "", "k1's last states expired")
	if err := e.keys.refresh(ctx, sealer); err != nil {
		t.Fatal(err)
	}
	if _, err := sealer.Open(oldState, b); err == nil {
		t.Fatal("a state sealed by the retired k1 still opens")
	}
	e.checkList(t, newID)
}

// checkList: the listing names sealingID as sealing, not the retired k1,
// and no key material (no stored byte string, no secret).
func (e *keysEnv) checkList(t *testing.T, sealingID string) {
	t.Helper()
	ctx := t.Context()
	var list bytes.Buffer
	if err := e.keys.list(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list.String(), sealingID) || !strings.Contains(list.String(), "seals") || strings.Contains(list.String(), "k1") {
		t.Fatalf("list:\n%s", list.String())
	}
	ring, _ := e.keys.load(ctx)
	stored, _ := e.keys.ring.StateKeys(ctx)
	for _, s := range []string{base64.StdEncoding.EncodeToString(ring[0].Secret), base64.StdEncoding.EncodeToString(stored[0].Sealed), string(ring[0].Secret)} {
		if strings.Contains(list.String(), s) {
			t.Fatal("list shows key material")
		}
	}
}

// A ring stored under another master key does not load; refresh keeps the
// current ring and readiness reports it.
func TestStateKeyRingOtherMaster(t *testing.T) {
	e := newKeysEnv(t, bytes.Repeat([]byte{1}, 32))
	if _, _, err := e.keys.rotate(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	other, err := newStateKeys(&config{}, e.keys.ring, bytes.Repeat([]byte{2}, 32), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.load(t.Context()); err == nil || !strings.Contains(err.Error(), "master key") {
		t.Fatalf("load with another master key: %v", err)
	}
	sealer, _ := reqstate.New([]reqstate.Key{reqstate.NewKey("cur")}, nil)
	if err := other.refresh(t.Context(), sealer); err == nil || *other.lastErr.Load() == "" || sealer.KeyIDs()[0] != "cur" {
		t.Fatalf("refresh: %v, lastErr %q, ring %v", err, *other.lastErr.Load(), sealer.KeyIDs())
	}
}

// TestKeysCommandUsage: --help prints the keys usage and succeeds; a
// command line that cannot be parsed is a usage error (exit 2), for keys
// as for the server.
func TestKeysCommandUsage(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int // exitCode; 0 = no error
		wantOut  string
	}{
		{[]string{"keys", "--help"}, 0, "elicitd keys rotate [--activate-after D]"},
		{[]string{"keys", "-h"}, 0, "Exit status: 0 done, 1 failed (nothing changed), 2 usage error"},
		{[]string{"keys", "help"}, 0, "elicitd keys retire ID"},
		{[]string{"keys"}, 2, "elicitd keys list"},
		{[]string{"keys", "spin"}, 2, `unknown command "spin"`},
		{[]string{"keys", "retire"}, 2, "want the key id"},
		{[]string{"keys", "retire", "--force"}, 2, "want the key id"},
		{[]string{"keys", "retire", "--force", "nope", "--data", "/nonexistent"}, 1, "/nonexistent/master.key"},
		{[]string{"keys", "retire", "--data", "/nonexistent", "nope"}, 1, "/nonexistent/master.key"},
		{[]string{"keys", "retire", "--data", "x"}, 2, "want the key id"},
		{[]string{"keys", "list", "--bogus"}, 2, "bogus"},
		{[]string{"keys", "list", "extra"}, 2, "unexpected arguments"},
		{[]string{"keys", "rotate", "--activate-after"}, 2, "needs an argument"},
		{[]string{"keys", "rotate", "--activate-after=soon"}, 2, "--activate-after"},
		{[]string{"keys", "rotate", "--activate-after", "10s"}, 1, "must be longer than --state-keys-refresh 30s"},
		{[]string{"keys", "rotate", "--activate-after", "30s"}, 1, "must be longer than --state-keys-refresh 30s"},
		{[]string{"keys", "list", "--bogus"}, 2, "see elicitd keys --help"},
		{[]string{"keys", "list", "--help"}, 0, "elicitd keys retire ID [--force]"},
		{[]string{"--bogus"}, 2, "bogus"},
		{[]string{"serve"}, 2, "unexpected arguments"},
		{[]string{"--help"}, 0, "Exit status: 0 done (and --help), 1 failed, 2 usage error"},
		{[]string{"--idle-timeout", "soon"}, 1, "idle-timeout"}, // a bad value, from any source, is a configuration error
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(tt.args, &out, &errOut)
			code := 0
			if err != nil {
				code = exitCode(err)
				errOut.WriteString(err.Error())
			}
			if code != tt.wantCode || !strings.Contains(out.String()+errOut.String(), tt.wantOut) {
				t.Fatalf("exit %d (%v), want %d with %q in:\n%s%s", code, err, tt.wantCode, tt.wantOut, out.String(), errOut.String())
			}
		})
	}
}

// runKeysIn runs elicitd keys with args and the flags after them.
func runKeysIn(t *testing.T, args []string, flags ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runKeys(append(args, flags...), &out, &errOut)
	return out.String() + errOut.String(), err
}

// newDataDir returns a data directory an instance has started in (its
// store, master.key and the store's master-key check exist).
func newDataDir(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	startInstance(t, "--data", data)
	return data
}

// startInstance starts and closes an elicitd instance with args and the
// process environment (ELICIT_MASTER_KEY).
func startInstance(t *testing.T, args ...string) error {
	t.Helper()
	cfg, err := loadConfig(append([]string{"--demo-oauth-addr", "off"}, args...), os.Getenv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.auditOut = io.Discard
	a, err := newApp(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	a.Close()
	return nil
}

// The keys command end to end on a SQLite data directory: list, rotate
// (the new key pending for --activate-after), retire refused for the
// sealing and the pending key whatever --state-keys-refresh says, allowed
// once a newer key seals.
func TestKeysCommand(t *testing.T) {
	data := newDataDir(t)
	keys := func(refusal, wantOut string, args ...string) string {
		t.Helper()
		return wantKeysCommand(t, append(args, "--data", data), refusal, wantOut)
	}
	keys("", `k1 .*derived from the master key`, "list")
	out := keys("", `^added k.*--activate-after 2m0s`, "rotate")
	pendingID := addedID(out)
	if out := keys("", `k1 .* seals\n`, "list"); !strings.Contains(out, "pending") {
		t.Fatalf("list after rotate shows no pending key:\n%s", out)
	}
	// The process's own refresh no longer decides which key seals.
	keys("seals requestState now", "", "retire", "k1", "--state-keys-refresh", "1ns")
	keys("still to activate", "", "retire", pendingID)
	nowID := addedID(keys("", `^added k`, "rotate", "--activate-after", "2ns", "--state-keys-refresh", "1ns"))
	keys("pass --force", "", "retire", "k1")
	keys("", "retired k1", "retire", "k1", "--force")
	out = keys("", nowID+` .* seals\n`, "list")
	master, _ := os.ReadFile(filepath.Join(data, "master.key"))
	if strings.Contains(out, "k1 ") || len(master) == 0 || strings.Contains(out, base64.StdEncoding.EncodeToString(master)) {
		t.Fatalf("list after retiring k1 shows k1 or the master key (or there is none):\n%s", out)
	}
}

// wantKeysCommand runs elicitd keys args and fails unless it is refused
// with an error holding refusal, or (refusal "") succeeds with an output
// matching the regular expression wantOut. It returns the output.
func wantKeysCommand(t *testing.T, args []string, refusal, wantOut string) string {
	t.Helper()
	out, err := runKeysIn(t, args)
	switch {
	case refusal != "" && (err == nil || !strings.Contains(err.Error(), refusal)):
		t.Fatalf("keys %v: %v, want %q\n%s", args, err, refusal, out)
	case refusal == "" && err != nil:
		t.Fatalf("keys %v: %v\n%s", args, err, out)
	case !regexp.MustCompile(wantOut).MatchString(out):
		t.Fatalf("keys %v: output does not match %q:\n%s", args, wantOut, out)
	}
	return out
}

// addedID is the key id in rotate's "added ID; ..." line.
func addedID(out string) string {
	return strings.TrimSuffix(strings.Fields(strings.TrimPrefix(out, "added "))[0], ";")
}

// With another master key, every keys command refuses, changing nothing:
// the store's master-key check does not match. The first rotation too,
// while the ring is still derived and there is no stored key to test.
func TestKeysCommandWrongMasterKey(t *testing.T) {
	data := t.TempDir()
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32)))
	if err := startInstance(t, "--data", data); err != nil {
		t.Fatal(err)
	}
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	for _, args := range [][]string{{"rotate"}, {"retire", "k1"}, {"list"}} {
		out, err := runKeysIn(t, args, "--data", data)
		if err == nil || !strings.Contains(err.Error(), "does not match the key this store was set up with") || exitCode(err) != 1 {
			t.Errorf("keys %v: %v, want the master-key mismatch\n%s", args, err, out)
		}
	}
	if err := startInstance(t, "--data", data); err == nil || !strings.Contains(err.Error(), "does not match the key this store was set up with") {
		t.Errorf("an instance with the wrong key started: %v", err)
	}
	st, err := sqlite.Open(filepath.Join(data, "elicitd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if after, _ := st.StateKeys(t.Context()); len(after) != 0 {
		t.Fatalf("the wrong master key stored %d keys", len(after))
	}
}

// With SQLite, an ELICIT_MASTER_KEY that differs from --data's master.key
// is refused, by the server and the keys command.
func TestMasterKeyEnvDiffersFromFile(t *testing.T) {
	data := newDataDir(t)
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	want := "differs from " + filepath.Join(data, "master.key")
	if err := startInstance(t, "--data", data); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("start: %v, want %q", err, want)
	}
	if out, err := runKeysIn(t, []string{"rotate"}, "--data", data); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("keys rotate: %v, want %q\n%s", err, want, out)
	}
	file, _ := os.ReadFile(filepath.Join(data, "master.key"))
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(file))
	if out, err := runKeysIn(t, []string{"list"}, "--data", data); err != nil {
		t.Errorf("keys list with the file's key in the environment: %v\n%s", err, out)
	}
}

// A ring broken by a rotation under another master key before the store
// had a check (an older elicitd): list marks the keys; retire removes a
// key that does not open, even the sealing one, with --force while the
// master key cannot be verified, and without once the check is stored.
func TestKeysRetireUnopenedRepair(t *testing.T) {
	right, wrong := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	data := t.TempDir()
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(right))
	if err := startInstance(t, "--data", data); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(data, "elicitd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bad, _ := newStateKeys(&config{}, st, wrong, time.Now)
	nk, _, err := bad.rotate(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) { return runKeysIn(t, args, "--data", data) }
	// Verified by the check the instance stored: no --force needed.
	if out, err := run("list"); err == nil || strings.Count(out, "DOES NOT OPEN") != 2 || !strings.Contains(err.Error(), "matches the store's check: no instance can use them") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := run("retire", nk.ID); err != nil || !strings.Contains(out, "no instance could use it") {
		t.Fatalf("retire the sealing key that does not open: %v\n%s", err, out)
	}
	// A store without a check (made by an older elicitd): --force.
	if _, _, err := bad.rotate(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(data, "elicitd.db")) // the driver store/sqlite registers
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `DELETE FROM store_meta`); err != nil {
		t.Fatal(err)
	}
	if out, err := run("retire", "k1"); err == nil || !strings.Contains(err.Error(), "pass --force") {
		t.Fatalf("retire without a check: %v\n%s", err, out)
	}
	stored, _ := st.StateKeys(t.Context())
	for _, sk := range stored {
		if out, err := run("retire", sk.ID, "--force"); err != nil {
			t.Fatalf("retire %s --force: %v\n%s", sk.ID, err, out)
		}
	}
	if out, err := run("list"); err != nil || !strings.Contains(out, "derived from the master key") {
		t.Fatalf("list after the repair: %v\n%s", err, out)
	}
	if err := startInstance(t, "--data", data); err != nil {
		t.Fatalf("start after the repair: %v", err)
	}
}

// Before any rotation, k1 is derived, not stored: retire says so.
func TestKeysRetireDerived(t *testing.T) {
	data := newDataDir(t)
	if out, err := runKeysIn(t, []string{"retire", "k1"}, "--data", data); err == nil || !strings.Contains(err.Error(), "derived from the master key and not stored") {
		t.Fatalf("retire k1 on a derived ring: %v\n%s", err, out)
	}
}

// The keys command creates no data directory, store or master key.
func TestKeysCommandCreatesNothing(t *testing.T) {
	empty := t.TempDir()
	keyOnly := t.TempDir()
	if err := os.WriteFile(filepath.Join(keyOnly, "master.key"), bytes.Repeat([]byte{1}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nonexistent", "x")
	tests := []struct {
		name string
		dir  string
		env  string // ELICIT_MASTER_KEY
		want string
	}{
		{"missing dir", missing, "", "no master key"},
		{"missing dir, env key", missing, base64.StdEncoding.EncodeToString(make([]byte, 32)), "no elicitd store at"},
		{"empty dir", empty, "", "no master key"},
		{"master key but no store", keyOnly, "", "no elicitd store at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(masterKeyEnv, tt.env)
			for _, verb := range [][]string{{"list"}, {"rotate"}, {"retire", "k1"}} {
				if out, err := runKeysIn(t, verb, "--data", tt.dir); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("keys %v: %v, want %q\n%s", verb, err, tt.want, out)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Fatalf("the missing data directory was created: %v", err)
	}
	for _, dir := range []string{empty, keyOnly} {
		entries, _ := os.ReadDir(dir)
		if len(entries) > 1 || (dir == empty && len(entries) != 0) {
			t.Fatalf("%s now holds %d entries", dir, len(entries))
		}
	}
}

// With --store, the keys command needs an existing elicit schema: it
// creates none in an empty one, and works once an instance made it.
func TestKeysCommandPostgresSchemaMustExist(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)))
	if out, err := runKeysIn(t, []string{"list"}, "--store", dsn); !errors.Is(err, postgres.ErrNoSchema) {
		t.Fatalf("list on an empty schema: %v\n%s", err, out)
	}
	st, err := postgres.OpenExisting(t.Context(), dsn)
	if !errors.Is(err, postgres.ErrNoSchema) {
		t.Fatalf("the keys command left a schema behind: %v", err)
	}
	if st, err = postgres.Open(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out, err := runKeysIn(t, []string{"list"}, "--store", dsn); err != nil || !strings.Contains(out, "k1") {
		t.Fatalf("list on a migrated schema: %v\n%s", err, out)
	}
}

// An instance whose master key differs from the one a shared PostgreSQL
// store was set up with does not start (nor join the others).
func TestSharedStoreOtherMasterKey(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)))
	if err := startInstance(t, "--store", dsn); err != nil {
		t.Fatal(err)
	}
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32)))
	if err := startInstance(t, "--store", dsn); err == nil || !strings.Contains(err.Error(), "does not match the key this store was set up with") {
		t.Fatalf("second instance with another key: %v", err)
	}
	if out, err := runKeysIn(t, []string{"rotate"}, "--store", dsn); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("rotate with another key: %v\n%s", err, out)
	}
}

// A key overtaken while pending (a newer key activates no later) never
// seals: rotate says so, and retire removes it at once, without --force;
// the key it was overtaken by still waits out the TTL once it stops.
func TestKeysRetireNeverSealed(t *testing.T) {
	e := newKeysEnv(t, bytes.Repeat([]byte{7}, 32))
	ctx := t.Context()
	slow, pending, err := e.keys.rotate(ctx, 10*time.Minute)
	if err != nil || len(pending) != 0 {
		t.Fatalf("first rotate: %v, pending %d", err, len(pending))
	}
	e.clock.Add(int64(time.Minute))
	fast, pending, err := e.keys.rotate(ctx, 2*time.Minute)
	if err != nil || len(pending) != 1 || pending[0].ID != slow.ID {
		t.Fatalf("second rotate: %v, pending %v", err, pending)
	}
	if note := pendingNote(pending[0], fast); !strings.Contains(note, slow.ID+" never seals") {
		t.Fatalf("note: %s", note)
	}
	e.clock.Add(int64(11 * time.Minute)) // both active, fast seals
	if got := e.ids(t); !strings.HasPrefix(got, fast.ID+",") {
		t.Fatalf("ring = %s", got)
	}
	if _, err := e.keys.retire(ctx, slow.ID, false); err != nil {
		t.Fatalf("retiring the never-sealing %s: %v", slow.ID, err)
	}
	// k1 stopped sealing 9m ago (fast's activation): still refused.
	if _, err := e.keys.retire(ctx, "k1", false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("retiring k1: %v", err)
	}
	// A later pending key is only cut short, not skipped.
	later, _, err := e.keys.rotate(ctx, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	last, pending, err := e.keys.rotate(ctx, 8*time.Minute)
	if err != nil || len(pending) != 1 || pending[0].ID != later.ID {
		t.Fatalf("rotate: %v, pending %v", err, pending)
	}
	if note := pendingNote(pending[0], last); strings.Contains(note, "never") || !strings.Contains(note, "seals only until") {
		t.Fatalf("note for a key activating later: %s", note)
	}
}
