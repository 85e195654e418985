package keyring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// A server instance sets up its Sealer from the store's ring and
// refreshes it; an operator rotates the key, and retires the old one
// once its states have expired.
func ExampleRing() {
	dir, _ := os.MkdirTemp("", "keyring-example")
	defer os.RemoveAll(dir)
	master, err := keyring.LoadOrCreateMasterKey(dir)
	if err != nil {
		panic(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "elicit.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	now := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	ring, err := keyring.New(st, master, &keyring.Options{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// The instance: refuse a master key the store was not set up with,
	// then seal with the ring's sealing key.
	if err := ring.VerifyMaster(ctx); err != nil {
		panic(err)
	}
	keys, _ := ring.Load(ctx)
	sealer, _ := reqstate.New(keys, &reqstate.Options{Now: func() time.Time { return now }})
	fmt.Println("sealing:", sealer.KeyIDs()[0])

	// The operator: a new key, sealing once every instance has read it.
	added, _, _ := ring.Rotate(ctx, 2*time.Minute)
	now = now.Add(2 * time.Minute)
	_ = ring.Refresh(ctx, sealer) // each instance, every 30s say
	fmt.Println("sealing the new key:", sealer.KeyIDs()[0] == added.ID)

	// k1's states are valid for reqstate.DefaultTTL after it stopped.
	_, err = ring.Retire(ctx, "k1", false)
	fmt.Println(err)
	now = now.Add(reqstate.DefaultTTL)
	_, err = ring.Retire(ctx, "k1", false)
	fmt.Println(err)
	// Output:
	// sealing: k1
	// sealing the new key: true
	// keyring: key "k1" cannot be retired: states_valid
	// <nil>
}
