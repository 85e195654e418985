package keyring_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-elicit/elicit/reqstate/keyring"
)

// LoadOrCreateMasterKey creates a private key file once and reads it back;
// it refuses a file others can read, of the wrong size, or not a file.
func TestLoadOrCreateMasterKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "nested")
	k1, err := keyring.LoadOrCreateMasterKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != 32 {
		t.Fatalf("key is %d bytes", len(k1))
	}
	if bytes.Equal(k1, make([]byte, 32)) {
		t.Fatal("key is all zeros")
	}
	path := filepath.Join(dir, keyring.MasterKeyFile)
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s mode = %v, want %v", p, got, want)
			}
		}
	}
	k2, err := keyring.LoadOrCreateMasterKey(dir)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("reload = %x, %v; want the same key", k2, err)
	}
	other, err := keyring.LoadOrCreateMasterKey(filepath.Join(t.TempDir(), "other"))
	if err != nil || bytes.Equal(other, k1) {
		t.Fatalf("second data dir gave %x, %v; want a different key", other, err)
	}

	if _, err := keyring.LoadOrCreateMasterKey(""); err == nil {
		t.Error("empty dataDir accepted")
	}

	bad := func(name string, setup func(dir, path string)) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, keyring.MasterKeyFile)
			setup(dir, path)
			if k, err := keyring.LoadOrCreateMasterKey(dir); err == nil {
				t.Fatalf("accepted (key %x)", k)
			}
		})
	}
	if runtime.GOOS != "windows" {
		bad("group readable", func(_, p string) { writeFile(t, p, make([]byte, 32), 0o640) })
		bad("world readable", func(_, p string) { writeFile(t, p, make([]byte, 32), 0o604) })
	}
	bad("too short", func(_, p string) { writeFile(t, p, make([]byte, 31), 0o600) })
	bad("too long", func(_, p string) { writeFile(t, p, make([]byte, 33), 0o600) })
	bad("empty", func(_, p string) { writeFile(t, p, nil, 0o600) })
	bad("directory", func(_, p string) {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	})
}

func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
}

// Processes starting together on one data directory get one key.
func TestLoadOrCreateMasterKeyConcurrent(t *testing.T) {
	dir := t.TempDir()
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := keyring.LoadOrCreateMasterKey(dir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("concurrent first uses got different keys")
		}
	}
	// Only the key is left: no temporary file of a losing writer.
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 || ents[0].Name() != keyring.MasterKeyFile {
		t.Fatalf("data directory holds %v (%v), want only %s", ents, err, keyring.MasterKeyFile)
	}
}

// Errors name the file, never its bytes.
func TestMasterKeyErrorsShowNoKey(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode check on Windows")
	}
	dir := t.TempDir()
	secret := []byte("0123456789abcdef0123456789abcdef")
	writeFile(t, filepath.Join(dir, keyring.MasterKeyFile), secret, 0o644)
	_, err := keyring.LoadOrCreateMasterKey(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, keyring.MasterKeyFile)) || strings.Contains(err.Error(), string(secret)) {
		t.Fatalf("err = %v", err)
	}
}

// The check value is fixed per key (stores written by earlier versions
// keep matching), differs between keys, and is not the key.
func TestMasterKeyCheck(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	ca := keyring.MasterKeyCheck(a)
	if len(ca) != 32 || !bytes.Equal(ca, keyring.MasterKeyCheck(a)) || bytes.Equal(ca, keyring.MasterKeyCheck(b)) || bytes.Contains(ca, a[:8]) {
		t.Fatalf("check values: %x %x", ca, keyring.MasterKeyCheck(b))
	}
	// HMAC-SHA256(0x01*32, "elicit master key check v1"), as stored by
	// every elicitd so far.
	if got := hex.EncodeToString(ca); got != "7fb16f65895f67675c6993b38bd74bcaaa6bfba9d2fa224c1aa7098f71eb5851" {
		t.Fatalf("check value of 0x01*32 = %s", got)
	}
}
