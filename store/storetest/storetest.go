// Package storetest is the contract suite every store.Store implementation
// must pass: flows, secrets and sessions, and the ledger (operations
// written in one transaction with their effects, replays that never run
// an effect twice, versioned records), and the requestState key ring. An implementation's test calls Run with a function that opens a
// fresh, empty store:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "db.sqlite"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Run closes each store it opened when the subtest ends.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// Run runs the contract subtests against stores returned by open. Each
// subtest opens its own store, so open must return an empty one every time.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"FlowRoundTrip", testFlowRoundTrip},
		{"FlowNotFound", testFlowNotFound},
		{"FlowDuplicateID", testFlowDuplicateID},
		{"CompleteHappyPath", testCompleteHappyPath},
		{"CompleteUnknownFlow", testCompleteUnknownFlow},
		{"CompleteOtherPrincipal", testCompleteOtherPrincipal},
		{"CompleteExpired", testCompleteExpired},
		{"CompleteTwice", testCompleteTwice},
		{"SecretReplace", testSecretReplace},
		{"ReplaceSecretCompareAndSwap", testReplaceSecretCAS},
		{"SecretIsolation", testSecretIsolation},
		{"SecretNotFound", testSecretNotFound},
		{"Sessions", testSessions},
		{"SessionDuplicateID", testSessionDuplicateID},
		{"DeleteExpired", testDeleteExpired},
		{"ConcurrentComplete", testConcurrentComplete},
		{"PendingFlow", testPendingFlow},
		{"CloseFlow", testCloseFlow},
		{"CloseFlowRace", testCloseFlowRace},
		{"CloseFlowAndRecord", testCloseFlowAndRecord},
		{"CloseFlowAndRecordRace", testCloseFlowAndRecordRace},
	}
	tests = append(tests, ledgerTests...)
	tests = append(tests, keyRingTests...)
	tests = append(tests, retentionTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// base is a fixed instant with a sub-second part, so implementations that
// keep only seconds are still compared fairly.
var base = time.Date(2026, 7, 28, 12, 0, 0, 123456789, time.UTC)

func flowID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func sessionID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func newFlow(t *testing.T, principal, purpose string, created time.Time, ttl time.Duration) *store.Flow {
	t.Helper()
	return &store.Flow{
		ID:        flowID(t),
		Principal: principal,
		Purpose:   purpose,
		Status:    store.FlowPending,
		CreatedAt: created,
		ExpiresAt: created.Add(ttl),
	}
}

func mustCreateFlow(t *testing.T, s store.Store, f *store.Flow) {
	t.Helper()
	if err := s.CreateFlow(context.Background(), f); err != nil {
		t.Fatalf("CreateFlow(%s): %v", f.ID, err)
	}
}

func mustGetFlow(t *testing.T, s store.Store, id string) *store.Flow {
	t.Helper()
	f, err := s.GetFlow(context.Background(), id)
	if err != nil {
		t.Fatalf("GetFlow(%s): %v", id, err)
	}
	if f == nil {
		t.Fatalf("GetFlow(%s) returned nil, nil", id)
	}
	return f
}

// sameSecond compares instants at the contract's precision (one second),
// ignoring location.
func sameSecond(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.Unix() == b.Unix()
}

func checkFlow(t *testing.T, got, want *store.Flow) {
	t.Helper()
	if got.ID != want.ID || got.Principal != want.Principal || got.Purpose != want.Purpose || got.Status != want.Status {
		t.Errorf("flow = {%q %q %q %q}, want {%q %q %q %q}",
			got.ID, got.Principal, got.Purpose, got.Status, want.ID, want.Principal, want.Purpose, want.Status)
	}
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"ExpiresAt", got.ExpiresAt, want.ExpiresAt},
		{"CompletedAt", got.CompletedAt, want.CompletedAt},
	} {
		if !sameSecond(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func wantNoSecret(t *testing.T, s store.Store, principal, name string) {
	t.Helper()
	b, err := s.GetSecret(context.Background(), principal, name)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSecret(%q, %q) = %q, %v; want ErrNotFound", principal, name, b, err)
	}
	if has, err := s.HasSecret(context.Background(), principal, name); has || err != nil {
		t.Fatalf("HasSecret(%q, %q) = %v, %v; want false, nil", principal, name, has, err)
	}
}

func wantSecret(t *testing.T, s store.Store, principal, name string, want []byte) {
	t.Helper()
	b, err := s.GetSecret(context.Background(), principal, name)
	if err != nil {
		t.Fatalf("GetSecret(%q, %q): %v", principal, name, err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("GetSecret(%q, %q) = %q, want %q", principal, name, b, want)
	}
	if has, err := s.HasSecret(context.Background(), principal, name); !has || err != nil {
		t.Fatalf("HasSecret(%q, %q) = %v, %v; want true, nil", principal, name, has, err)
	}
}

func testFlowRoundTrip(t *testing.T, s store.Store) {
	cases := []struct {
		name      string
		principal string
		purpose   string
		created   time.Time
		ttl       time.Duration
	}{
		{"utc", "alice", "billing_key", base, 15 * time.Minute},
		{"non-utc location", "bob.smith-2", "github_token", base.In(time.FixedZone("X", -7*3600)), time.Hour},
		{"whole seconds", "c", "k", time.Unix(1_900_000_000, 0), time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlow(t, tc.principal, tc.purpose, tc.created, tc.ttl)
			mustCreateFlow(t, s, f)
			got := mustGetFlow(t, s, f.ID)
			checkFlow(t, got, f)
			if !got.CompletedAt.IsZero() {
				t.Errorf("pending flow has CompletedAt %v", got.CompletedAt)
			}
		})
	}
}

func testFlowNotFound(t *testing.T, s store.Store) {
	for _, id := range []string{flowID(t), "", "not-hex"} {
		f, err := s.GetFlow(context.Background(), id)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetFlow(%q) = %v, %v; want ErrNotFound", id, f, err)
		}
	}
}

func testFlowDuplicateID(t *testing.T, s store.Store) {
	f := newFlow(t, "alice", "billing_key", base, time.Hour)
	mustCreateFlow(t, s, f)
	dup := *f
	dup.Principal = "mallory"
	wantErr(t, "CreateFlow(duplicate)", s.CreateFlow(context.Background(), &dup), store.ErrConflict)
	if got := mustGetFlow(t, s, f.ID); got.Principal != "alice" {
		t.Fatalf("duplicate create overwrote principal: %q", got.Principal)
	}
}

func testCompleteHappyPath(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
	mustCreateFlow(t, s, f)
	now := base.Add(time.Minute)
	blob := []byte("sealed\x00blob\xff")
	if err := s.CompleteFlow(ctx, f.ID, "alice", blob, now); err != nil {
		t.Fatalf("CompleteFlow: %v", err)
	}
	got := mustGetFlow(t, s, f.ID)
	want := *f
	want.Status = store.FlowComplete
	want.CompletedAt = now
	checkFlow(t, got, &want)
	wantSecret(t, s, "alice", "billing_key", blob)
}

func testCompleteUnknownFlow(t *testing.T, s store.Store) {
	err := s.CompleteFlow(context.Background(), flowID(t), "alice", []byte("x"), base)
	wantErr(t, "CompleteFlow(unknown)", err, store.ErrNotFound)
	wantNoSecret(t, s, "alice", "billing_key")
}

func testCompleteOtherPrincipal(t *testing.T, s store.Store) {
	f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
	mustCreateFlow(t, s, f)
	err := s.CompleteFlow(context.Background(), f.ID, "bob", []byte("bob's key"), base.Add(time.Minute))
	wantErr(t, "CompleteFlow(other principal)", err, store.ErrConflict)
	wantNoSecret(t, s, "bob", "billing_key")
	wantNoSecret(t, s, "alice", "billing_key")
	checkFlow(t, mustGetFlow(t, s, f.ID), f)
}

func testCompleteExpired(t *testing.T, s store.Store) {
	cases := []struct {
		name string
		now  time.Duration // after creation
	}{
		{"at expiry", 15 * time.Minute},
		{"after expiry", 15*time.Minute + time.Second},
		{"long after", 24 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
			mustCreateFlow(t, s, f)
			err := s.CompleteFlow(context.Background(), f.ID, "alice", []byte("x"), base.Add(tc.now))
			wantErr(t, "CompleteFlow(expired)", err, store.ErrConflict)
			wantNoSecret(t, s, "alice", "billing_key")
			checkFlow(t, mustGetFlow(t, s, f.ID), f)
		})
	}
}

func testCompleteTwice(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
	mustCreateFlow(t, s, f)
	first := base.Add(time.Minute)
	if err := s.CompleteFlow(ctx, f.ID, "alice", []byte("first"), first); err != nil {
		t.Fatalf("first CompleteFlow: %v", err)
	}
	err := s.CompleteFlow(ctx, f.ID, "alice", []byte("second"), base.Add(2*time.Minute))
	wantErr(t, "second CompleteFlow", err, store.ErrConflict)
	wantSecret(t, s, "alice", "billing_key", []byte("first"))
	if got := mustGetFlow(t, s, f.ID); !sameSecond(got.CompletedAt, first) {
		t.Fatalf("CompletedAt = %v, want the first completion %v", got.CompletedAt, first)
	}
}

func testSecretReplace(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i, blob := range []string{"old", "new", "newer"} {
		f := newFlow(t, "alice", "billing_key", base.Add(time.Duration(i)*time.Minute), 15*time.Minute)
		mustCreateFlow(t, s, f)
		if err := s.CompleteFlow(ctx, f.ID, "alice", []byte(blob), f.CreatedAt.Add(time.Second)); err != nil {
			t.Fatalf("CompleteFlow %d: %v", i, err)
		}
		wantSecret(t, s, "alice", "billing_key", []byte(blob))
	}
}

func testReplaceSecretCAS(t *testing.T, s store.Store) {
	ctx := context.Background()
	wantErr(t, "ReplaceSecret(missing)", s.ReplaceSecret(ctx, "alice", "calendar", []byte("x"), []byte("y"), base), store.ErrNotFound)
	wantNoSecret(t, s, "alice", "calendar")
	for _, e := range []struct{ principal, blob string }{{"alice", "v1"}, {"bob", "v1"}} {
		f := newFlow(t, e.principal, "calendar", base, time.Hour)
		mustCreateFlow(t, s, f)
		if err := s.CompleteFlow(ctx, f.ID, e.principal, []byte(e.blob), base.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		old, sealed string
		want        error
		after       string
	}{
		{"v1", "v2", nil, "v2"},
		{"v1", "v3", store.ErrConflict, "v2"}, // derived from a stale value
		{"v1\x00", "v3", store.ErrConflict, "v2"},
		{"v2", "v3", nil, "v3"},
	}
	for i, st := range steps {
		err := s.ReplaceSecret(ctx, "alice", "calendar", []byte(st.old), []byte(st.sealed), base.Add(time.Duration(i+2)*time.Second))
		if st.want == nil && err != nil || st.want != nil && !errors.Is(err, st.want) {
			t.Fatalf("step %d: ReplaceSecret(%q -> %q) = %v, want %v", i, st.old, st.sealed, err, st.want)
		}
		wantSecret(t, s, "alice", "calendar", []byte(st.after))
	}
	wantSecret(t, s, "bob", "calendar", []byte("v1")) // other users untouched
	wantErr(t, "ReplaceSecret(other name)", s.ReplaceSecret(ctx, "alice", "billing_key", []byte("v3"), []byte("v4"), base), store.ErrNotFound)
}

func testSecretIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	entries := []struct{ principal, purpose, blob string }{
		{"alice", "billing_key", "a-billing"},
		{"alice", "github_token", "a-github"},
		{"bob", "billing_key", "b-billing"},
	}
	for _, e := range entries {
		f := newFlow(t, e.principal, e.purpose, base, time.Hour)
		mustCreateFlow(t, s, f)
		if err := s.CompleteFlow(ctx, f.ID, e.principal, []byte(e.blob), base.Add(time.Second)); err != nil {
			t.Fatalf("CompleteFlow(%s/%s): %v", e.principal, e.purpose, err)
		}
	}
	for _, e := range entries {
		wantSecret(t, s, e.principal, e.purpose, []byte(e.blob))
	}
	wantNoSecret(t, s, "bob", "github_token")
	wantNoSecret(t, s, "carol", "billing_key")
}

func testSecretNotFound(t *testing.T, s store.Store) {
	wantNoSecret(t, s, "alice", "billing_key")
	wantNoSecret(t, s, "", "")
}

func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	sess := &store.Session{
		ID:        sessionID(t),
		Principal: "alice",
		CSRF:      sessionID(t),
		CreatedAt: base,
		ExpiresAt: base.Add(12 * time.Hour),
	}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	other := &store.Session{ID: sessionID(t), Principal: "bob", CSRF: "c2", CreatedAt: base, ExpiresAt: base.Add(-time.Hour)}
	if err := s.CreateSession(ctx, other); err != nil {
		t.Fatalf("CreateSession(expired): %v", err)
	}

	check := func(want *store.Session) {
		t.Helper()
		got, err := s.GetSession(ctx, want.ID)
		if err != nil {
			t.Fatalf("GetSession: %v", err)
		}
		if got.ID != want.ID || got.Principal != want.Principal || got.CSRF != want.CSRF ||
			!sameSecond(got.CreatedAt, want.CreatedAt) || !sameSecond(got.ExpiresAt, want.ExpiresAt) {
			t.Fatalf("GetSession = %+v, want %+v", got, want)
		}
	}
	check(sess)
	check(other) // expired sessions are still returned; the caller checks

	if got, err := s.GetSession(ctx, sessionID(t)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession(unknown) = %v, %v; want ErrNotFound", got, err)
	}
	if err := s.DeleteSession(ctx, sess.ID); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, err := s.GetSession(ctx, sess.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession after delete: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteSession(ctx, sess.ID); err != nil {
		t.Fatalf("DeleteSession twice: %v, want nil (idempotent)", err)
	}
	check(other)
}

func testSessionDuplicateID(t *testing.T, s store.Store) {
	ctx := context.Background()
	sess := &store.Session{ID: sessionID(t), Principal: "alice", CSRF: "c", CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	dup := *sess
	dup.Principal = "mallory"
	wantErr(t, "CreateSession(duplicate)", s.CreateSession(ctx, &dup), store.ErrConflict)
	got, err := s.GetSession(ctx, sess.ID)
	if err != nil || got.Principal != "alice" {
		t.Fatalf("GetSession = %+v, %v; want alice's session", got, err)
	}
}

func testDeleteExpired(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := base.Add(time.Hour)

	oldPending := newFlow(t, "alice", "a", base, time.Minute)           // expired
	oldComplete := newFlow(t, "alice", "b", base, time.Minute)          // expired, complete
	livePending := newFlow(t, "alice", "c", base, 2*time.Hour)          // live
	liveComplete := newFlow(t, "bob", "billing_key", base, 2*time.Hour) // live, complete
	for _, f := range []*store.Flow{oldPending, oldComplete, livePending, liveComplete} {
		mustCreateFlow(t, s, f)
	}
	if err := s.CompleteFlow(ctx, oldComplete.ID, "alice", []byte("kept"), base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteFlow(ctx, liveComplete.ID, "bob", []byte("bob"), base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	oldSess := &store.Session{ID: sessionID(t), Principal: "alice", CSRF: "x", CreatedAt: base, ExpiresAt: base.Add(time.Minute)}
	liveSess := &store.Session{ID: sessionID(t), Principal: "alice", CSRF: "y", CreatedAt: base, ExpiresAt: now.Add(time.Minute)}
	for _, se := range []*store.Session{oldSess, liveSess} {
		if err := s.CreateSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}

	n, err := s.DeleteExpired(ctx, now)
	if err != nil {
		t.Fatalf("DeleteExpired: %v", err)
	}
	if n != 3 {
		t.Fatalf("DeleteExpired removed %d rows, want 3", n)
	}
	for _, id := range []string{oldPending.ID, oldComplete.ID} {
		if _, err := s.GetFlow(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("expired flow %s: err = %v, want ErrNotFound", id, err)
		}
	}
	mustGetFlow(t, s, livePending.ID)
	mustGetFlow(t, s, liveComplete.ID)
	if _, err := s.GetSession(ctx, oldSess.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetSession(ctx, liveSess.ID); err != nil {
		t.Errorf("live session: %v", err)
	}
	// Secrets outlive their flows.
	wantSecret(t, s, "alice", "b", []byte("kept"))

	n, err = s.DeleteExpired(ctx, now)
	if err != nil || n != 0 {
		t.Fatalf("second DeleteExpired = %d, %v; want 0, nil", n, err)
	}
}

func testConcurrentComplete(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFlow(t, "alice", "billing_key", base, 15*time.Minute)
	mustCreateFlow(t, s, f)

	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.CompleteFlow(ctx, f.ID, "alice", fmt.Appendf(nil, "key-%d", i), base.Add(time.Minute))
		}()
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("goroutines %d and %d both completed the flow", winner, i)
			}
			winner = i
		case errors.Is(err, store.ErrConflict):
		default:
			t.Errorf("goroutine %d: err = %v, want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no goroutine completed the flow")
	}
	wantSecret(t, s, "alice", "billing_key", fmt.Appendf(nil, "key-%d", winner))
	if got := mustGetFlow(t, s, f.ID); got.Status != store.FlowComplete {
		t.Fatalf("status = %q, want complete", got.Status)
	}
}

func testPendingFlow(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	mk := func(id, principal, purpose string, created time.Time) {
		t.Helper()
		f := &store.Flow{ID: id, Principal: principal, Purpose: purpose, Status: store.FlowPending,
			CreatedAt: created, ExpiresAt: created.Add(15 * time.Minute)}
		if err := s.CreateFlow(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PendingFlow(ctx, "alice", "billing_key", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("empty store: %v", err)
	}
	mk("00000000000000000000000000000001", "alice", "billing_key", now.Add(-20*time.Minute)) // expired
	mk("00000000000000000000000000000002", "alice", "billing_key", now.Add(-2*time.Minute))
	mk("00000000000000000000000000000003", "alice", "billing_key", now.Add(-1*time.Minute)) // newest
	mk("00000000000000000000000000000004", "bob", "billing_key", now)
	mk("00000000000000000000000000000005", "alice", "reporting_account", now)
	f, err := s.PendingFlow(ctx, "alice", "billing_key", now)
	if err != nil || f.ID != "00000000000000000000000000000003" {
		t.Fatalf("PendingFlow = %+v, %v; want the newest live one", f, err)
	}
	if err := s.CompleteFlow(ctx, f.ID, "alice", []byte("x"), now); err != nil {
		t.Fatal(err)
	}
	f, err = s.PendingFlow(ctx, "alice", "billing_key", now)
	if err != nil || f.ID != "00000000000000000000000000000002" {
		t.Fatalf("after completing the newest: %+v, %v", f, err)
	}
	if _, err := s.PendingFlow(ctx, "carol", "billing_key", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("carol: %v", err)
	}
}
