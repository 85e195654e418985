// Package keyring keeps a requestState key ring (reqstate.Key) in a
// shared store, so that every server instance using the store and the
// same master key seals and opens requestState with the same keys, and
// keys can be rotated and retired while instances run: a requestState
// (basic/patterns/mrtr.mdx §Server Requirements, RS-S-03) sealed by one
// instance then opens on whichever instance the retry reaches.
//
// The public surface:
//
//   - the master key: LoadOrCreateMasterKey (MasterKeySize bytes in
//     MasterKeyFile of a data directory), MasterKeyCheck and
//     Ring.VerifyMaster (refuse a master key the store was not set up
//     with, ErrWrongMasterKey);
//   - Ring, made by New with Options: Load the keys for a reqstate.Sealer
//     (the sealing key first), Refresh a running Sealer, Rotate (add a key
//     that seals from a later time), Retire (remove a key whose states can
//     no longer be valid), Keys (a KeyInfo with the Role of each key, for
//     an operator);
//   - the errors those return: *OpenError, *UnopenedError, *RetireError.
//
// Each stored key's secret is sealed (AES-256-GCM) under a key derived
// from the master key, bound to the key's id; the store never sees a
// secret in the clear. Which key seals at a time t is a function of the
// stored ring alone (store.SealingKey): each key carries the time it
// starts to seal, so instances that re-read the ring at different moments
// agree. A rotation must give every instance time to read the new key
// before it seals: its activation delay must exceed every instance's
// refresh interval.
//
// While no key is stored, the ring is one key, DerivedKeyID, derived from
// the master key; the first Rotate stores that key too (sealing until the
// new key activates), so the states it sealed still open.
package keyring

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-elicit/elicit/internal/aead"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store"
)

// DerivedKeyID names the key derived from the master key: the ring's one
// key until the first rotation.
const DerivedKeyID = "k1"

// The HKDF-SHA256 info strings of the keys derived from the master key.
// Changing one makes every stored key, or every state the derived key
// sealed, unreadable.
const (
	wrapInfo    = "elicit state-key wrap v1"
	derivedInfo = "elicit requestState v1"
)

// Options tune a Ring. The zero value is valid.
type Options struct {
	// Now is the clock; nil means time.Now. It decides which key seals.
	Now func() time.Time
	// StateTTL is how long the states a key sealed stay valid (the
	// Sealer's TTL): Retire refuses, without force, a key that stopped
	// sealing less than StateTTL ago. 0 means reqstate.DefaultTTL.
	StateTTL time.Duration
}

// Ring is the requestState key ring of one store, seen with one master
// key. It is safe for concurrent use.
type Ring struct {
	store    store.KeyRing
	master   []byte
	wrap     *aead.AEAD
	now      func() time.Time
	ttl      time.Duration
	verified atomic.Bool
}

// New returns the Ring kept in st, whose secrets are sealed under master
// (MasterKeySize bytes). It reads nothing yet. It fails on a nil st or a
// master key of another size.
func New(st store.KeyRing, master []byte, opts *Options) (*Ring, error) {
	if st == nil {
		return nil, errors.New("keyring: nil store")
	}
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("keyring: master key must be %d bytes, got %d", MasterKeySize, len(master))
	}
	wrapKey, err := hkdf.Key(sha256.New, master, nil, wrapInfo, aead.KeySize)
	if err != nil {
		return nil, err
	}
	wrap, err := aead.New(wrapKey)
	if err != nil {
		return nil, err
	}
	r := &Ring{store: st, master: slices.Clone(master), wrap: wrap, now: time.Now, ttl: reqstate.DefaultTTL}
	if opts != nil {
		if opts.Now != nil {
			r.now = opts.Now
		}
		if opts.StateTTL > 0 {
			r.ttl = opts.StateTTL
		}
	}
	return r, nil
}

// OpenError reports a stored key whose sealed secret does not open under
// the Ring's master key: it was sealed under another master key, or the
// stored bytes are damaged.
type OpenError struct {
	ID string
	// Short is set when the sealed secret is too short to be one (damaged
	// rather than sealed under another key).
	Short bool
}

func (e *OpenError) Error() string {
	if e.Short {
		return fmt.Sprintf("keyring: state key %q: sealed secret too short", e.ID)
	}
	return fmt.Sprintf("keyring: state key %q does not open with this master key", e.ID)
}

// UnopenedError is the refusal of Rotate and Retire when some stored keys
// do not open under the master key: changing the ring then could leave
// it without a key the instances can use. Nothing was changed.
type UnopenedError struct {
	// IDs are the keys that do not open, in ring order (newest first).
	IDs []string
	// Verified is set when the master key matches the store's check
	// (VerifyMaster), so the keys themselves are at fault: no instance can
	// use them. Unset, the master key may be the wrong one.
	Verified bool
}

func (e *UnopenedError) Error() string {
	return fmt.Sprintf("keyring: state keys %s do not open with this master key", strings.Join(e.IDs, ", "))
}

// sealAD binds a sealed secret to its key id, so that a sealed secret
// copied to another id does not open.
func sealAD(id string) []byte { return []byte("elicit state key " + id) }

// seal encrypts a key's secret for the store.
func (r *Ring) seal(id string, secret []byte) []byte {
	return r.wrap.Seal(nil, secret, sealAD(id))
}

// open returns the secret of sk, or an *OpenError.
func (r *Ring) open(sk *store.StateKey) ([]byte, error) {
	if len(sk.Sealed) < aead.NonceSize {
		return nil, &OpenError{ID: sk.ID, Short: true}
	}
	secret, err := r.wrap.Open(sk.Sealed, sealAD(sk.ID))
	if err != nil {
		return nil, &OpenError{ID: sk.ID}
	}
	return secret, nil
}

// derived returns the key derived from the master key.
func (r *Ring) derived() (reqstate.Key, error) {
	secret, err := hkdf.Key(sha256.New, r.master, nil, derivedInfo, aead.KeySize)
	return reqstate.Key{ID: DerivedKeyID, Secret: secret}, err
}

// unopened returns the ids of the stored keys that do not open, in ring
// order.
func (r *Ring) unopened(stored []*store.StateKey) []string {
	var bad []string
	for _, sk := range stored {
		if _, err := r.open(sk); err != nil {
			bad = append(bad, sk.ID)
		}
	}
	return bad
}

// VerifyMaster compares the master key with the check value stored with
// the ring (MasterKeyCheck), storing it first when there is none yet, and
// returns ErrWrongMasterKey when they differ. Call it before the first
// Load or Rotate, so that a wrong master key is refused before it seals
// anything: a first rotation under a wrong key would store keys no
// instance can open, and an instance with another master key cannot join
// a shared store.
//
// When no check is stored and some stored key does not open (a ring from
// before the store kept checks, rotated under another master key),
// nothing is stored, it returns nil and Verified stays false: the master
// key cannot be told right or wrong.
func (r *Ring) VerifyMaster(ctx context.Context) error {
	want := MasterKeyCheck(r.master)
	got, err := r.store.MasterKeyCheck(ctx)
	if errors.Is(err, store.ErrNotFound) {
		stored, err := r.store.StateKeys(ctx)
		if err != nil {
			return err
		}
		if len(r.unopened(stored)) > 0 {
			return nil
		}
		if got, err = r.store.InitMasterKeyCheck(ctx, want); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return ErrWrongMasterKey
	}
	r.verified.Store(true)
	return nil
}

// Verified reports whether VerifyMaster found the master key matching
// the store's check.
func (r *Ring) Verified() bool { return r.verified.Load() }

// Load returns the keys to give a reqstate.Sealer now, the sealing key
// first: the derived key while none is stored. A stored key that does not
// open gives an *OpenError.
func (r *Ring) Load(ctx context.Context) ([]reqstate.Key, error) {
	stored, err := r.store.StateKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		d, err := r.derived()
		return []reqstate.Key{d}, err
	}
	keys := make([]reqstate.Key, 0, len(stored))
	for _, sk := range stored {
		secret, err := r.open(sk)
		if err != nil {
			return nil, err
		}
		keys = append(keys, reqstate.Key{ID: sk.ID, Secret: secret})
	}
	if i := store.SealingKey(stored, r.now()); i > 0 {
		keys[0], keys[i] = keys[i], keys[0]
	}
	return keys, nil
}

// Refresh loads the ring into sealer (Load, then sealer.SetKeys). On
// error sealer keeps its keys. Call it more often than any rotation's
// activation delay.
func (r *Ring) Refresh(ctx context.Context, sealer *reqstate.Sealer) error {
	keys, err := r.Load(ctx)
	if err != nil {
		return err
	}
	return sealer.SetKeys(keys)
}

// newKeyID returns a fresh key id: the UTC time and 4 random hex digits.
func newKeyID(now time.Time) string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return "k" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// Rotate adds a new key, with a fresh random secret, that seals from now
// + activateAfter; activateAfter must exceed the refresh interval of every
// instance, with a margin for their clocks' skew, so that all hold the
// key before any seals with it. On a ring still using the derived key,
// that key is stored first as DerivedKeyID, sealing from now. It returns
// the new key and the keys that were still pending (activating after now)
// when it was added: a pending key that activates no earlier than the new
// one will never seal.
//
// It refuses with an *UnopenedError, writing nothing, when a stored key
// does not open.
func (r *Ring) Rotate(ctx context.Context, activateAfter time.Duration) (added *store.StateKey, pending []*store.StateKey, err error) {
	now := r.now()
	stored, err := r.store.StateKeys(ctx)
	if err != nil {
		return nil, nil, err
	}
	if bad := r.unopened(stored); len(bad) > 0 {
		return nil, nil, &UnopenedError{IDs: bad, Verified: r.Verified()}
	}
	if len(stored) == 0 {
		d, err := r.derived()
		if err != nil {
			return nil, nil, err
		}
		err = r.store.AddStateKey(ctx, &store.StateKey{ID: d.ID, Sealed: r.seal(d.ID, d.Secret), CreatedAt: now})
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, nil, err
		}
	}
	nk := reqstate.NewKey(newKeyID(now))
	added = &store.StateKey{ID: nk.ID, Sealed: r.seal(nk.ID, nk.Secret), CreatedAt: now, ActivatesAt: now.Add(activateAfter)}
	if err := r.store.AddStateKey(ctx, added); err != nil {
		return nil, nil, err
	}
	for _, old := range stored {
		if old.Activation().After(now) {
			pending = append(pending, old)
		}
	}
	return added, pending, nil
}

// RetireReason says why Retire refused a key.
type RetireReason string

// Reasons of a *RetireError.
const (
	// RetireUnverified: the key does not open, but the master key cannot
	// be verified (no check stored); retire it with force if the master
	// key is the right one.
	RetireUnverified RetireReason = "unverified"
	// RetireDerived: the key is DerivedKeyID and not stored yet.
	RetireDerived RetireReason = "derived"
	// RetireUnknown: no such key in the ring.
	RetireUnknown RetireReason = "unknown"
	// RetireSealing: the key seals now.
	RetireSealing RetireReason = "sealing"
	// RetirePending: the key is still to activate (At): instances that
	// read it before the retirement would seal with it from then on.
	RetirePending RetireReason = "pending"
	// RetireStatesValid: states the key sealed stay valid until At.
	RetireStatesValid RetireReason = "states_valid"
	// RetireChanged: the ring changed meanwhile, and the key now seals or
	// is still to activate.
	RetireChanged RetireReason = "changed"
)

// RetireError is Retire's refusal of one key. Nothing was changed.
type RetireError struct {
	ID     string
	Reason RetireReason
	// At is the key's activation for RetirePending, and when its last
	// states expire for RetireStatesValid; zero otherwise.
	At time.Time
}

func (e *RetireError) Error() string {
	return fmt.Sprintf("keyring: key %q cannot be retired: %s", e.ID, e.Reason)
}

// Retire removes the key id from the ring, so that the states it sealed
// stop opening once instances refresh; it reports whether the key was
// removed as one that does not open (rather than retired).
//
// It refuses with a *RetireError the key that seals now, a key still to
// activate, and, unless force, a key that stopped sealing less than
// Options.StateTTL ago (its states are still valid). A key that never
// sealed (a newer key activates no later) is retired at once. A key that
// does not open under the master key is removed whatever its role, since
// no instance can use it (the repair of a rotation made under another
// master key), provided the master key is Verified or force. When another
// stored key does not open, it refuses with an *UnopenedError.
func (r *Ring) Retire(ctx context.Context, id string, force bool) (removed bool, err error) {
	stored, err := r.store.StateKeys(ctx)
	if err != nil {
		return false, err
	}
	bad := r.unopened(stored)
	if slices.Contains(bad, id) {
		if !r.Verified() && !force {
			return false, &RetireError{ID: id, Reason: RetireUnverified}
		}
		if err := r.store.RemoveStateKey(ctx, id); err != nil {
			return false, err
		}
		return true, nil
	}
	if len(bad) > 0 {
		return false, &UnopenedError{IDs: bad, Verified: r.Verified()}
	}
	now := r.now()
	i := slices.IndexFunc(stored, func(sk *store.StateKey) bool { return sk.ID == id })
	switch {
	case i < 0 && len(stored) == 0 && id == DerivedKeyID:
		return false, &RetireError{ID: id, Reason: RetireDerived}
	case i < 0:
		return false, &RetireError{ID: id, Reason: RetireUnknown}
	case i == store.SealingKey(stored, now):
		return false, &RetireError{ID: id, Reason: RetireSealing}
	case stored[i].Activation().After(now):
		return false, &RetireError{ID: id, Reason: RetirePending, At: stored[i].Activation()}
	}
	// A key that never sealed leaves no state behind to wait for.
	if until := stoppedSealing(stored, i, now).Add(r.ttl); !neverSealed(stored, i) && now.Before(until) && !force {
		return false, &RetireError{ID: id, Reason: RetireStatesValid, At: until}
	}
	if err := r.store.RetireStateKey(ctx, id, now); errors.Is(err, store.ErrConflict) {
		return false, &RetireError{ID: id, Reason: RetireChanged}
	} else if err != nil {
		return false, err
	}
	return false, nil
}

// stoppedSealing returns when stored[i] stopped sealing: the earliest
// activation, not after now, of a newer key.
func stoppedSealing(stored []*store.StateKey, i int, now time.Time) time.Time {
	var t time.Time
	for _, sk := range stored[:i] {
		if a := sk.Activation(); !a.After(now) && (t.IsZero() || a.Before(t)) {
			t = a
		}
	}
	return t
}

// neverSealed reports whether stored[i] never sealed: it is not the
// oldest key (which seals while no key is active) and a newer key
// activates no later than it does, so no instance ever sealed with it
// (instances hold the newer key before its activation; see Rotate).
func neverSealed(stored []*store.StateKey, i int) bool {
	if i == len(stored)-1 {
		return false
	}
	a := stored[i].Activation()
	return slices.ContainsFunc(stored[:i], func(sk *store.StateKey) bool { return !sk.Activation().After(a) })
}

// Role is what a key does in the ring now.
type Role string

// Roles of a KeyInfo.
const (
	RoleSeals    Role = "seals"    // seals new states (and opens)
	RoleOpens    Role = "opens"    // opens the states it sealed
	RolePending  Role = "pending"  // opens; seals from its activation
	RoleUnopened Role = "unopened" // does not open under this master key
)

// KeyInfo describes one key of the ring for an operator. It holds no
// secret.
type KeyInfo struct {
	ID string
	// Derived is set for DerivedKeyID while no key is stored: it is not
	// stored, and CreatedAt and Activation are zero.
	Derived bool
	// CreatedAt is when the key was added; Activation when it starts (or
	// started) to seal.
	CreatedAt, Activation time.Time
	Role                  Role
}

// Keys describes the ring as it is now, newest key first: the derived key
// alone while none is stored.
func (r *Ring) Keys(ctx context.Context) ([]KeyInfo, error) {
	stored, err := r.store.StateKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		return []KeyInfo{{ID: DerivedKeyID, Derived: true, Role: RoleSeals}}, nil
	}
	bad := r.unopened(stored)
	now := r.now()
	seal := store.SealingKey(stored, now)
	infos := make([]KeyInfo, len(stored))
	for i, sk := range stored {
		role := RoleOpens
		switch {
		case slices.Contains(bad, sk.ID):
			role = RoleUnopened
		case i == seal:
			role = RoleSeals
		case sk.Activation().After(now):
			role = RolePending
		}
		infos[i] = KeyInfo{ID: sk.ID, CreatedAt: sk.CreatedAt, Activation: sk.Activation(), Role: role}
	}
	return infos, nil
}
