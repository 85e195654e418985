package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/storetest"
)

// testDSN returns ELICIT_TEST_POSTGRES_DSN or skips the test.
func testDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("ELICIT_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable) to run the PostgreSQL tests")
	}
	return dsn
}

// freshSchema creates an empty schema, drops it when the test ends, and
// returns dsn with search_path set to it, so every store starts empty.
func freshSchema(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "elicit_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("connect: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return withParam(t, dsn, "search_path", schema)
}

func withParam(t *testing.T, dsn, key, value string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

func TestContract(t *testing.T) {
	dsn := testDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), freshSchema(t, dsn))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestConcurrentMigration starts several instances at once against one
// empty schema: all must open, and each migration is applied once.
func TestConcurrentMigration(t *testing.T) {
	dsn := freshSchema(t, testDSN(t))
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
