// Package aead is the module's one authenticated-encryption construction:
// AES-256-GCM with a fresh random 96-bit nonce per message, written before
// the ciphertext. reqstate seals requestState tokens with it, connect's
// vault the secrets it stores, and reqstate/keyring the state keys it
// keeps in the store.
//
// A sealed message is
//
//	nonce[NonceSize] | ciphertext | tag[16]
//
// and the additional data given to Seal must be given again to Open: it
// binds the message to its place (its owner, its key id, its header), so
// a message copied elsewhere does not open.
package aead

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

const (
	// KeySize is the key length, in bytes (AES-256).
	KeySize = 32
	// NonceSize is the length of the nonce that starts a sealed message.
	NonceSize = 12
	// Overhead is how much longer a sealed message is than its plaintext:
	// the nonce and the 16-byte tag.
	Overhead = NonceSize + 16
)

// ErrOpen is Open's one error: the message is too short, was sealed under
// another key or with other additional data, or was changed.
var ErrOpen = errors.New("aead: message does not open")

// AEAD seals and opens messages under one key. It is safe for concurrent
// use.
type AEAD struct{ gcm cipher.AEAD }

// New returns an AEAD for key, which must be KeySize bytes. It keeps no
// reference to key.
func New(key []byte) (*AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("aead: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key) // copies the key schedule out of key
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &AEAD{gcm: gcm}, nil
}

// Seal encrypts plaintext bound to ad under a fresh random nonce and
// appends nonce|ciphertext|tag to dst, returning the extended slice.
// dst and plaintext must not overlap.
func (a *AEAD) Seal(dst, plaintext, ad []byte) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, NonceSize)...)
	nonce := dst[n : n+NonceSize]
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails; it aborts the program instead
	return a.gcm.Seal(dst, nonce, plaintext, ad)
}

// Open reverses Seal: it returns the plaintext of msg (nonce|ciphertext|tag)
// if it was sealed under this key with the same ad, else ErrOpen.
func (a *AEAD) Open(msg, ad []byte) ([]byte, error) {
	if len(msg) < Overhead {
		return nil, ErrOpen
	}
	pt, err := a.gcm.Open(nil, msg[:NonceSize], msg[NonceSize:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}
