package main

import (
	"context"
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

	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// The requestState key ring lives in the store, kept by reqstate/keyring
// (its package doc tells how keys are sealed, which key seals when, and
// why --activate-after must exceed every instance's --state-keys-refresh).
// stateKeys adds what is elicitd's own: ELICIT_STATE_KEYS, which when set
// overrides the store's ring (no refresh), the refresh loop, readiness,
// and the operator's wording of every refusal.

// stateKeys resolves and refreshes the requestState key ring.
type stateKeys struct {
	ring     store.KeyRing          // the store (readiness pings it)
	keys     *keyring.Ring          // nil when ring is
	override []reqstate.Key         // ELICIT_STATE_KEYS; nil = the store's ring
	lastErr  atomic.Pointer[string] // the last load's failure, "" when it worked
}

func newStateKeys(cfg *config, ring store.KeyRing, master []byte, now func() time.Time) (*stateKeys, error) {
	override, err := parseStateKeys(cfg.stateKeys)
	if err != nil {
		return nil, err
	}
	k := &stateKeys{ring: ring, override: override}
	if ring != nil {
		if k.keys, err = keyring.New(ring, master, &keyring.Options{Now: now}); err != nil {
			return nil, err
		}
	}
	ok := ""
	k.lastErr.Store(&ok)
	return k, nil
}

// errUnopened is the keys command's refusal when some stored keys do not
// open: they were sealed under another master key, or (when the store has
// no check to verify it) this master key is not the instances'.
func (k *stateKeys) errUnopened(ids []string) error {
	if k.keys.Verified() {
		return fmt.Errorf("state keys %s do not open with this master key, which matches the store's check: no instance can use them; remove each with elicitd keys retire ID. Nothing was changed",
			strings.Join(ids, ", "))
	}
	return fmt.Errorf("state keys %s do not open with this master key: is %s (or --data's master.key) the one the instances use? If it is, no instance can use them: remove each with elicitd keys retire ID --force. Nothing was changed",
		strings.Join(ids, ", "), masterKeyEnv)
}

// operatorError words the keyring's refusals for the operator; other
// errors pass unchanged.
func (k *stateKeys) operatorError(err error) error {
	var (
		oe *keyring.OpenError
		ue *keyring.UnopenedError
		re *keyring.RetireError
	)
	switch {
	case errors.As(err, &oe) && oe.Short:
		return fmt.Errorf("state key %q: sealed secret too short", oe.ID)
	case errors.As(err, &oe):
		return fmt.Errorf("state key %q does not open with this master key (another %s?)", oe.ID, masterKeyEnv)
	case errors.As(err, &ue):
		return k.errUnopened(ue.IDs)
	case errors.As(err, &re):
		return retireError(re)
	case errors.Is(err, keyring.ErrWrongMasterKey):
		return errWrongMasterKey
	}
	return err
}

// retireError words a refused retire.
func retireError(e *keyring.RetireError) error {
	id := e.ID
	switch e.Reason {
	case keyring.RetireUnverified:
		return fmt.Errorf("key %q does not open with this master key, and this store has no master-key check yet to tell whether %s is the right one: if it is, pass --force to remove the key", id, masterKeyEnv)
	case keyring.RetireDerived:
		return fmt.Errorf("key %s is derived from the master key and not stored: there is nothing to retire before a rotation (elicitd keys rotate)", id)
	case keyring.RetireUnknown:
		return fmt.Errorf("no key %q in the store's ring (see elicitd keys list)", id)
	case keyring.RetireSealing:
		return fmt.Errorf("key %q seals requestState now; rotate first, and retire it once the new key seals", id)
	case keyring.RetirePending:
		return fmt.Errorf("key %q is still to activate (it seals from %s): instances already holding it would start sealing with it; retire it once a newer key seals",
			id, e.At.UTC().Format(time.RFC3339))
	case keyring.RetireStatesValid:
		return fmt.Errorf("key %q sealed requestStates until less than %v ago, and they stay valid until %s: retire it then, or pass --force to refuse them now",
			id, reqstate.DefaultTTL, e.At.UTC().Format(time.RFC3339))
	case keyring.RetireChanged:
		return fmt.Errorf("key %q seals now or is still to activate (the ring changed meanwhile); see elicitd keys list", id)
	}
	return e
}

// load returns the ring to use now, the sealing key first.
func (k *stateKeys) load(ctx context.Context) ([]reqstate.Key, error) {
	if k.override != nil {
		return k.override, nil
	}
	keys, err := k.keys.Load(ctx)
	return keys, k.operatorError(err)
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
	ctxtime.Every(ctx, interval, func(ctx context.Context) {
		before := slices.Clone(sealer.KeyIDs())
		if err := k.refresh(ctx, sealer); err != nil {
			logger.Error("reloading the requestState key ring; keeping the current one", "err", err)
		} else if after := sealer.KeyIDs(); !slices.Equal(before, after) {
			logger.Info("requestState key ring changed", "sealing", after[0], "keys", len(after))
		}
	})
}

// rotate is keyring.Ring.Rotate, its refusals worded for the operator.
func (k *stateKeys) rotate(ctx context.Context, activateAfter time.Duration) (*store.StateKey, []*store.StateKey, error) {
	added, pending, err := k.keys.Rotate(ctx, activateAfter)
	return added, pending, k.operatorError(err)
}

// retire is keyring.Ring.Retire, returning a note for the operator.
func (k *stateKeys) retire(ctx context.Context, id string, force bool) (string, error) {
	removed, err := k.keys.Retire(ctx, id, force)
	switch {
	case err != nil:
		return "", k.operatorError(err)
	case removed:
		return fmt.Sprintf("removed %s: it does not open with this master key, so no instance could use it", id), nil
	}
	return fmt.Sprintf("retired %s; requestStates it sealed are now refused as invalid (clients start those requests again)", id), nil
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

// roleText is list's ROLE column.
var roleText = map[keyring.Role]string{
	keyring.RoleSeals:    "seals",
	keyring.RoleOpens:    "opens",
	keyring.RolePending:  "opens; pending (seals from its activation)",
	keyring.RoleUnopened: "DOES NOT OPEN with this master key",
}

// list writes the ring as a table: id, created, seals from, role. Never a
// secret. A key that does not open under this master key is marked, and
// makes list fail after writing the table.
func (k *stateKeys) list(ctx context.Context, w io.Writer) error {
	infos, err := k.keys.Keys(ctx)
	if err != nil {
		return err
	}
	var bad []string
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tSEALS FROM\tROLE")
	for _, ki := range infos {
		if ki.Derived {
			fmt.Fprintf(tw, "%s\t-\t-\tseals (derived from the master key; not stored until the first rotation)\n", ki.ID)
			continue
		}
		if ki.Role == keyring.RoleUnopened {
			bad = append(bad, ki.ID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ki.ID, ki.CreatedAt.UTC().Format(time.RFC3339), ki.Activation.UTC().Format(time.RFC3339), roleText[ki.Role])
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
		p := filepath.Join(cfg.dataDir, keyring.MasterKeyFile)
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

// keysCommand is a parsed elicitd keys command line.
type keysCommand struct {
	verb          string        // list, rotate or retire
	id            string        // retire's key id
	force         bool          // retire --force
	activateAfter time.Duration // rotate --activate-after
	rest          []string      // the settings' flags
}

// runKeys is elicitd keys list|rotate|retire ID.
func runKeys(args []string, stdout, stderr io.Writer) error {
	kc, err := parseKeysArgs(args, stdout, stderr)
	if kc == nil || err != nil {
		return err
	}
	cfg, err := loadConfigFor("elicitd keys", kc.rest, os.Getenv, stdout)
	if err != nil {
		return err
	}
	if kc.verb == "rotate" && kc.activateAfter <= cfg.keysRefresh {
		return fmt.Errorf("--activate-after %v must be longer than --state-keys-refresh %v (every instance's): instances would seal with a key others have not read yet", kc.activateAfter, cfg.keysRefresh)
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
	return kc.run(ctx, k, stdout, stderr)
}

// parseKeysArgs reads the verb and its flags; a nil command with a nil
// error means help was printed.
func parseKeysArgs(args []string, stdout, stderr io.Writer) (*keysCommand, error) {
	if len(args) == 0 {
		_, _ = io.WriteString(stderr, keysUsage)
		return nil, usageError{errors.New("keys: want list, rotate or retire ID")}
	}
	kc := &keysCommand{verb: args[0], rest: args[1:], activateAfter: defaultActivateAfter}
	var err error
	switch kc.verb {
	case "-h", "-help", "--help", "help":
		_, _ = io.WriteString(stdout, keysUsage) // asked for: stdout, so | less works
		return nil, nil
	case "retire":
		kc.rest, kc.force = takeBoolFlag(kc.rest, "force")
		if kc.id, kc.rest, err = takeKeyID(kc.rest); err != nil {
			return nil, err
		}
	case "rotate":
		v, r, ok, err := takeFlag(kc.rest, "activate-after")
		if err != nil {
			return nil, err
		}
		if kc.rest = r; ok {
			if kc.activateAfter, err = time.ParseDuration(v); err != nil || kc.activateAfter < 0 {
				return nil, usageError{fmt.Errorf("--activate-after: want a duration such as 2m, not %q", v)}
			}
		}
	case "list":
	default:
		_, _ = io.WriteString(stderr, keysUsage)
		return nil, usageError{fmt.Errorf("keys: unknown command %q; want list, rotate or retire ID", kc.verb)}
	}
	return kc, nil
}

// run performs the command on the checked ring.
func (kc *keysCommand) run(ctx context.Context, k *stateKeys, stdout, stderr io.Writer) error {
	switch kc.verb {
	case "list":
		return k.list(ctx, stdout)
	case "rotate":
		nk, pending, err := k.rotate(ctx, kc.activateAfter)
		if err != nil {
			return err
		}
		for _, p := range pending {
			fmt.Fprintf(stderr, "elicitd: warning: %s\n", pendingNote(p, nk))
		}
		fmt.Fprintf(stdout, "added %s; it seals from %s (--activate-after %v: every instance's --state-keys-refresh must be shorter)\n",
			nk.ID, nk.Activation().UTC().Format(time.RFC3339), kc.activateAfter)
		return nil
	}
	note, err := k.retire(ctx, kc.id, kc.force)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, note)
	return nil
}
