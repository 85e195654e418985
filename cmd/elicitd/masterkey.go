package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/store"
)

// The store keeps a check value of the master key (store.KeyRing
// MasterKeyCheck), written by the first start or keys command that finds
// none: every later start and keys command compares it, so a wrong
// ELICIT_MASTER_KEY is refused before it seals anything (a first rotation
// under a wrong key would otherwise store keys no instance can open) and
// an instance with another master key cannot join a shared store.

// masterKeyCheckText is what the check value authenticates; the "v1"
// leaves room for another scheme.
const masterKeyCheckText = "elicit master key check v1"

// errWrongMasterKey is the refusal when the master key does not match the
// store's check value.
var errWrongMasterKey = fmt.Errorf("%s does not match the key this store was set up with (or --data's master.key, without it); nothing was changed", masterKeyEnv)

// masterKeyCheck is the check value of master: HMAC-SHA256 of a fixed
// text. It reveals nothing usable about master.
func masterKeyCheck(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(masterKeyCheckText))
	return m.Sum(nil)
}

// verifyMaster compares k's master key with the store's check value,
// storing it when there is none yet, and sets k.verified when they match.
// When there is none and some stored key does not open, the master key may
// be the wrong one: nothing is stored, k.verified stays false and the
// callers' own checks refuse.
func (k *stateKeys) verifyMaster(ctx context.Context) error {
	want := masterKeyCheck(k.master)
	got, err := k.ring.MasterKeyCheck(ctx)
	if errors.Is(err, store.ErrNotFound) {
		stored, err := k.ring.StateKeys(ctx)
		if err != nil {
			return err
		}
		if len(k.unopened(stored)) > 0 {
			return nil
		}
		if got, err = k.ring.InitMasterKeyCheck(ctx, want); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return errWrongMasterKey
	}
	k.verified = true
	return nil
}

// checkMasterKeyFile refuses an ELICIT_MASTER_KEY that differs from an
// existing master.key in --data when the store is SQLite there: the file
// is that store's key, so a different variable is a mistake.
func checkMasterKeyFile(cfg *config, master []byte) error {
	if cfg.masterKeyB64 == "" || cfg.storeURL != "" {
		return nil
	}
	p := filepath.Join(cfg.dataDir, connect.MasterKeyFile)
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		onDisk, err := io.ReadAll(io.LimitReader(f, int64(len(master))+1))
		if err != nil {
			return err
		}
		if hmac.Equal(onDisk, master) {
			return nil
		}
	}
	return fmt.Errorf("%s differs from %s, this data directory's master key: unset %s, or use another --data; nothing was changed",
		masterKeyEnv, p, masterKeyEnv)
}
