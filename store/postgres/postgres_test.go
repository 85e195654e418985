package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
	"github.com/mcp-elicit/elicit/store/storetest"
)

func TestContract(t *testing.T) {
	dsn := pgtest.DSN(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), pgtest.FreshSchema(t, dsn))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestConcurrentMigration starts several instances at once against one
// empty schema: all must open, and each migration is applied once.
func TestConcurrentMigration(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = Open(context.Background(), dsn)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: Open: %v", i, err)
		} else {
			defer stores[i].Close()
		}
	}
	if t.Failed() {
		return
	}
	ctx := context.Background()
	v, err := stores[0].SchemaVersion(ctx)
	if err != nil || v != len(ms) {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, len(ms))
	}
	var rows int
	if err := stores[0].pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(ms) {
		t.Fatalf("schema_migrations has %d rows, %v; want %d", rows, err, len(ms))
	}
	// Reopening a current schema changes nothing.
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestMigrationsNumbered(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 {
		t.Fatalf("%d migrations, want at least 2", len(ms))
	}
}

// A ring stored before keys had an activation time (migration 4) gets one
// on open: each key seals from its creation.
func TestMigrateStateKeyActivation(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.AddStateKey(ctx, &store.StateKey{ID: "k1", Sealed: []byte("x"), CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE state_keys DROP COLUMN activates_at`, `DROP TABLE store_meta`,
		`DROP INDEX operations_completed_at`, `DROP INDEX records_operation`, `DROP INDEX records_kind_updated`, `DROP TABLE tasks`, `DELETE FROM schema_migrations WHERE version >= 4`} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = Open(ctx, dsn); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	keys, err := s.StateKeys(ctx)
	if err != nil || len(keys) != 1 || !keys[0].ActivatesAt.Equal(created) {
		t.Fatalf("after migration: %v %+v", err, keys)
	}
}

// OpenExisting creates nothing in an empty schema and opens a migrated one.
func TestOpenExisting(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	ctx := context.Background()
	if _, err := OpenExisting(ctx, dsn); !errors.Is(err, ErrNoSchema) {
		t.Fatalf("OpenExisting on an empty schema: %v, want ErrNoSchema", err)
	}
	s, err := Open(ctx, dsn) // still empty: Open creates the schema
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("Open made %d tables: %v", tables, err)
	}
	s.Close()
	s, err = OpenExisting(ctx, dsn)
	if err != nil {
		t.Fatalf("OpenExisting on a migrated schema: %v", err)
	}
	s.Close()
}

// The pool is sized for the work unless told otherwise: DefaultMaxConns
// (not pgxpool's max(4, CPUs)); Options.MaxConns, then the DSN's
// pool_max_conns, override it.
func TestPoolSize(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		dsn  string
		opts *Options
		want int32
	}{
		{"default", dsn, nil, DefaultMaxConns()},
		{"Options.MaxConns", dsn, &Options{MaxConns: 3}, 3},
		{"DSN pool_max_conns", pgtest.WithParam(t, dsn, "pool_max_conns", "5"), nil, 5},
	} {
		s, err := OpenWith(ctx, tc.dsn, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := s.pool.Config().MaxConns; got != tc.want {
			t.Errorf("%s: MaxConns = %d, want %d", tc.name, got, tc.want)
		}
		s.Close()
	}
	if DefaultMaxConns() < 16 {
		t.Errorf("DefaultMaxConns() = %d, want at least 16", DefaultMaxConns())
	}
}

func TestTaskContract(t *testing.T) {
	dsn := pgtest.DSN(t)
	storetest.RunTasks(t, func(t *testing.T) storetest.TaskStore {
		s, err := Open(context.Background(), pgtest.FreshSchema(t, dsn))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
