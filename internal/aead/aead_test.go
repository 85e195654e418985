package aead

import (
	"bytes"
	"errors"
	"testing"
)

func mustNew(t testing.TB, b byte) *AEAD {
	t.Helper()
	a, err := New(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestNewKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New with a %d-byte key: no error", n)
		}
	}
}

// A message opens only under its key and additional data, unchanged.
func TestSealOpen(t *testing.T) {
	a, other := mustNew(t, 1), mustNew(t, 2)
	ad := []byte("alice\x00billing_key")
	msg := a.Seal([]byte("hdr"), []byte("sk_live_123"), ad)
	if !bytes.HasPrefix(msg, []byte("hdr")) || len(msg) != 3+len("sk_live_123")+Overhead {
		t.Fatalf("Seal appended %d bytes after the prefix", len(msg)-3)
	}
	sealed := msg[3:]
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 1
		return c
	}
	tests := []struct {
		name string
		a    *AEAD
		msg  []byte
		ad   []byte
		want string // "" = ErrOpen
	}{
		{"authentic", a, sealed, ad, "sk_live_123"},
		{"other key", other, sealed, ad, ""},
		{"other ad", a, sealed, []byte("bob\x00billing_key"), ""},
		{"no ad", a, sealed, nil, ""},
		{"nonce changed", a, flip(0), ad, ""},
		{"ciphertext changed", a, flip(NonceSize), ad, ""},
		{"tag changed", a, flip(len(sealed) - 1), ad, ""},
		{"truncated", a, sealed[:len(sealed)-1], ad, ""},
		{"shorter than the overhead", a, sealed[:Overhead-1], ad, ""},
		{"empty", a, nil, ad, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, err := tt.a.Open(tt.msg, tt.ad)
			if tt.want == "" {
				if !errors.Is(err, ErrOpen) || pt != nil {
					t.Fatalf("Open = %q, %v; want ErrOpen", pt, err)
				}
				return
			}
			if err != nil || string(pt) != tt.want {
				t.Fatalf("Open = %q, %v; want %q", pt, err, tt.want)
			}
		})
	}
}

// Two seals of one plaintext differ: each has its own nonce.
func TestSealFreshNonce(t *testing.T) {
	a := mustNew(t, 1)
	x, y := a.Seal(nil, []byte("same"), nil), a.Seal(nil, []byte("same"), nil)
	if bytes.Equal(x[:NonceSize], y[:NonceSize]) || bytes.Equal(x, y) {
		t.Fatal("two seals share a nonce")
	}
}

// Open never panics, and only what Seal made under the key opens.
func FuzzOpen(f *testing.F) {
	a := mustNew(f, 1)
	f.Add(a.Seal(nil, []byte("secret"), []byte("ad")), []byte("ad"))
	f.Add(a.Seal(nil, nil, nil), []byte(nil))
	f.Add([]byte{}, []byte("ad"))
	f.Add(make([]byte, Overhead), []byte{})
	f.Fuzz(func(t *testing.T, msg, ad []byte) {
		pt, err := a.Open(msg, ad)
		if err != nil {
			if !errors.Is(err, ErrOpen) || pt != nil {
				t.Fatalf("Open = %q, %v", pt, err)
			}
			return
		}
		if len(msg) != len(pt)+Overhead {
			t.Fatalf("opened %d bytes from a %d-byte message", len(pt), len(msg))
		}
	})
}
