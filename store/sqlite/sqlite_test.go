package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "elicit.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if runtime.GOOS == "windows" {
		t.Skip("POSIX permissions")
	}
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

func TestOpenPragmas(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&n); err != nil || n != 5000 {
		t.Errorf("busy_timeout = %d, %v; want 5000", n, err)
	}
	if err := s.db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&n); err != nil || n != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", n, err)
	}
	if err := s.db.QueryRowContext(ctx, `PRAGMA query_only`).Scan(&n); err != nil || n != 1 {
		t.Errorf("read connection query_only = %d, %v; want 1", n, err)
	}
	// The write connection: durable commits (the WAL is synced at each).
	for pragma, want := range map[string]int{"synchronous": 2, "query_only": 0, "foreign_keys": 1, "temp_store": 2, "journal_size_limit": 64 << 20} {
		if err := s.w.db.QueryRowContext(ctx, `PRAGMA `+pragma).Scan(&n); err != nil || n != want {
			t.Errorf("write connection %s = %d, %v; want %d", pragma, n, err, want)
		}
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &store.Flow{ID: "0123456789abcdef0123456789abcdef", Principal: "alice", Purpose: "billing_key",
		Status: store.FlowPending, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.CreateFlow(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err = Open(path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		v, err := s.SchemaVersion(ctx)
		if err != nil || v != len(migrations) {
			t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
		}
		var rows int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version`).Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("schema_version rows = %d, %v; want 1", rows, err)
		}
		if _, err := s.GetFlow(ctx, f.ID); err != nil {
			t.Fatalf("data lost on reopen: %v", err)
		}
		s.Close()
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.db.Exec(`UPDATE schema_version SET version = 999`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(path); err == nil {
		s.Close()
		t.Fatal("Open accepted a database from a newer program")
	}
}

func TestOddPath(t *testing.T) {
	// '?' and '#' must not be read as URI syntax, '%' not as an escape.
	path := filepath.Join(t.TempDir(), "we?ird#na%20me", "db?x=1")
	if runtime.GOOS == "windows" {
		t.Skip("'?' is not allowed in Windows file names")
	}
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

func TestSessionIDNotStoredInClear(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := "sEcReT-session-id-value-0123456789abcdefghij"
	if err := s.CreateSession(context.Background(), &store.Session{ID: id, Principal: "alice", CSRF: "c",
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM sessions WHERE id_hash = ?`, id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("session id stored in clear (count %d, err %v)", n, err)
	}
}

func TestOpenInvalidPath(t *testing.T) {
	for _, p := range []string{"", "a\x00b"} {
		if s, err := Open(p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// A database made by the first release (schema 1) gains the ledger tables
// on open and keeps its data.
func TestMigrateFromSchema1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &store.Flow{ID: "0123456789abcdef0123456789abcdef", Principal: "alice", Purpose: "billing_key",
		Status: store.FlowPending, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.CreateFlow(ctx, f); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE operations`, `DROP TABLE records`, `DROP INDEX flows_principal_purpose`, `DROP TABLE state_keys`, `DROP TABLE store_meta`, `DROP TABLE tasks`, `UPDATE schema_version SET version = 1`} {
		if _, err := s.w.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(ctx); v != len(migrations) {
		t.Fatalf("schema version %d, want %d", v, len(migrations))
	}
	if _, err := s.GetFlow(ctx, f.ID); err != nil {
		t.Fatalf("flow lost: %v", err)
	}
	if err := s.CompleteOperation(ctx, &store.Operation{ID: "op", Principal: "alice", CompletedAt: time.Now()}, nil); err != nil {
		t.Fatalf("ledger after migration: %v", err)
	}
}

// A ring stored before keys had an activation time (schema 4) gets one on
// open: each key seals from its creation.
func TestMigrateStateKeyActivation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.AddStateKey(ctx, &store.StateKey{ID: "k1", Sealed: []byte("x"), CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE state_keys DROP COLUMN activates_at`, `DROP TABLE store_meta`,
		`DROP INDEX operations_completed_at`, `DROP INDEX records_operation`, `DROP INDEX records_kind_updated`, `DROP TABLE tasks`, `UPDATE schema_version SET version = 4`} {
		if _, err := s.w.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	keys, err := s.StateKeys(ctx)
	if err != nil || len(keys) != 1 || !keys[0].ActivatesAt.Equal(created) {
		t.Fatalf("after migration: %v %+v", err, keys)
	}
}

// A writer that finds the write lock held past Options.Timeout gets
// store.ErrUnavailable (retryable), not a plain error; the pool is capped.
func TestLockedIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	s, err := OpenWith(path, &Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.db.Stats().MaxOpenConnections; got != DefaultMaxConns {
		t.Fatalf("MaxOpenConnections = %d, want %d", got, DefaultMaxConns)
	}
	other, err := OpenWith(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	conn, err := other.w.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"CompleteOperation": func() error {
			return s.CompleteOperation(ctx, &store.Operation{ID: "op", Principal: "alice", CompletedAt: time.Now()}, nil)
		},
		"CreateFlow": func() error {
			return s.CreateFlow(ctx, &store.Flow{ID: "f", Principal: "a", Purpose: "p", Status: store.FlowPending, CreatedAt: time.Now(), ExpiresAt: time.Now()})
		},
	} {
		err := call()
		var ue interface{ Unavailable() bool }
		if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &ue) || errors.Is(err, store.ErrStorageFull) {
			t.Errorf("%s with the lock held: %v, want store.ErrUnavailable", name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteOperation(ctx, &store.Operation{ID: "op", Principal: "alice", CompletedAt: time.Now()}, nil); err != nil {
		t.Fatalf("once the lock is free: %v", err)
	}
}

// TestWritersNeverWaitForTheLock runs 64 concurrent writers of every kind,
// with readers beside them, on a store whose busy timeout is 0: SQLite's
// busy handler is off, so a write that found the lock held by another
// connection of the store would fail with "database is locked" at once
// instead of sleeping. None may: the store's writes take turns on its one
// write connection, and WAL readers never take the write lock.
func TestWritersNeverWaitForTheLock(t *testing.T) {
	s, err := OpenWith(filepath.Join(t.TempDir(), "elicit.db"), &Options{busyTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var n int
	if err := s.w.db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("busy_timeout = %d, %v; want 0 (busy handler off)", n, err)
	}
	now := time.Now()
	const writers, each = 64, 4
	errs := make(chan error, writers*each*4)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for k := range each {
				id := fmt.Sprintf("%02d%030d", i, k)
				op := &store.Operation{ID: "op-" + id, Principal: "alice", CompletedAt: now}
				errs <- s.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
					if _, err := fx.Count(ctx, "report_draft", "alice", now.Add(-time.Hour)); err != nil {
						return err
					}
					return fx.Insert(ctx, &store.Record{Kind: "report_draft", ID: id, Principal: "alice", Status: "prepared", CreatedAt: now, UpdatedAt: now})
				})
				errs <- s.CreateFlow(ctx, &store.Flow{ID: id, Principal: "alice", Purpose: "billing_key", Status: store.FlowPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
				errs <- s.CompleteFlow(ctx, id, "alice", []byte("sealed"), now)
				_, err := s.GetRecord(ctx, "report_draft", id)
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a write or read failed (it would have had to wait for the lock): %v", err)
		}
	}
	if rs, err := s.ListRecords(ctx, "report_draft", "alice"); err != nil || len(rs) != writers*each {
		t.Fatalf("ListRecords = %d records, %v; want %d", len(rs), err, writers*each)
	}
}

// TestGroupCommit: writes that queue while a transaction is open share the
// next one, each in its own savepoint. A write that fails undoes only its
// own statements; the others of its transaction commit; duplicates in one
// transaction see each other; every caller hears only after the commit.
func TestGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		// Hold the writer in a job until the others are queued behind
		// it, so that they form one batch.
		release := make(chan struct{})
		go func() {
			_ = s.write(ctx, func(ctx context.Context, w *wtx) error {
				<-release
				return nil
			})
		}()
		synctest.Wait()
		before := s.w.txs.Load()
		type result struct {
			name string
			err  error
		}
		results := make(chan result, 4)
		now := time.Now()
		insert := func(name, opID, recID string, fail bool) {
			err := s.CompleteOperation(ctx, &store.Operation{ID: opID, Principal: "alice", CompletedAt: now},
				func(ctx context.Context, fx store.Effects) error {
					if err := fx.Insert(ctx, &store.Record{Kind: "k", ID: recID, Principal: "alice", Status: "s"}); err != nil {
						return err
					}
					if fail {
						return errors.New("refused after its insert")
					}
					return nil
				})
			results <- result{name, err}
		}
		go insert("first", "op-1", "r-1", false)
		synctest.Wait() // queued first
		go insert("refused", "op-2", "r-2", true)
		go insert("same operation", "op-1", "r-3", false)
		go insert("same record", "op-4", "r-1", false)
		synctest.Wait() // all four wait for the writer
		close(release)
		got := map[string]error{}
		for range 4 {
			r := <-results
			got[r.name] = r.err
		}
		if n := s.w.txs.Load() - before; n != 1 {
			t.Errorf("the four writes ran in %d transactions after the held one, want 1", n)
		}
		if got["first"] != nil {
			t.Errorf("first: %v", got["first"])
		}
		if got["refused"] == nil || errors.Is(got["refused"], store.ErrConflict) {
			t.Errorf("refused: %v, want its own error", got["refused"])
		}
		for _, name := range []string{"same operation", "same record"} {
			if !errors.Is(got[name], store.ErrConflict) {
				t.Errorf("%s: %v, want ErrConflict", name, got[name])
			}
		}
		// What the callers were told is what was committed.
		if _, err := s.GetRecord(ctx, "k", "r-1"); err != nil {
			t.Errorf("r-1: %v", err)
		}
		for _, id := range []string{"r-2", "r-3"} {
			if _, err := s.GetRecord(ctx, "k", id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s written: %v", id, err)
			}
		}
		for _, id := range []string{"op-2", "op-4"} {
			if _, err := s.GetOperation(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s recorded: %v", id, err)
			}
		}
	})
}

// TestCheckpointer: the WAL is copied into the database file by the
// store's checkpointer a moment after writes, not by a commit (the write
// connection's own checkpoint starts only past walAutocheckpoint pages).
func TestCheckpointer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "elicit.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var n int
		if err := s.w.db.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&n); err != nil || n != walAutocheckpoint {
			t.Fatalf("wal_autocheckpoint = %d, %v; want %d", n, err, walAutocheckpoint)
		}
		ctx := context.Background()
		write := func(i int) {
			t.Helper()
			if err := s.CompleteOperation(ctx, &store.Operation{ID: fmt.Sprint("op-", i), Principal: "alice", CompletedAt: time.Now()},
				func(ctx context.Context, fx store.Effects) error {
					return fx.Insert(ctx, &store.Record{Kind: "k", ID: fmt.Sprint(i), Principal: "alice", Status: "s", Data: make([]byte, 2000)})
				}); err != nil {
				t.Fatal(err)
			}
		}
		// The first commit is checkpointed at once; then the checkpointer
		// waits checkpointEvery (the bubble's clock stands still while
		// this goroutine works).
		write(-1)
		synctest.Wait()
		before := fileSize(t, path)
		for i := range 50 {
			write(i)
		}
		if got := fileSize(t, path); got != before {
			t.Fatalf("the database file changed from %d to %d bytes before the checkpointer ran: a commit checkpointed", before, got)
		}
		time.Sleep(checkpointEvery)
		synctest.Wait()
		if got := fileSize(t, path); got <= before {
			t.Fatalf("the database file is %d bytes after the checkpointer's interval, %d before: nothing was checkpointed", got, before)
		}
	})
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Close may be called again (elicitd's shutdown and a test's cleanup
// both do); it returns at once.
func TestCloseTwice(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSecret(context.Background(), "alice", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
func TestTaskContract(t *testing.T) {
	storetest.RunTasks(t, func(t *testing.T) storetest.TaskStore {
		s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
