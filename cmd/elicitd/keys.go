package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store"
)

// The requestState key ring lives in the store (store.KeyRing), each
// secret sealed under a key derived from the master key, so that every
// instance sharing the store and ELICIT_MASTER_KEY sees the same ring.
// Instances re-read it every --state-keys-refresh. A key added less than
// that long ago only opens: by the time it seals, every instance has read
// it and can open what it seals. The sealing key is the newest key at
// least that old, or, when every key is younger, the oldest one.
//
// Without stored keys the ring is one key, id k1, derived from the master
// key; the first rotation stores that key as k1 too, so states it sealed
// still open until k1 is retired. ELICIT_STATE_KEYS, when set, overrides
// all of this (no store ring, no refresh).

// derivedKeyID names the key derived from the master key.
const derivedKeyID = "k1"

// stateKeys resolves and refreshes the requestState key ring.
type stateKeys struct {
	ring       store.KeyRing
	master     []byte
	wrap       cipher.AEAD
	override   []reqstate.Key // ELICIT_STATE_KEYS; nil = the store's ring
	activation time.Duration  // a key this young only opens
	now        func() time.Time
	lastErr    atomic.Pointer[string] // the last load's failure, "" when it worked
}

func newStateKeys(cfg *config, ring store.KeyRing, master []byte, now func() time.Time) (*stateKeys, error) {
	override, err := parseStateKeys(cfg.stateKeys)
	if err != nil {
		return nil, err
	}
	wrapKey, err := hkdf.Key(sha256.New, master, nil, "elicit state-key wrap v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(wrapKey)
	if err != nil {
		return nil, err
	}
	wrap, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &stateKeys{ring: ring, master: master, wrap: wrap, override: override, activation: cfg.keysRefresh, now: now}
	ok := ""
	k.lastErr.Store(&ok)
	return k, nil
}

// seal encrypts a key's secret for the store; the id is bound as AAD, so a
// sealed secret copied to another id does not open.
func (k *stateKeys) seal(id string, secret []byte) ([]byte, error) {
	nonce := make([]byte, k.wrap.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return k.wrap.Seal(nonce, nonce, secret, []byte("elicit state key "+id)), nil
}

func (k *stateKeys) open(sk *store.StateKey) ([]byte, error) {
	n := k.wrap.NonceSize()
	if len(sk.Sealed) < n {
		return nil, fmt.Errorf("state key %q: sealed secret too short", sk.ID)
	}
	secret, err := k.wrap.Open(nil, sk.Sealed[:n], sk.Sealed[n:], []byte("elicit state key "+sk.ID))
	if err != nil {
		return nil, fmt.Errorf("state key %q does not open with this master key (another ELICIT_MASTER_KEY?)", sk.ID)
	}
	return secret, nil
}

func (k *stateKeys) derived() (reqstate.Key, error) {
	secret, err := hkdf.Key(sha256.New, k.master, nil, "elicit requestState v1", 32)
	return reqstate.Key{ID: derivedKeyID, Secret: secret}, err
}

// sealingIndex returns the index in keys (newest first) of the key that
// seals at now: the newest at least activation old, else the oldest.
func (k *stateKeys) sealingIndex(keys []*store.StateKey, now time.Time) int {
	for i, sk := range keys {
		if !sk.CreatedAt.After(now.Add(-k.activation)) {
			return i
		}
	}
	return len(keys) - 1
}

// load returns the ring to use now, the sealing key first.
func (k *stateKeys) load(ctx context.Context) ([]reqstate.Key, error) {
	if k.override != nil {
		return k.override, nil
	}
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		d, err := k.derived()
		return []reqstate.Key{d}, err
	}
	keys := make([]reqstate.Key, 0, len(stored))
	for _, sk := range stored {
		secret, err := k.open(sk)
		if err != nil {
			return nil, err
		}
		keys = append(keys, reqstate.Key{ID: sk.ID, Secret: secret})
	}
	if i := k.sealingIndex(stored, k.now()); i > 0 {
		keys[0], keys[i] = keys[i], keys[0]
	}
	return keys, nil
}

// refresh loads the ring into sealer; a failure keeps the current ring
// (and makes /readyz fail until a load works again).
func (k *stateKeys) refresh(ctx context.Context, sealer *reqstate.Sealer) error {
	keys, err := k.load(ctx)
	if err == nil {
		err = sealer.SetKeys(keys)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	k.lastErr.Store(&msg)
	return err
}

// refreshLoop refreshes sealer every interval until ctx ends.
func (k *stateKeys) refreshLoop(ctx context.Context, sealer *reqstate.Sealer, interval time.Duration, logger *slog.Logger) {
	if k.override != nil || interval <= 0 {
		return
	}
	every(ctx, interval, func(ctx context.Context) {
		before := slices.Clone(sealer.KeyIDs())
		if err := k.refresh(ctx, sealer); err != nil {
			logger.Error("reloading the requestState key ring; keeping the current one", "err", err)
		} else if after := sealer.KeyIDs(); !slices.Equal(before, after) {
			logger.Info("requestState key ring changed", "sealing", after[0], "keys", len(after))
		}
	})
}

// newKeyID returns a fresh key id: the UTC time and 4 random hex digits.
func newKeyID(now time.Time) string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return "k" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// rotate adds a new key, which seals once it is activation old. On a ring
// still using the derived key, that key is stored first as k1.
func (k *stateKeys) rotate(ctx context.Context) (string, error) {
	now := k.now()
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return "", err
	}
	if len(stored) == 0 {
		d, err := k.derived()
		if err != nil {
			return "", err
		}
		sealed, err := k.seal(d.ID, d.Secret)
		if err != nil {
			return "", err
		}
		if err := k.ring.AddStateKey(ctx, &store.StateKey{ID: d.ID, Sealed: sealed, CreatedAt: now}); err != nil && !errors.Is(err, store.ErrConflict) {
			return "", err
		}
	}
	nk := reqstate.NewKey(newKeyID(now))
	sealed, err := k.seal(nk.ID, nk.Secret)
	if err != nil {
		return "", err
	}
	return nk.ID, k.ring.AddStateKey(ctx, &store.StateKey{ID: nk.ID, Sealed: sealed, CreatedAt: now})
}

// retire removes a key that does not seal now and is not the newest.
func (k *stateKeys) retire(ctx context.Context, id string) error {
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(stored, func(sk *store.StateKey) bool { return sk.ID == id })
	switch {
	case i < 0:
		return fmt.Errorf("no key %q in the store's ring (see elicitd keys list)", id)
	case i == k.sealingIndex(stored, k.now()):
		return fmt.Errorf("key %q seals requestState now; rotate first, and retire it once the new key seals", id)
	}
	if err := k.ring.RetireStateKey(ctx, id); errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("key %q is the newest key; rotate first", id)
	} else if err != nil {
		return err
	}
	return nil
}

// list writes the ring as a table: id, created, role. Never a secret.
func (k *stateKeys) list(ctx context.Context, w io.Writer) error {
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tROLE")
	if len(stored) == 0 {
		fmt.Fprintf(tw, "%s\t-\tseals (derived from the master key; not stored until the first rotation)\n", derivedKeyID)
	}
	now := k.now()
	seal := k.sealingIndex(stored, now)
	for i, sk := range stored {
		role := "opens"
		switch {
		case i == seal:
			role = "seals"
		case i < seal:
			role = "opens; seals from " + sk.CreatedAt.Add(k.activation).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", sk.ID, sk.CreatedAt.UTC().Format(time.RFC3339), role)
	}
	return tw.Flush()
}

// runKeys is elicitd keys list|rotate|retire ID.
func runKeys(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("keys: want list, rotate or retire ID (see elicitd --help)")
	}
	verb, rest := args[0], args[1:]
	id := ""
	if verb == "retire" {
		if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
			return errors.New("keys retire: want the key id first: elicitd keys retire ID [flags]")
		}
		id, rest = rest[0], rest[1:]
	} else if verb != "list" && verb != "rotate" {
		return fmt.Errorf("keys: unknown command %q; want list, rotate or retire ID", verb)
	}
	cfg, err := parseFlags(rest, stderr)
	if err != nil {
		return err
	}
	master, err := masterKey(cfg)
	if err != nil {
		return err
	}
	st, err := openStore(cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := newStateKeys(cfg, st, master, time.Now)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if k.override != nil {
		fmt.Fprintf(stderr, "elicitd: note: %s is set here; instances that have it set use it, not the store's ring\n", stateKeysEnv)
	}
	switch verb {
	case "list":
		return k.list(ctx, stdout)
	case "rotate":
		newID, err := k.rotate(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s; it seals from %s, once every instance has reloaded the ring (--state-keys-refresh %v)\n",
			newID, k.now().Add(k.activation).UTC().Format(time.RFC3339), k.activation)
		return nil
	}
	if err := k.retire(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "retired %s; requestStates it sealed are now refused as invalid (clients start those requests again)\n", id)
	return nil
}
