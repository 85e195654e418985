package main

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store/postgres/pgtest"

	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/reqstate"
)

func stateKeyB64() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// TestStateKeyRotationPostgres: a requestState sealed by an instance whose
// ring is [old] opens on one with [new, old]; one with [new] (old
// retired) refuses it with the opaque -32602; what [new, old] seals opens
// on [new].
func TestStateKeyRotationPostgres(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	oldKey, newKey := "old:"+stateKeyB64(), "new:"+stateKeyB64()
	e, proxy := newPGCluster(t, dsn, oldKey, newKey+","+oldKey, newKey)
	const A, B, C = 0, 1, 2

	// Sealed with old on A, opened on B.
	proxy.force(A)
	r := e.export(1, "alice", "2026-Q2", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	proxy.force(B)
	e.export(2, "alice", "2026-Q2", "sales", retryWith(reports.KeyOptions, accepted, r.state()), metaURL).wantComplete(t, false, "")

	// Sealed with old on A, refused on C.
	proxy.force(A)
	r = e.export(3, "alice", "2026-Q3", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	proxy.force(C)
	refused := e.export(4, "alice", "2026-Q3", "sales", retryWith(reports.KeyOptions, accepted, r.state()), metaURL)
	refused.wantError(t, 400, -32602)
	if refused.Error.Message != "invalid or expired requestState" || len(refused.Error.Data) != 0 && string(refused.Error.Data) != "null" {
		t.Fatalf("refusal is not opaque: %s", refused.Raw)
	}

	// Sealed with new on B, opened on C.
	proxy.force(B)
	r = e.export(5, "alice", "2026-Q4", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	proxy.force(C)
	e.export(6, "alice", "2026-Q4", "sales", retryWith(reports.KeyOptions, accepted, r.state()), metaURL).wantComplete(t, false, "")

	if got := pgDrafts(t, dsn, "alice"); len(got) != 2 {
		t.Fatalf("drafts = %q, want 2 (Q2 and Q4; the refused Q3 wrote nothing)", got)
	}
}

func TestStateKeysEnv(t *testing.T) {
	k1, k2 := stateKeyB64(), stateKeyB64()
	keys, err := parseStateKeys(" new:" + k1 + " , old:" + k2)
	if err != nil || len(keys) != 2 || keys[0].ID != "new" || keys[1].ID != "old" || base64.StdEncoding.EncodeToString(keys[0].Secret) != k1 {
		t.Fatalf("parseStateKeys = %v, %v", keys, err)
	}
	if keys, err := parseStateKeys(""); err != nil || keys != nil {
		t.Fatalf("parseStateKeys(\"\") = %v, %v", keys, err)
	}
	for _, bad := range []string{"nokey", ":" + k1, "a:notbase64!", "a:" + base64.StdEncoding.EncodeToString(make([]byte, 16)), "a:" + k1 + ",a:" + k2, "a:" + k1 + ","} {
		if _, err := parseStateKeys(bad); err == nil || !strings.Contains(err.Error(), "ELICIT_STATE_KEYS") {
			t.Errorf("parseStateKeys(%q) err = %v, want one naming ELICIT_STATE_KEYS", bad, err)
		}
	}
	t.Setenv("ELICIT_STATE_KEYS", "bad")
	if _, err := parseFlags(nil, &syncBuffer{}); err == nil || !strings.Contains(err.Error(), "ELICIT_STATE_KEYS") {
		t.Fatalf("parseFlags with a bad ELICIT_STATE_KEYS: %v", err)
	}
	t.Setenv("ELICIT_STATE_KEYS", "k9:"+k1)
	cfg, err := parseFlags(nil, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := newStateKeys(cfg, nil, make([]byte, 32), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := k.load(t.Context()) // the override never reads the store
	if err != nil || len(ring) != 1 || ring[0].ID != "k9" {
		t.Fatalf("ring with ELICIT_STATE_KEYS = %v, %v", ring, err)
	}
}

// TestStoreKeyRingPostgres: two instances on one PostgreSQL share the
// store's key ring. A state sealed with the derived key before a rotation
// opens after it on the other instance; once both have re-read the ring
// they seal with the new key and open each other's states; after k1 is
// retired and the ring re-read, a state k1 sealed is refused.
func TestStoreKeyRingPostgres(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	e, proxy := newPGCluster(t, dsn, "", "")
	const A, B = 0, 1
	ctx := t.Context()
	refreshAll := func() {
		t.Helper()
		for _, a := range proxy.apps {
			if err := a.keys.refresh(ctx, a.sealer); err != nil {
				t.Fatal(err)
			}
		}
	}

	proxy.force(A)
	before := e.export(1, "alice", "2026-Q1", "sales", "", metaURL)
	before.input(t, reports.KeyOptions)
	derived, err := proxy.apps[A].keys.load(ctx) // k1 alone, from the master key
	if err != nil || len(derived) != 1 {
		t.Fatalf("ring before the rotation = %v, %v", derived, err)
	}
	// No activation delay: the new key seals as soon as it is read.
	added, _, err := proxy.apps[A].keys.rotate(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	newID := added.ID
	refreshAll()
	for i, a := range proxy.apps {
		if ids := a.sealer.KeyIDs(); len(ids) != 2 || ids[0] != newID {
			t.Fatalf("instance %d ring = %v, want %s sealing", i, ids, newID)
		}
	}
	proxy.force(B)
	e.export(2, "alice", "2026-Q1", "sales", retryWith(reports.KeyOptions, accepted, before.state()), metaURL).wantComplete(t, false, "")

	proxy.force(B)
	r := e.export(3, "alice", "2026-Q2", "sales", "", metaURL)
	r.input(t, reports.KeyOptions)
	proxy.force(A)
	e.export(4, "alice", "2026-Q2", "sales", retryWith(reports.KeyOptions, accepted, r.state()), metaURL).wantComplete(t, false, "")

	// A k1 state made before the rotation, opened after k1 is retired.
	oldSealer, _ := reqstate.New(derived, nil)
	if _, err := proxy.apps[B].keys.retire(ctx, "k1", true); err != nil {
		t.Fatal(err)
	}
	refreshAll()
	if ids := proxy.apps[A].sealer.KeyIDs(); strings.Join(ids, ",") != newID {
		t.Fatalf("ring after retiring k1 = %v", ids)
	}
	stale, _ := oldSealer.Seal(&reqstate.Claims{Binding: reqstate.Binding{Principal: "alice", Method: "tools/call", Name: reports.ToolExport}})
	proxy.force(A)
	e.export(5, "alice", "2026-Q3", "sales", retryWith(reports.KeyOptions, accepted, stale), metaURL).wantError(t, 400, -32602)
}
