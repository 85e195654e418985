package main

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcp-elicit/elicit/reqstate/keyring"
)

// The store keeps a check value of the master key (keyring.MasterKeyCheck),
// written by the first start or keys command that finds none: every later
// start and keys command compares it (keyring.Ring.VerifyMaster), so a
// wrong ELICIT_MASTER_KEY is refused before it seals anything and an
// instance with another master key cannot join a shared store.

// errWrongMasterKey is the refusal when the master key does not match the
// store's check value.
var errWrongMasterKey = fmt.Errorf("%s does not match the key this store was set up with (or --data's master.key, without it); nothing was changed", masterKeyEnv)

// verifyMaster is keyring.Ring.VerifyMaster, worded for the operator.
func (k *stateKeys) verifyMaster(ctx context.Context) error {
	return k.operatorError(k.keys.VerifyMaster(ctx))
}

// checkMasterKeyFile refuses an ELICIT_MASTER_KEY that differs from an
// existing master.key in --data when the store is SQLite there: the file
// is that store's key, so a different variable is a mistake.
func checkMasterKeyFile(cfg *config, master []byte) error {
	if cfg.masterKeyB64 == "" || cfg.storeURL != "" {
		return nil
	}
	p := filepath.Join(cfg.dataDir, keyring.MasterKeyFile)
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
