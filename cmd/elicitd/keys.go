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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// The requestState key ring lives in the store (store.KeyRing), each
// secret sealed under a key derived from the master key, so that every
// instance sharing the store and ELICIT_MASTER_KEY sees the same ring.
// Each key carries the time it starts to seal, set by "elicitd keys
// rotate" to now + --activate-after: which key seals is a function of the
// stored ring and the clock only (store.SealingKey), so every instance
// and the keys command agree whatever their --state-keys-refresh.
// Instances re-read the ring every --state-keys-refresh; --activate-after
// must exceed every instance's refresh, so that each one holds a key
// before any instance seals with it.
//
// Without stored keys the ring is one key, id k1, derived from the master
// key; the first rotation stores that key as k1 too (sealing from then),
// so states it sealed still open until k1 is retired. ELICIT_STATE_KEYS,
// when set, overrides all of this (no store ring, no refresh).

// derivedKeyID names the key derived from the master key.
const derivedKeyID = "k1"

// stateKeys resolves and refreshes the requestState key ring.
type stateKeys struct {
	ring     store.KeyRing
	master   []byte
	wrap     cipher.AEAD
	override []reqstate.Key // ELICIT_STATE_KEYS; nil = the store's ring
	now      func() time.Time
	lastErr  atomic.Pointer[string] // the last load's failure, "" when it worked
	// verified is set by verifyMaster: the master key matches the
	// store's check, so a stored key that does not open is garbage.
	verified bool
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
	k := &stateKeys{ring: ring, master: master, wrap: wrap, override: override, now: now}
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

// unopened returns the ids of the stored keys that do not open under this
// master key, in ring order.
func (k *stateKeys) unopened(stored []*store.StateKey) []string {
	var bad []string
	for _, sk := range stored {
		if _, err := k.open(sk); err != nil {
			bad = append(bad, sk.ID)
		}
	}
	return bad
}

// errUnopened is the keys command's refusal when some stored keys do not
// open: they were sealed under another master key, or (when the store has
// no check to verify it) this master key is not the instances'.
func (k *stateKeys) errUnopened(ids []string) error {
	if k.verified {
		return fmt.Errorf("state keys %s do not open with this master key, which matches the store's check: no instance can use them; remove each with elicitd keys retire ID. Nothing was changed",
			strings.Join(ids, ", "))
	}
	return fmt.Errorf("state keys %s do not open with this master key: is %s (or --data's master.key) the one the instances use? If it is, no instance can use them: remove each with elicitd keys retire ID --force. Nothing was changed",
		strings.Join(ids, ", "), masterKeyEnv)
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
	if i := store.SealingKey(stored, k.now()); i > 0 {
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

// rotate adds a new key that seals from now + activateAfter. On a ring
// still using the derived key, that key is stored first as k1, sealing
// from now. It refuses, writing nothing, when a stored key does not open.
// It also returns the keys that were still pending (activating after now)
// when it added the new one.
func (k *stateKeys) rotate(ctx context.Context, activateAfter time.Duration) (*store.StateKey, []*store.StateKey, error) {
	now := k.now()
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return nil, nil, err
	}
	if bad := k.unopened(stored); len(bad) > 0 {
		return nil, nil, k.errUnopened(bad)
	}
	if len(stored) == 0 {
		d, err := k.derived()
		if err != nil {
			return nil, nil, err
		}
		sealed, err := k.seal(d.ID, d.Secret)
		if err != nil {
			return nil, nil, err
		}
		if err := k.ring.AddStateKey(ctx, &store.StateKey{ID: d.ID, Sealed: sealed, CreatedAt: now}); err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, nil, err
		}
	}
	nk := reqstate.NewKey(newKeyID(now))
	sealed, err := k.seal(nk.ID, nk.Secret)
	if err != nil {
		return nil, nil, err
	}
	sk := &store.StateKey{ID: nk.ID, Sealed: sealed, CreatedAt: now, ActivatesAt: now.Add(activateAfter)}
	if err := k.ring.AddStateKey(ctx, sk); err != nil {
		return nil, nil, err
	}
	var pending []*store.StateKey
	for _, old := range stored {
		if old.Activation().After(now) {
			pending = append(pending, old)
		}
	}
	return sk, pending, nil
}

// retire removes a key that neither seals now nor is still to activate,
// and returns a note for the operator. A pending key is refused too:
// instances that read it before the retirement would start sealing with
// it at its activation time (until their next refresh), and instances
// that no longer hold it would refuse those states. So is a key that
// stopped sealing less than the states' lifetime ago (reqstate.DefaultTTL)
// unless force: states it sealed are still valid.
//
// A key that does not open under the master key is removed whatever its
// role, since no instance can use it (the repair of a rotation made under
// another master key), provided the master key matches the store's check
// value (k.verified) or force.
func (k *stateKeys) retire(ctx context.Context, id string, force bool) (string, error) {
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return "", err
	}
	bad := k.unopened(stored)
	if slices.Contains(bad, id) {
		if !k.verified && !force {
			return "", fmt.Errorf("key %q does not open with this master key, and this store has no master-key check yet to tell whether %s is the right one: if it is, pass --force to remove the key", id, masterKeyEnv)
		}
		if err := k.ring.RemoveStateKey(ctx, id); err != nil {
			return "", err
		}
		return fmt.Sprintf("removed %s: it does not open with this master key, so no instance could use it", id), nil
	}
	if len(bad) > 0 {
		return "", k.errUnopened(bad)
	}
	now := k.now()
	i := slices.IndexFunc(stored, func(sk *store.StateKey) bool { return sk.ID == id })
	switch {
	case i < 0 && len(stored) == 0 && id == derivedKeyID:
		return "", fmt.Errorf("key %s is derived from the master key and not stored: there is nothing to retire before a rotation (elicitd keys rotate)", id)
	case i < 0:
		return "", fmt.Errorf("no key %q in the store's ring (see elicitd keys list)", id)
	case i == store.SealingKey(stored, now):
		return "", fmt.Errorf("key %q seals requestState now; rotate first, and retire it once the new key seals", id)
	case stored[i].Activation().After(now):
		return "", fmt.Errorf("key %q is still to activate (it seals from %s): instances already holding it would start sealing with it; retire it once a newer key seals",
			id, stored[i].Activation().UTC().Format(time.RFC3339))
	}
	if until := stoppedSealing(stored, i, now).Add(reqstate.DefaultTTL); neverSealed(stored, i) {
		// A newer key activated no later than this one: no state was
		// sealed with it, so none becomes invalid.
	} else if now.Before(until) && !force {
		return "", fmt.Errorf("key %q sealed requestStates until less than %v ago, and they stay valid until %s: retire it then, or pass --force to refuse them now",
			id, reqstate.DefaultTTL, until.UTC().Format(time.RFC3339))
	}
	if err := k.ring.RetireStateKey(ctx, id, now); errors.Is(err, store.ErrConflict) {
		return "", fmt.Errorf("key %q seals now or is still to activate (the ring changed meanwhile); see elicitd keys list", id)
	} else if err != nil {
		return "", err
	}
	return fmt.Sprintf("retired %s; requestStates it sealed are now refused as invalid (clients start those requests again)", id), nil
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
// (instances hold the newer key before its activation; see rotate).
func neverSealed(stored []*store.StateKey, i int) bool {
	if i == len(stored)-1 {
		return false
	}
	a := stored[i].Activation()
	return slices.ContainsFunc(stored[:i], func(sk *store.StateKey) bool { return !sk.Activation().After(a) })
}

// pendingNote describes, for rotate's operator, what adding nk does to a
// key still pending: it never seals when nk activates no later.
func pendingNote(pending, nk *store.StateKey) string {
	from := pending.Activation().UTC().Format(time.RFC3339)
	if !nk.Activation().After(pending.Activation()) {
		return fmt.Sprintf("key %s was still pending (seals from %s): %s activates no later, so %s never seals; retire it with elicitd keys retire %s", pending.ID, from, nk.ID, pending.ID, pending.ID)
	}
	return fmt.Sprintf("key %s is still pending (seals from %s): it seals only until %s activates", pending.ID, from, nk.ID)
}

// list writes the ring as a table: id, created, seals from, role. Never a
// secret. A key that does not open under this master key is marked, and
// makes list fail after writing the table.
func (k *stateKeys) list(ctx context.Context, w io.Writer) error {
	stored, err := k.ring.StateKeys(ctx)
	if err != nil {
		return err
	}
	bad := k.unopened(stored)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tSEALS FROM\tROLE")
	if len(stored) == 0 {
		fmt.Fprintf(tw, "%s\t-\t-\tseals (derived from the master key; not stored until the first rotation)\n", derivedKeyID)
	}
	now := k.now()
	seal := store.SealingKey(stored, now)
	for i, sk := range stored {
		role := "opens"
		switch {
		case slices.Contains(bad, sk.ID):
			role = "DOES NOT OPEN with this master key"
		case i == seal:
			role = "seals"
		case sk.Activation().After(now):
			role = "opens; pending (seals from its activation)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sk.ID, sk.CreatedAt.UTC().Format(time.RFC3339), sk.Activation().UTC().Format(time.RFC3339), role)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return k.errUnopened(bad)
	}
	return nil
}

// defaultActivateAfter is rotate's default --activate-after: well above
// the default --state-keys-refresh (30s).
const defaultActivateAfter = 2 * time.Minute

// keysUsage is elicitd keys --help.
const keysUsage = `Usage:
  elicitd keys list [flags]                         list the store's requestState keys
  elicitd keys rotate [--activate-after D] [flags]  add a key that seals from now + D
  elicitd keys retire ID [--force] [flags]          remove a key that no longer seals
                                                    (flags before or after ID)

The keys command acts on an existing deployment: the --data directory (its
SQLite store, and master.key unless ELICIT_MASTER_KEY is set) or the
--store database must exist; it creates nothing but keys (and the store's
master-key check, if none is stored yet). A master key that does not match
the store's check is refused by every command (and by elicitd itself). Every
stored key must open with the master key, else rotate changes nothing and
list marks the keys and fails; retire then removes such a key whatever its
role, as no instance can use it (the repair of a rotation made under another
master key; --force when the store has no check yet to verify the key).

--activate-after D (default 2m) must be longer than every instance's
--state-keys-refresh (this command refuses D <= its own), with a margin for
clock skew between the instances, so that all instances hold the new key
before any seals with it. retire refuses the key that seals now, a key still to
activate, and, unless --force, a key that stopped sealing less than the
requestState lifetime (10m) ago: states it sealed are still valid. A key
that never sealed (a newer key activates no later) is retired at once; rotate
warns when it adds a key while another is pending. flags are elicitd's (elicitd --help): --data, --store, --config...

Exit status: 0 done, 1 failed (nothing changed), 2 usage error.
`

// usageError is a command line that cannot be parsed (unknown command or
// flag, missing or extra arguments); elicitd exits 2 for it, 1 for other
// errors.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// takeFlag removes --name VALUE or --name=VALUE (one or two dashes) from
// args, returning the value ("" and false when absent).
func takeFlag(args []string, name string) (string, []string, bool, error) {
	for i, a := range args {
		if a == "--" {
			break
		}
		bare := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if bare == name {
			if i+1 >= len(args) {
				return "", nil, false, usageError{fmt.Errorf("flag needs an argument: --%s", name)}
			}
			return args[i+1], append(slices.Clip(args[:i]), args[i+2:]...), true, nil
		}
		if v, ok := strings.CutPrefix(bare, name+"="); ok && bare != a {
			return v, append(slices.Clip(args[:i]), args[i+1:]...), true, nil
		}
	}
	return "", args, false, nil
}

// takeBoolFlag removes --name (one or two dashes) from args, reporting
// whether it was there.
func takeBoolFlag(args []string, name string) ([]string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "-"+name || a == "--"+name {
			return append(slices.Clip(args[:i]), args[i+1:]...), true
		}
	}
	return args, false
}

// takeKeyID removes retire's key id from args: the first argument that is
// neither a flag nor a flag's value, so flags may come before or after it.
// elicitd's settings tell which flags take a value.
func takeKeyID(args []string) (string, []string, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return args[i+1], append(slices.Clip(args[:i]), args[i+2:]...), nil
			}
			break
		}
		if a == "" || a[0] != '-' {
			return a, append(slices.Clip(args[:i]), args[i+1:]...), nil
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		if slices.ContainsFunc(settings, func(s setting) bool { return s.name == name && !s.isBool && !s.envOnly }) {
			i++ // its value
		}
	}
	return "", nil, usageError{errors.New("keys retire: want the key id: elicitd keys retire ID [--force] [flags]")}
}

// openExisting opens the deployment's master key and store for the keys
// command without creating either: with SQLite the data directory and
// its database must exist; with --store the schema must exist; without
// ELICIT_MASTER_KEY, --data's master.key must exist.
func openExisting(cfg *config) ([]byte, store.Store, error) {
	if cfg.masterKeyB64 == "" {
		p := filepath.Join(cfg.dataDir, connect.MasterKeyFile)
		if _, err := os.Stat(p); err != nil {
			return nil, nil, fmt.Errorf("no master key: %s is not set and %s cannot be read (%w); pass the instances' --data or set %s",
				masterKeyEnv, p, err, masterKeyEnv)
		}
	}
	if cfg.storeURL == "" {
		p := sqlitePath(cfg)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("no elicitd store at %s: --data must be an existing elicitd data directory (or pass --store)", p)
		}
	}
	master, err := masterKey(cfg)
	if err != nil {
		return nil, nil, err
	}
	if cfg.storeURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := postgres.OpenExisting(ctx, cfg.storeURL)
		if err != nil {
			return nil, nil, fmt.Errorf("opening the store: %w", err)
		}
		return master, st, nil
	}
	st, err := sqlite.Open(sqlitePath(cfg))
	return master, st, err
}

// runKeys is elicitd keys list|rotate|retire ID.
func runKeys(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		_, _ = io.WriteString(stderr, keysUsage)
		return usageError{errors.New("keys: want list, rotate or retire ID")}
	}
	verb, rest := args[0], args[1:]
	id, force := "", false
	switch verb {
	case "-h", "-help", "--help", "help":
		_, _ = io.WriteString(stdout, keysUsage) // asked for: stdout, so | less works
		return nil
	case "retire":
		rest, force = takeBoolFlag(rest, "force")
		var err error
		if id, rest, err = takeKeyID(rest); err != nil {
			return err
		}
	case "list", "rotate":
	default:
		_, _ = io.WriteString(stderr, keysUsage)
		return usageError{fmt.Errorf("keys: unknown command %q; want list, rotate or retire ID", verb)}
	}
	activateAfter := defaultActivateAfter
	if verb == "rotate" {
		v, r, ok, err := takeFlag(rest, "activate-after")
		if err != nil {
			return err
		}
		if rest = r; ok {
			if activateAfter, err = time.ParseDuration(v); err != nil || activateAfter < 0 {
				return usageError{fmt.Errorf("--activate-after: want a duration such as 2m, not %q", v)}
			}
		}
	}
	cfg, err := loadConfigFor("elicitd keys", rest, os.Getenv, stdout)
	if err != nil {
		return err
	}
	if verb == "rotate" && activateAfter <= cfg.keysRefresh {
		return fmt.Errorf("--activate-after %v must be longer than --state-keys-refresh %v (every instance's): instances would seal with a key others have not read yet", activateAfter, cfg.keysRefresh)
	}
	master, st, err := openExisting(cfg)
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
	if err := k.verifyMaster(ctx); err != nil {
		return err
	}
	if k.override != nil {
		fmt.Fprintf(stderr, "elicitd: note: %s is set here; instances that have it set use it, not the store's ring\n", stateKeysEnv)
	}
	switch verb {
	case "list":
		return k.list(ctx, stdout)
	case "rotate":
		nk, pending, err := k.rotate(ctx, activateAfter)
		if err != nil {
			return err
		}
		for _, p := range pending {
			fmt.Fprintf(stderr, "elicitd: warning: %s\n", pendingNote(p, nk))
		}
		fmt.Fprintf(stdout, "added %s; it seals from %s (--activate-after %v: every instance's --state-keys-refresh must be shorter)\n",
			nk.ID, nk.Activation().UTC().Format(time.RFC3339), activateAfter)
		return nil
	}
	note, err := k.retire(ctx, id, force)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, note)
	return nil
}
