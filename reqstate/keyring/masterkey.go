package keyring

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// MasterKeySize is the length of a master key, in bytes.
const MasterKeySize = 32

// MasterKeyFile is the name of the master key file in a data directory
// (LoadOrCreateMasterKey).
const MasterKeyFile = "master.key"

// LoadOrCreateMasterKey returns the MasterKeySize-byte master key stored
// in dir/MasterKeyFile, creating dir (mode 0700) and the file
// (MasterKeySize random bytes, mode 0600) on first use; when another
// process creates the file at the same time, both use the one written
// first. It refuses an existing file that is not a regular file, is not
// exactly MasterKeySize bytes, or grants any permission to group or
// others (on Windows the mode check is skipped): a readable key would
// expose every secret sealed under it. Losing the file makes those
// secrets unreadable.
//
// Its errors start with "master key" and name the file, never its
// contents.
func LoadOrCreateMasterKey(dir string) ([]byte, error) {
	if dir == "" {
		return nil, errors.New("master key: empty data directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	path := filepath.Join(dir, MasterKeyFile)
	key, err := readMasterKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, MasterKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails; it aborts the program instead
	// The key is written whole to a temporary file and then linked into
	// place: a concurrent first use never reads a half-written (empty)
	// key file, and link, unlike rename, fails if another process put its
	// key there first, in which case theirs is used.
	tmp, err := os.CreateTemp(dir, MasterKeyFile+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(key)
	if werr == nil {
		werr = tmp.Chmod(0o600) // CreateTemp makes 0600 already; said for clarity on other systems
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("master key: write %s: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return readMasterKey(path)
	} else if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return key, nil
}

// readMasterKey reads an existing key file; fs.ErrNotExist (unwrapped
// text) when there is none.
func readMasterKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("master key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("master key %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("master key %s has mode %v; it must not be accessible to group or others (chmod 600)", path, fi.Mode().Perm())
	}
	if fi.Size() != MasterKeySize {
		return nil, fmt.Errorf("master key %s is %d bytes, want %d", path, fi.Size(), MasterKeySize)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	if len(key) != MasterKeySize {
		return nil, fmt.Errorf("master key %s is %d bytes, want %d", path, len(key), MasterKeySize)
	}
	return key, nil
}

// masterKeyCheckText is what the check value authenticates; the "v1"
// leaves room for another scheme.
const masterKeyCheckText = "elicit master key check v1"

// MasterKeyCheck returns the check value of master that a store keeps
// (store.KeyRing MasterKeyCheck): HMAC-SHA256 of a fixed text under
// master, 32 bytes. It tells whether a master key is the one the store
// was set up with, and reveals nothing usable about it.
func MasterKeyCheck(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(masterKeyCheckText))
	return m.Sum(nil)
}

// ErrWrongMasterKey is Ring.VerifyMaster's refusal: the master key does
// not match the check value stored with the ring.
var ErrWrongMasterKey = errors.New("keyring: the master key does not match the store's master-key check")
