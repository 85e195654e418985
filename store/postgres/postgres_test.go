package postgres

import (
	"context"
	"sync"
	"testing"

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
