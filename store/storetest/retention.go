package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// retentionTests are the Sweep and Effects.Count part of the contract.
var retentionTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"SweepRetention", testSweepRetention},
	{"SweepLoadToBound", testSweepLoadToBound},
	{"CountCapsConcurrentInserts", testCountCap},
	{"HealthReadsAndProbes", testHealth},
}

// attemptKind mirrors connect's OAuth attempt records.
const attemptKind = "oauth_attempt"

func attemptRecord(id, principal string, at time.Time) *store.Record {
	return &store.Record{Kind: attemptKind, ID: id, Principal: principal, Status: "started", Data: []byte("sealed"),
		CreatedAt: at, UpdatedAt: at}
}

func wantOperation(t *testing.T, s store.Store, id string, kept bool) {
	t.Helper()
	_, err := s.GetOperation(context.Background(), id)
	switch {
	case kept && err != nil:
		t.Errorf("operation %s: %v, want kept", id, err)
	case !kept && !errors.Is(err, store.ErrNotFound):
		t.Errorf("operation %s: err = %v, want swept (ErrNotFound)", id, err)
	}
}

func wantRecord(t *testing.T, s store.Store, kind, id string, kept bool) {
	t.Helper()
	_, err := s.GetRecord(context.Background(), kind, id)
	switch {
	case kept && err != nil:
		t.Errorf("record %s/%s: %v, want kept", kind, id, err)
	case !kept && !errors.Is(err, store.ErrNotFound):
		t.Errorf("record %s/%s: err = %v, want swept (ErrNotFound)", kind, id, err)
	}
}

// testSweepRetention: each kind of row goes exactly when its retention
// says, an operation a record refers to stays with the record, and an
// operation whose last record goes goes in the same sweep.
func testSweepRetention(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := base.Add(72 * time.Hour)
	r := &store.Retention{FlowGrace: time.Hour, Operations: 24 * time.Hour,
		Records: map[string]time.Duration{attemptKind: time.Hour}}

	longExpired := newFlow(t, "alice", "a", now.Add(-3*time.Hour), time.Hour) // expired 2h ago: past the grace
	inGrace := newFlow(t, "alice", "b", now.Add(-90*time.Minute), time.Hour)  // expired 30m ago: kept
	live := newFlow(t, "alice", "c", now, time.Hour)
	for _, f := range []*store.Flow{longExpired, inGrace, live} {
		mustCreateFlow(t, s, f)
	}
	oldSess := &store.Session{ID: sessionID(t), Principal: "alice", CSRF: "x", CreatedAt: base, ExpiresAt: now.Add(-time.Second)}
	liveSess := &store.Session{ID: sessionID(t), Principal: "alice", CSRF: "y", CreatedAt: base, ExpiresAt: now.Add(time.Minute)}
	for _, se := range []*store.Session{oldSess, liveSess} {
		if err := s.CreateSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	op := func(id string, at time.Time, effect func(context.Context, store.Effects) error) {
		t.Helper()
		mustComplete(t, s, &store.Operation{ID: id, Principal: "alice", Name: "test", Outcome: "x", CompletedAt: at}, effect)
	}
	old, recent := now.Add(-48*time.Hour), now.Add(-time.Hour)
	op("audit-old", old, nil)       // declined long ago: goes
	op("audit-recent", recent, nil) // within 24h: kept
	op("draft-old", old, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, &store.Record{Kind: "report_draft", ID: "d1", Principal: "alice", Status: "prepared", CreatedAt: old, UpdatedAt: old})
	}) // the draft (a kind without retention) keeps it
	op("attempt-old", old, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, attemptRecord("a1", "alice", now.Add(-2*time.Hour)))
	}) // its attempt goes, and so does it
	op("attempt-started", old, func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, attemptRecord("a2", "alice", old))
	}) // its attempt moved on to attempt-used: goes
	op("attempt-used", now.Add(-10*time.Minute), func(ctx context.Context, fx store.Effects) error {
		rec, err := fx.Get(ctx, attemptKind, "a2")
		if err != nil {
			return err
		}
		rec.Status, rec.UpdatedAt = "used", now.Add(-10*time.Minute)
		return fx.Update(ctx, rec)
	})

	res, err := s.Sweep(ctx, now, r)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	want := store.SweepResult{Flows: 1, Sessions: 1, Operations: 3, Records: map[string]int64{attemptKind: 1}}
	if res.Flows != want.Flows || res.Sessions != want.Sessions || res.Operations != want.Operations ||
		len(res.Records) != 1 || res.Records[attemptKind] != 1 || res.Total() != 6 {
		t.Fatalf("Sweep = %+v, want %+v", res, want)
	}
	if _, err := s.GetFlow(ctx, longExpired.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("flow expired past the grace: %v, want swept", err)
	}
	mustGetFlow(t, s, inGrace.ID)
	mustGetFlow(t, s, live.ID)
	if _, err := s.GetSession(ctx, oldSess.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session: %v, want swept", err)
	}
	if _, err := s.GetSession(ctx, liveSess.ID); err != nil {
		t.Errorf("live session: %v", err)
	}
	for id, kept := range map[string]bool{"audit-old": false, "audit-recent": true, "draft-old": true,
		"attempt-old": false, "attempt-started": false, "attempt-used": true} {
		wantOperation(t, s, id, kept)
	}
	wantRecord(t, s, "report_draft", "d1", true)
	wantRecord(t, s, attemptKind, "a1", false)
	wantRecord(t, s, attemptKind, "a2", true)

	// A second sweep at the same time finds nothing.
	res, err = s.Sweep(ctx, now, r)
	if err != nil || res.Total() != 0 {
		t.Fatalf("second Sweep = %+v, %v; want nothing", res, err)
	}
}

// loadAttempts is the size of testSweepLoadToBound's load.
const loadAttempts = 10000

// testSweepLoadToBound: 10,000 OAuth attempts, one a second, each an
// operation and its record, then a sweep with a one-hour retention: what
// is left is exactly the last hour's attempts (3,600) and their
// operations, whatever the backlog.
func testSweepLoadToBound(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	// A few writers at once, as a server would; each attempt is one
	// CompleteOperation like connect's.
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < loadAttempts; i += workers {
				op := &store.Operation{ID: fmt.Sprintf("oauth_start.%05d", i), Principal: "mallory", Name: "connect oauth start",
					Outcome: "started", CompletedAt: at(i)}
				err := store.ErrUnavailable
				// A call past the store's deadline (a busy machine) is
				// retried, as a client retries a 503; a retry that finds
				// the first try committed is done.
				for try := 0; errors.Is(err, store.ErrUnavailable) && try < 10; try++ {
					err = s.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
						return fx.Insert(ctx, attemptRecord(fmt.Sprintf("%05d", i), "mallory", at(i)))
					})
					if try > 0 && errors.Is(err, store.ErrConflict) {
						err = nil
					}
				}
				if err != nil {
					errs <- fmt.Errorf("attempt %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantRecords(t, s, attemptKind, "mallory", loadAttempts)

	const keep = 3600 // one hour at one attempt a second
	now := at(loadAttempts)
	res, err := s.Sweep(ctx, now, &store.Retention{Operations: time.Hour, Records: map[string]time.Duration{attemptKind: time.Hour}})
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if res.Records[attemptKind] != loadAttempts-keep || res.Operations != loadAttempts-keep {
		t.Fatalf("Sweep removed %d attempts and %d operations, want %d of each", res.Records[attemptKind], res.Operations, loadAttempts-keep)
	}
	rs := wantRecords(t, s, attemptKind, "mallory", keep)
	if first := rs[0].ID; first != fmt.Sprintf("%05d", loadAttempts-keep) {
		t.Fatalf("oldest attempt left is %s, want %05d", first, loadAttempts-keep)
	}
	// The operations left are exactly those of the attempts left.
	for _, i := range []int{0, loadAttempts - keep - 1} {
		wantOperation(t, s, fmt.Sprintf("oauth_start.%05d", i), false)
	}
	for _, i := range []int{loadAttempts - keep, loadAttempts - 1} {
		wantOperation(t, s, fmt.Sprintf("oauth_start.%05d", i), true)
	}
	t.Logf("%d attempts and operations before the sweep, %d after", loadAttempts, len(rs))
}

var errCap = errors.New("storetest: cap reached")

// testCountCap: concurrent operations that Count and then Insert under a
// cap of 5 leave exactly 5 records, and records older than since do not
// count.
func testCountCap(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustComplete(t, s, newOp(t, "mallory"), func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, attemptRecord("old", "mallory", base.Add(-time.Hour)))
	})
	mustComplete(t, s, newOp(t, "bob"), func(ctx context.Context, fx store.Effects) error {
		return fx.Insert(ctx, attemptRecord("bob", "bob", base))
	})
	const capN, callers = 5, 16
	var wg sync.WaitGroup
	// Warm up: concurrent reads open every connection a pool allows, so
	// that the operations below do run side by side.
	for range 3 {
		for range callers {
			wg.Add(1)
			go func() { defer wg.Done(); s.GetRecord(ctx, attemptKind, "old") }()
		}
		wg.Wait()
	}
	var mu sync.Mutex
	won, capped := 0, 0
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.CompleteOperation(ctx, newOp(t, "mallory"), func(ctx context.Context, fx store.Effects) error {
				n, err := fx.Count(ctx, attemptKind, "mallory", base)
				if err != nil {
					return err
				}
				if n >= capN {
					return errCap
				}
				return fx.Insert(ctx, attemptRecord(fmt.Sprintf("c%02d", i), "mallory", base))
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, errCap):
				capped++
			default:
				t.Errorf("caller %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if won != capN || capped != callers-capN {
		t.Fatalf("%d inserted and %d capped, want %d and %d", won, capped, capN, callers-capN)
	}
	wantRecords(t, s, attemptKind, "mallory", capN+1) // and the old one
}

// testHealth: a working store is healthy, and stays so across calls.
func testHealth(t *testing.T, s store.Store) {
	for range 2 {
		if err := s.Health(context.Background()); err != nil {
			t.Fatalf("Health: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Health(ctx); err == nil {
		t.Fatal("Health with a cancelled context: nil error")
	}
}
