package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// keyRingTests are the KeyRing part of the contract.
var keyRingTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"KeyRingOrderAndRoundTrip", testKeyRingOrder},
	{"KeyRingRetire", testKeyRingRetire},
	{"KeyRingInvalid", testKeyRingInvalid},
	{"KeyRingConcurrentRotateRetire", testKeyRingConcurrent},
	{"KeyRingActivation", testKeyRingActivation},
	{"KeyRingRemove", testKeyRingRemove},
	{"MasterKeyCheck", testMasterKeyCheck},
}

func stateKey(id string, at time.Time) *store.StateKey {
	return &store.StateKey{ID: id, Sealed: []byte("sealed:" + id), CreatedAt: at}
}

func keyIDs(t *testing.T, s store.Store) string {
	t.Helper()
	keys, err := s.StateKeys(context.Background())
	if err != nil {
		t.Fatalf("StateKeys: %v", err)
	}
	if keys == nil {
		t.Fatal("StateKeys returned nil, want an empty slice")
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return strings.Join(ids, ",")
}

// The newest key is the one added last, even when clocks say otherwise.
func testKeyRingOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	if ids := keyIDs(t, s); ids != "" {
		t.Fatalf("empty ring = %q", ids)
	}
	for i, id := range []string{"b", "a", "c"} {
		if err := s.AddStateKey(ctx, stateKey(id, base.Add(-time.Duration(i)*time.Hour))); err != nil {
			t.Fatalf("AddStateKey(%s): %v", id, err)
		}
	}
	if ids := keyIDs(t, s); ids != "c,a,b" {
		t.Fatalf("ring = %q, want c,a,b (newest first)", ids)
	}
	keys, _ := s.StateKeys(ctx)
	if !bytes.Equal(keys[2].Sealed, []byte("sealed:b")) || !keys[2].CreatedAt.Truncate(time.Second).Equal(base.Truncate(time.Second)) ||
		!keys[2].ActivatesAt.Equal(keys[2].CreatedAt) {
		t.Fatalf("key b read back as %+v", keys[2])
	}
	if err := s.AddStateKey(ctx, stateKey("a", base)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("repeated id: %v, want ErrConflict", err)
	}
}

func testKeyRingRetire(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.RetireStateKey(ctx, "x", base); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retire on an empty ring: %v", err)
	}
	for _, id := range []string{"old", "new"} {
		if err := s.AddStateKey(ctx, stateKey(id, base)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RetireStateKey(ctx, "new", base); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("retiring the sealing key: %v, want ErrConflict", err)
	}
	if err := s.RetireStateKey(ctx, "nope", base); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retiring an unknown key: %v, want ErrNotFound", err)
	}
	if err := s.RetireStateKey(ctx, "old", base); err != nil {
		t.Fatal(err)
	}
	if ids := keyIDs(t, s); ids != "new" {
		t.Fatalf("ring after retiring old = %q", ids)
	}
	// A retired id is free again, and comes back as the newest.
	if err := s.AddStateKey(ctx, stateKey("old", base)); err != nil {
		t.Fatal(err)
	}
	if ids := keyIDs(t, s); ids != "old,new" {
		t.Fatalf("ring = %q", ids)
	}
}

func testKeyRingInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, k := range []*store.StateKey{nil, {ID: "", Sealed: []byte("x")}, {ID: strings.Repeat("k", store.MaxStateKeyIDLen+1), Sealed: []byte("x")}, {ID: "k"}} {
		if err := s.AddStateKey(ctx, k); err == nil {
			t.Errorf("AddStateKey(%+v) accepted", k)
		}
	}
	if ids := keyIDs(t, s); ids != "" {
		t.Fatalf("ring = %q after refused adds", ids)
	}
}

// Rotations and retirements racing never leave the ring without a key,
// and never remove the key that seals.
func testKeyRingConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.AddStateKey(ctx, stateKey("k0", base)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= 8; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := s.AddStateKey(ctx, stateKey(fmt.Sprintf("k%d", i), base)); err != nil {
				t.Errorf("AddStateKey: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			err := s.RetireStateKey(ctx, fmt.Sprintf("k%d", i-1), base)
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("RetireStateKey: %v", err)
			}
		}()
	}
	wg.Wait()
	keys, err := s.StateKeys(ctx)
	if err != nil || len(keys) == 0 {
		t.Fatalf("ring after the race: %d keys, %v", len(keys), err)
	}
	if err := s.RetireStateKey(ctx, keys[0].ID, base); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the newest key %s could be retired: %v", keys[0].ID, err)
	}
}

// A key seals from its stored activation time: before it, it only opens,
// and it can be retired neither while pending nor while it seals.
func testKeyRingActivation(t *testing.T, s store.Store) {
	ctx := context.Background()
	pending := stateKey("pending", base.Add(-time.Hour))
	pending.ActivatesAt = base.Add(2 * time.Minute)
	for _, k := range []*store.StateKey{stateKey("old", base.Add(-2*time.Hour)), stateKey("current", base.Add(-time.Hour)), pending} {
		if err := s.AddStateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.StateKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !keys[0].ActivatesAt.Equal(pending.ActivatesAt) || !keys[1].ActivatesAt.Equal(keys[1].CreatedAt) {
		t.Fatalf("activation read back as %v and %v", keys[0].ActivatesAt, keys[1].ActivatesAt)
	}
	steps := []struct {
		at      time.Time
		sealing string
		retire  string
		wantErr error
	}{
		{base, "current", "pending", store.ErrConflict}, // still to activate
		{base, "current", "current", store.ErrConflict}, // seals now
		{base.Add(2*time.Minute - time.Nanosecond), "current", "pending", store.ErrConflict},
		{base.Add(2 * time.Minute), "pending", "pending", store.ErrConflict}, // seals now
		{base.Add(2 * time.Minute), "pending", "current", nil},
		{base.Add(2 * time.Minute), "pending", "old", nil},
		{base.Add(2 * time.Minute), "pending", "old", store.ErrNotFound},
	}
	for _, st := range steps {
		keys, err := s.StateKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i := store.SealingKey(keys, st.at); i < 0 || keys[i].ID != st.sealing {
			t.Fatalf("at %v the sealing key is #%d, want %s", st.at, i, st.sealing)
		}
		if err := s.RetireStateKey(ctx, st.retire, st.at); !errors.Is(err, st.wantErr) {
			t.Fatalf("at %v retiring %s: %v, want %v", st.at, st.retire, err, st.wantErr)
		}
	}
	if ids := keyIDs(t, s); ids != "pending" {
		t.Fatalf("ring = %q", ids)
	}
}

// RemoveStateKey removes any key, the sealing and pending ones too.
func testKeyRingRemove(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.RemoveStateKey(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("remove on an empty ring: %v, want ErrNotFound", err)
	}
	pending := stateKey("pending", base)
	pending.ActivatesAt = base.Add(time.Hour)
	for _, k := range []*store.StateKey{stateKey("sealing", base), pending} {
		if err := s.AddStateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"pending", "sealing"} {
		if err := s.RemoveStateKey(ctx, id); err != nil {
			t.Fatalf("RemoveStateKey(%s): %v", id, err)
		}
	}
	if ids := keyIDs(t, s); ids != "" {
		t.Fatalf("ring after removing both = %q", ids)
	}
}

// The first check stored stays: a second InitMasterKeyCheck returns it.
func testMasterKeyCheck(t *testing.T, s store.Store) {
	ctx := context.Background()
	if v, err := s.MasterKeyCheck(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("MasterKeyCheck on a new store = %x, %v; want ErrNotFound", v, err)
	}
	if _, err := s.InitMasterKeyCheck(ctx, nil); err == nil {
		t.Fatal("InitMasterKeyCheck(empty) accepted")
	}
	first, second := []byte("check one"), []byte("check two")
	var wg sync.WaitGroup
	got := make([][]byte, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := first
			if i%2 == 1 {
				c = second
			}
			v, err := s.InitMasterKeyCheck(ctx, c)
			if err != nil {
				t.Errorf("InitMasterKeyCheck: %v", err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	stored, err := s.MasterKeyCheck(ctx)
	if err != nil || (!bytes.Equal(stored, first) && !bytes.Equal(stored, second)) {
		t.Fatalf("MasterKeyCheck = %q, %v", stored, err)
	}
	for i, v := range got {
		if !bytes.Equal(v, stored) {
			t.Errorf("caller %d got %q, stored is %q", i, v, stored)
		}
	}
	if v, err := s.InitMasterKeyCheck(ctx, []byte("later")); err != nil || !bytes.Equal(v, stored) {
		t.Fatalf("a later InitMasterKeyCheck = %q, %v; want the stored %q", v, err, stored)
	}
}
