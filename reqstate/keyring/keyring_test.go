package keyring_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// env is a Ring on a fresh SQLite store with a settable clock.
type env struct {
	st    *sqlite.Store
	ring  *keyring.Ring
	clock atomic.Int64
}

func newEnv(t *testing.T, master []byte, opts *keyring.Options) *env {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{st: st}
	e.clock.Store(t0.UnixNano())
	e.ring = e.with(t, master, opts)
	return e
}

// with returns another Ring on e's store and clock.
func (e *env) with(t *testing.T, master []byte, opts *keyring.Options) *keyring.Ring {
	t.Helper()
	o := keyring.Options{}
	if opts != nil {
		o = *opts
	}
	o.Now = e.now
	r, err := keyring.New(e.st, master, &o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) now() time.Time          { return time.Unix(0, e.clock.Load()).UTC() }
func (e *env) advance(d time.Duration) { e.clock.Add(int64(d)) }

// ids returns the ring Load gives, the sealing key first.
func ids(t *testing.T, r *keyring.Ring) string {
	t.Helper()
	keys, err := r.Load(t.Context())
	return join(t, keys, err, func(k reqstate.Key) string { return k.ID })
}

// roles returns id=role for each key Keys lists.
func roles(t *testing.T, r *keyring.Ring) string {
	t.Helper()
	infos, err := r.Keys(t.Context())
	return join(t, infos, err, func(ki keyring.KeyInfo) string { return ki.ID + "=" + string(ki.Role) })
}

// join fails t on err, else joins f of each item with commas.
func join[T any](t *testing.T, items []T, err error, f func(T) string) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = f(it)
	}
	return strings.Join(s, ",")
}

// wantRetireError checks that err is a *RetireError for id with reason.
func wantRetireError(t *testing.T, err error, id string, reason keyring.RetireReason) *keyring.RetireError {
	t.Helper()
	var re *keyring.RetireError
	if !errors.As(err, &re) || re.ID != id || re.Reason != reason {
		t.Fatalf("err = %v, want a RetireError %s for %s", err, reason, id)
	}
	return re
}

func TestNewRefuses(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tt := range []struct {
		name   string
		st     store.KeyRing
		master []byte
	}{
		{"nil store", nil, make([]byte, 32)},
		{"short master key", st, make([]byte, 31)},
		{"no master key", st, nil},
	} {
		if _, err := keyring.New(tt.st, tt.master, nil); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// The ring's life: the derived k1 alone; a rotation stores k1 and adds a
// key that only opens until its activation, then seals; k1 can then be
// retired once its states expire, the sealing or a pending key never.
func TestLifecycle(t *testing.T) {
	e := newEnv(t, bytes.Repeat([]byte{7}, 32), nil)
	ctx := t.Context()
	if got, want := roles(t, e.ring), "k1=seals"; got != want {
		t.Fatalf("fresh ring: %s, want %s", got, want)
	}
	derived, _ := e.ring.Load(ctx)
	sealer, err := reqstate.New(derived, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := reqstate.Binding{Principal: "alice", Method: "tools/call", Name: "t"}
	oldState, _ := sealer.Seal(&reqstate.Claims{Binding: b})

	added, pending, err := e.ring.Rotate(ctx, time.Minute)
	if err != nil || len(pending) != 0 {
		t.Fatalf("Rotate: %v, pending %v", err, pending)
	}
	if !added.CreatedAt.Equal(t0) || !added.Activation().Equal(t0.Add(time.Minute)) || !strings.HasPrefix(added.ID, "k20261129T120000Z-") {
		t.Fatalf("added %+v", added)
	}
	n := added.ID
	if got, want := ids(t, e.ring), "k1,"+n; got != want {
		t.Fatalf("just after Rotate: %s, want %s", got, want)
	}
	if got, want := roles(t, e.ring), n+"=pending,k1=seals"; got != want {
		t.Fatalf("roles: %s, want %s", got, want)
	}
	_, err = e.ring.Retire(ctx, "k1", true)
	wantRetireError(t, err, "k1", keyring.RetireSealing)
	_, err = e.ring.Retire(ctx, n, true)
	if re := wantRetireError(t, err, n, keyring.RetirePending); !re.At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("pending until %v", re.At)
	}

	e.advance(time.Minute)
	if got, want := ids(t, e.ring), n+",k1"; got != want {
		t.Fatalf("a minute later: %s, want %s", got, want)
	}
	// The stored k1 is the derived key: states it sealed still open.
	if err := e.ring.Refresh(ctx, sealer); err != nil {
		t.Fatal(err)
	}
	if _, err := sealer.Open(oldState, b); err != nil {
		t.Fatalf("a state the derived key sealed, after the rotation: %v", err)
	}
	_, err = e.ring.Retire(ctx, "nope", true)
	wantRetireError(t, err, "nope", keyring.RetireUnknown)
	// k1 sealed until a minute ago: its states stay valid for the TTL.
	_, err = e.ring.Retire(ctx, "k1", false)
	if re := wantRetireError(t, err, "k1", keyring.RetireStatesValid); !re.At.Equal(t0.Add(time.Minute + reqstate.DefaultTTL)) {
		t.Fatalf("valid until %v", re.At)
	}
	e.advance(reqstate.DefaultTTL - 1)
	_, err = e.ring.Retire(ctx, "k1", false)
	wantRetireError(t, err, "k1", keyring.RetireStatesValid)
	e.advance(1)
	if removed, err := e.ring.Retire(ctx, "k1", false); err != nil || removed {
		t.Fatalf("Retire k1 once its states expired: removed %v, %v", removed, err)
	}
	if err := e.ring.Refresh(ctx, sealer); err != nil {
		t.Fatal(err)
	}
	if _, err := sealer.Open(oldState, b); err == nil {
		t.Fatal("a state the retired k1 sealed still opens")
	}
	if got, want := roles(t, e.ring), n+"=seals"; got != want {
		t.Fatalf("roles: %s, want %s", got, want)
	}
}

// force retires a key whose states are still valid; Options.StateTTL
// sets how long they are.
func TestRetireStatesValid(t *testing.T) {
	tests := []struct {
		name  string
		ttl   time.Duration
		after time.Duration // since k1 stopped sealing
		force bool
		want  keyring.RetireReason // "" = retired
	}{
		{"default TTL, too early", 0, reqstate.DefaultTTL - time.Second, false, keyring.RetireStatesValid},
		{"default TTL, forced", 0, 0, true, ""},
		{"default TTL, expired", 0, reqstate.DefaultTTL, false, ""},
		{"1m TTL, too early", time.Minute, 59 * time.Second, false, keyring.RetireStatesValid},
		{"1m TTL, expired", time.Minute, time.Minute, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, bytes.Repeat([]byte{7}, 32), &keyring.Options{StateTTL: tt.ttl})
			if _, _, err := e.ring.Rotate(t.Context(), 0); err != nil {
				t.Fatal(err)
			}
			e.advance(tt.after)
			_, err := e.ring.Retire(t.Context(), "k1", tt.force)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantRetireError(t, err, "k1", tt.want)
		})
	}
}

// A key overtaken while pending (a newer key activates no later) never
// seals: Rotate returns it as pending, and Retire removes it at once.
func TestRetireNeverSealed(t *testing.T) {
	e := newEnv(t, bytes.Repeat([]byte{7}, 32), nil)
	ctx := t.Context()
	slow, _, err := e.ring.Rotate(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.advance(time.Minute)
	fast, pending, err := e.ring.Rotate(ctx, 2*time.Minute)
	if err != nil || len(pending) != 1 || pending[0].ID != slow.ID {
		t.Fatalf("Rotate: %v, pending %v", err, pending)
	}
	e.advance(11 * time.Minute)
	if got := ids(t, e.ring); !strings.HasPrefix(got, fast.ID+",") {
		t.Fatalf("ring = %s, want %s sealing", got, fast.ID)
	}
	if _, err := e.ring.Retire(ctx, slow.ID, false); err != nil {
		t.Fatalf("retiring %s, which never sealed: %v", slow.ID, err)
	}
	// k1 stopped sealing 9 minutes ago, when fast activated.
	_, err = e.ring.Retire(ctx, "k1", false)
	wantRetireError(t, err, "k1", keyring.RetireStatesValid)
}

// Before any rotation, k1 is derived, not stored.
func TestRetireDerived(t *testing.T) {
	e := newEnv(t, bytes.Repeat([]byte{7}, 32), nil)
	_, err := e.ring.Retire(t.Context(), keyring.DerivedKeyID, true)
	wantRetireError(t, err, "k1", keyring.RetireDerived)
}

// VerifyMaster stores the check on first use and refuses another master
// key from then on; while a stored key does not open and no check is
// stored, it stores nothing and leaves the key unverified.
func TestVerifyMaster(t *testing.T) {
	right, wrong := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	ctx := t.Context()

	e := newEnv(t, right, nil)
	if e.ring.Verified() {
		t.Fatal("verified before VerifyMaster")
	}
	if err := e.ring.VerifyMaster(ctx); err != nil || !e.ring.Verified() {
		t.Fatalf("first VerifyMaster: %v, verified %v", err, e.ring.Verified())
	}
	if check, err := e.st.MasterKeyCheck(ctx); err != nil || !bytes.Equal(check, keyring.MasterKeyCheck(right)) {
		t.Fatalf("stored check %x, %v", check, err)
	}
	other := e.with(t, wrong, nil)
	if err := other.VerifyMaster(ctx); !errors.Is(err, keyring.ErrWrongMasterKey) || other.Verified() {
		t.Fatalf("another master key: %v, verified %v", err, other.Verified())
	}

	// A store without a check whose ring was rotated under another key.
	e = newEnv(t, right, nil)
	if _, _, err := e.with(t, wrong, nil).Rotate(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.ring.VerifyMaster(ctx); err != nil || e.ring.Verified() {
		t.Fatalf("VerifyMaster with unopened keys: %v, verified %v", err, e.ring.Verified())
	}
	if _, err := e.st.MasterKeyCheck(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a check was stored: %v", err)
	}
}

// A ring rotated under another master key: Load names the key that does
// not open, Rotate changes nothing, Keys marks the keys, and Retire
// removes such a key whatever its role once the master key is verified
// (or with force).
func TestUnopenedKeys(t *testing.T) {
	right, wrong := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	e := newEnv(t, right, nil)
	ctx := t.Context()
	bad := e.with(t, wrong, nil)
	nk, _, err := bad.Rotate(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}

	var oe *keyring.OpenError
	if _, err := e.ring.Load(ctx); !errors.As(err, &oe) || oe.ID != nk.ID || oe.Short {
		t.Fatalf("Load: %v, want an OpenError for %s", err, nk.ID)
	}
	sealer, _ := reqstate.New([]reqstate.Key{reqstate.NewKey("cur")}, nil)
	if err := e.ring.Refresh(ctx, sealer); err == nil || sealer.KeyIDs()[0] != "cur" {
		t.Fatalf("Refresh: %v, ring %v; want an error and the ring kept", err, sealer.KeyIDs())
	}
	var ue *keyring.UnopenedError
	if _, _, err := e.ring.Rotate(ctx, 0); !errors.As(err, &ue) || strings.Join(ue.IDs, ",") != nk.ID+",k1" || ue.Verified {
		t.Fatalf("Rotate: %v, want an UnopenedError for %s,k1", err, nk.ID)
	}
	if stored, _ := e.st.StateKeys(ctx); len(stored) != 2 {
		t.Fatalf("the refused Rotate left %d keys", len(stored))
	}
	if got, want := roles(t, e.ring), nk.ID+"=unopened,k1=unopened"; got != want {
		t.Fatalf("roles: %s, want %s", got, want)
	}
	_, err = e.ring.Retire(ctx, nk.ID, false)
	wantRetireError(t, err, nk.ID, keyring.RetireUnverified)
	if removed, err := e.ring.Retire(ctx, nk.ID, true); err != nil || !removed {
		t.Fatalf("Retire --force of the sealing key that does not open: removed %v, %v", removed, err)
	}
	// Verified: no force needed. The ring is the derived key again.
	if _, err := e.st.InitMasterKeyCheck(ctx, keyring.MasterKeyCheck(right)); err != nil {
		t.Fatal(err)
	}
	if err := e.ring.VerifyMaster(ctx); err != nil {
		t.Fatal(err)
	}
	if removed, err := e.ring.Retire(ctx, "k1", false); err != nil || !removed {
		t.Fatalf("Retire of the last key that does not open: removed %v, %v", removed, err)
	}
	if got := ids(t, e.ring); got != "k1" {
		t.Fatalf("ring after the repair: %s", got)
	}
}

// Retire and Rotate refuse while another key does not open.
func TestUnopenedOtherKey(t *testing.T) {
	e := newEnv(t, bytes.Repeat([]byte{1}, 32), nil)
	ctx := t.Context()
	good, _, err := e.ring.Rotate(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ring.VerifyMaster(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.st.AddStateKey(ctx, &store.StateKey{ID: "foreign", Sealed: bytes.Repeat([]byte{9}, 60), CreatedAt: e.now(), ActivatesAt: e.now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var ue *keyring.UnopenedError
	if _, err := e.ring.Retire(ctx, good.ID, true); !errors.As(err, &ue) || strings.Join(ue.IDs, ",") != "foreign" || !ue.Verified {
		t.Fatalf("Retire: %v, want a verified UnopenedError for foreign", err)
	}
}

// A stored key too short to be sealed is reported as damaged.
func TestLoadShortSealed(t *testing.T) {
	e := newEnv(t, bytes.Repeat([]byte{1}, 32), nil)
	if err := e.st.AddStateKey(t.Context(), &store.StateKey{ID: "cut", Sealed: []byte{1, 2, 3}, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	var oe *keyring.OpenError
	if _, err := e.ring.Load(t.Context()); !errors.As(err, &oe) || oe.ID != "cut" || !oe.Short {
		t.Fatalf("Load: %v", err)
	}
}

// Keys sealed by earlier versions keep opening: the derivations from the
// master key are fixed. The fixture is a k1 stored by elicitd's first
// rotation under the master key 0x07*32.
func TestCompatibility(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	// HKDF-SHA256(master, no salt, "elicit requestState v1").
	const derived = "707d3f73293f04c9f6778ef74a348dcd98b7d6bd6ff95eba451f780b2f958849"
	e := newEnv(t, master, nil)
	ring, err := e.ring.Load(t.Context())
	if err != nil || len(ring) != 1 || ring[0].ID != "k1" || hex.EncodeToString(ring[0].Secret) != derived {
		t.Fatalf("derived ring = %v, %v", ring, err)
	}
	sealed, _ := hex.DecodeString("12c404f461610d9eb1e41b24efc7bd032ccbc862518c34b7561b3d6472a6170448a08f17841b1a8448a360fcb3a82b91d74d52af8f8a0b9b6f1dd207")
	if err := e.st.AddStateKey(t.Context(), &store.StateKey{ID: "k1", Sealed: sealed, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ring, err = e.ring.Load(t.Context())
	if err != nil || len(ring) != 1 || hex.EncodeToString(ring[0].Secret) != derived {
		t.Fatalf("stored k1 = %v, %v", ring, err)
	}
}

// The Ring is safe for concurrent use.
func TestConcurrentLoad(t *testing.T) {
	e := newEnv(t, bytes.Repeat([]byte{1}, 32), nil)
	ctx := context.Background()
	if _, _, err := e.ring.Rotate(ctx, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for range 4 {
		go func() {
			_, err := e.ring.Load(ctx)
			if err == nil {
				err = e.ring.VerifyMaster(ctx)
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
