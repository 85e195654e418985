package connect

import (
	"errors"
	"fmt"

	"github.com/mcp-elicit/elicit/internal/aead"
)

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
