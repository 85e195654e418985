// Package pgtest gives tests an empty PostgreSQL schema of their own, from
// the database that ELICIT_TEST_POSTGRES_DSN names (CI starts one on
// loopback). Tests that need it are skipped when the variable is unset.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the test database's connection URL.
const EnvDSN = "ELICIT_TEST_POSTGRES_DSN"

// DSN returns the test database's URL, or skips t naming EnvDSN.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		t.Skip("set " + EnvDSN + " (e.g. postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable) to run the PostgreSQL tests")
	}
	return dsn
}

// SchemaDSN returns DSN(t) with search_path set to a new empty schema,
// which is dropped when the test ends, so every test starts empty.
func SchemaDSN(t testing.TB) string {
	t.Helper()
	return FreshSchema(t, DSN(t))
}

// FreshSchema is SchemaDSN for a given database URL.
func FreshSchema(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "elicit_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("pgtest: connect: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("pgtest: drop schema: %v", err)
		}
	})
	return WithParam(t, dsn, "search_path", schema)
}

// WithParam sets a connection parameter in a URL or key=value DSN.
func WithParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("pgtest: %s is not a URL: %v", EnvDSN, err)
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}
