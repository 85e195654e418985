package keyring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mcp-elicit/elicit/store"
)

// discard is a store.KeyRing for tests that never reach the store.
type discard struct{ store.KeyRing }

// open, the decoder of what the store holds, never panics, reports
// every failure as an *OpenError for the key, and opens only a secret
// sealed under this master key for this id.
func FuzzOpen(f *testing.F) {
	r, err := New(discard{}, bytes.Repeat([]byte{1}, MasterKeySize), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("k1", r.seal("k1", bytes.Repeat([]byte{2}, 32)))
	f.Add("k2", r.seal("k1", bytes.Repeat([]byte{2}, 32)))
	f.Add("k1", []byte{})
	f.Add("k1", make([]byte, 12))
	f.Fuzz(func(t *testing.T, id string, sealed []byte) {
		secret, err := r.open(&store.StateKey{ID: id, Sealed: sealed})
		var oe *OpenError
		if err != nil {
			if !errors.As(err, &oe) || oe.ID != id || secret != nil {
				t.Fatalf("open = %x, %v", secret, err)
			}
			return
		}
		if again, err := r.open(&store.StateKey{ID: id + "x", Sealed: sealed}); err == nil {
			t.Fatalf("a secret sealed for %q opens for %q too: %x", id, id+"x", again)
		}
	})
}
