package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// keysEnv is a store ring with a settable clock and a 1-minute activation.
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
	e.keys, err = newStateKeys(&config{keysRefresh: time.Minute}, st, master, func() time.Time { return time.Unix(0, e.clock.Load()) })
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

// The ring's life: the derived k1 alone; a rotation stores k1 and adds a
// key that only opens until it is --state-keys-refresh old, then seals;
// k1 can then be retired, the sealing key never.
func TestStateKeyRingLifecycle(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	e := newKeysEnv(t, master)
	ctx := t.Context()
	if got := e.ids(t); got != "k1" {
		t.Fatalf("fresh ring = %s", got)
	}
	derived, _ := e.keys.load(ctx)
	sealer, err := reqstate.New(derived, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := reqstate.Binding{Principal: "alice", Method: "tools/call", Name: "t"}
	oldState, _ := sealer.Seal(&reqstate.Claims{Binding: b})

	newID, err := e.keys.rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.ids(t); got != "k1,"+newID {
		t.Fatalf("just after rotate = %s; want k1 still sealing", got)
	}
	if err := e.keys.retire(ctx, "k1"); err == nil || !strings.Contains(err.Error(), "seals") {
		t.Fatalf("retiring the sealing k1: %v", err)
	}
	e.clock.Add(int64(time.Minute))
	if got := e.ids(t); got != newID+",k1" {
		t.Fatalf("a minute later = %s; want %s sealing", got, newID)
	}
	// The stored k1 is the derived key: states sealed before still open.
	if err := e.keys.refresh(ctx, sealer); err != nil {
		t.Fatal(err)
	}
	if _, err := sealer.Open(oldState, b); err != nil {
		t.Fatalf("state sealed by the derived key after rotation: %v", err)
	}
	if err := e.keys.retire(ctx, newID); err == nil {
		t.Fatal("retired the sealing key")
	}
	if err := e.keys.retire(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("retiring an unknown key: %v", err)
	}
	if err := e.keys.retire(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := e.keys.refresh(ctx, sealer); err != nil {
		t.Fatal(err)
	}
	if _, err := sealer.Open(oldState, b); err == nil {
		t.Fatal("a state sealed by the retired k1 still opens")
	}
	var list bytes.Buffer
	if err := e.keys.list(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list.String(), newID) || !strings.Contains(list.String(), "seals") || strings.Contains(list.String(), "k1") {
		t.Fatalf("list:\n%s", list.String())
	}
	// Nothing secret in the listing: no stored byte string, no secret.
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
	if _, err := e.keys.rotate(t.Context()); err != nil {
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

func TestKeysCommandUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"spin"}, {"retire"}, {"retire", "--data", "x"}} {
		if err := runKeys(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("keys %v accepted", args)
		}
	}
}

// The keys command end to end on a SQLite data directory: list, rotate,
// retire refused for the sealing key, allowed once the new key seals.
func TestKeysCommand(t *testing.T) {
	data := t.TempDir()
	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := runKeys(append(args, "--data", data, "--state-keys-refresh", "1ns"), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := run("list"); err != nil || !strings.Contains(out, "k1") || !strings.Contains(out, "derived from the master key") {
		t.Fatalf("list on a fresh store: %v\n%s", err, out)
	}
	out, err := run("rotate")
	if err != nil || !strings.HasPrefix(out, "added k") {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	newID := strings.Fields(strings.TrimPrefix(out, "added "))[0]
	newID = strings.TrimSuffix(newID, ";")
	if out, err := run("retire", newID); err == nil {
		t.Fatalf("retired the sealing key %s:\n%s", newID, out)
	}
	if out, err := run("retire", "k1"); err != nil || !strings.Contains(out, "retired k1") {
		t.Fatalf("retire k1: %v\n%s", err, out)
	}
	out, err = run("list")
	if err != nil || !strings.Contains(out, newID+"  ") || strings.Contains(out, "k1 ") {
		t.Fatalf("list after retiring k1: %v\n%s", err, out)
	}
	master, _ := os.ReadFile(filepath.Join(data, "master.key"))
	if len(master) == 0 || strings.Contains(out, base64.StdEncoding.EncodeToString(master)) {
		t.Fatal("no master key, or the list shows it")
	}
}
