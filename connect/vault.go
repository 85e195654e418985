package connect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/mcp-elicit/elicit/internal/aead"
)

// MasterKeyFile is the name of the vault key file inside the data directory.
const MasterKeyFile = "master.key"

// masterKeyLen is the AES-256 key size in bytes.
const masterKeyLen = 32

var errDecrypt = errors.New("connect: stored secret does not decrypt (wrong master key or tampered data)")

func newAEAD(key []byte) (*aead.AEAD, error) {
	if len(key) != aead.KeySize {
		return nil, fmt.Errorf("connect: master key must be %d bytes, got %d", aead.KeySize, len(key))
	}
	return aead.New(key)
}

// aad binds a sealed secret to its owner and name, so a blob copied to
// another user's or another name's row does not decrypt.
func aad(principal, name string) []byte {
	return []byte(principal + "\x00" + name)
}

// seal encrypts principal's secret called name (see sealWith).
func (s *Service) seal(principal, name string, plaintext []byte) ([]byte, error) {
	return s.sealWith(aad(principal, name), plaintext)
}

// open reverses seal; any malformed or foreign blob gives errDecrypt.
func (s *Service) open(principal, name string, blob []byte) ([]byte, error) {
	return s.openWith(aad(principal, name), blob)
}

// sealWith encrypts plaintext with AES-256-GCM (internal/aead) bound to
// the additional data ad, and returns nonce||ciphertext. It cannot fail
// today; the error keeps its callers ready for a sealing that can.
func (s *Service) sealWith(ad, plaintext []byte) ([]byte, error) {
	return s.aead.Seal(nil, plaintext, ad), nil
}

// openWith reverses sealWith; any malformed or foreign blob gives
// errDecrypt.
func (s *Service) openWith(ad, blob []byte) ([]byte, error) {
	pt, err := s.aead.Open(blob, ad)
	if err != nil {
		return nil, errDecrypt
	}
	return pt, nil
}

// LoadOrCreateMasterKey returns the 32-byte vault key stored in
// dataDir/master.key, creating dataDir (mode 0700) and the file (32 random
// bytes, mode 0600) on first use. It refuses an existing file that is not a
// regular file, is not exactly 32 bytes, or grants any permission to group
// or others (on Windows the mode check is skipped): a readable key would
// expose every stored secret. Losing the file makes stored secrets
// unreadable.
func LoadOrCreateMasterKey(dataDir string) ([]byte, error) {
	if dataDir == "" {
		return nil, errors.New("connect: master key: empty data directory")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("connect: master key: %w", err)
	}
	path := filepath.Join(dataDir, MasterKeyFile)
	key, err := readMasterKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key, err = randomBytes(masterKeyLen)
	if err != nil {
		return nil, err
	}
	// O_EXCL: if another process created the file meanwhile, use theirs.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readMasterKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("connect: master key: %w", err)
	}
	_, werr := f.Write(key)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return nil, fmt.Errorf("connect: master key: write %s: %w", path, werr)
	}
	return key, nil
}

func readMasterKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("connect: master key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("connect: master key %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("connect: master key %s has mode %v; it must not be accessible to group or others (chmod 600)", path, fi.Mode().Perm())
	}
	if fi.Size() != masterKeyLen {
		return nil, fmt.Errorf("connect: master key %s is %d bytes, want %d", path, fi.Size(), masterKeyLen)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("connect: master key: %w", err)
	}
	if len(key) != masterKeyLen {
		return nil, fmt.Errorf("connect: master key %s is %d bytes, want %d", path, len(key), masterKeyLen)
	}
	return key, nil
}
