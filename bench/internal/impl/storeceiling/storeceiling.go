// Package storeceiling is the bare store of the benchmark: an HTTP handler
// that does one durable insert per request, with the driver and the
// durability settings elicitd's store uses, and nothing else (no MCP, no
// JSON decoding, no auth). Its rate is the ceiling the real flows' writes
// are measured against.
//
//   - SQLite (modernc.org/sqlite): WAL, synchronous=FULL, one connection
//     (the simplest way a Go server writes SQLite without lock
//     contention), each insert its own transaction: one WAL sync per
//     request.
//   - PostgreSQL (pgx): a pool of postgres.DefaultMaxConns() connections,
//     each insert its own transaction (one round trip, a commit that
//     waits for the WAL flush with the server's synchronous_commit).
package storeceiling

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/mcp-elicit/elicit/store/postgres"
)

const table = `CREATE TABLE IF NOT EXISTS bench_rows (id TEXT PRIMARY KEY, body BYTEA NOT NULL, at BIGINT NOT NULL)`

// inserter stores one row.
type inserter func(ctx context.Context, id string, body []byte, at int64) error

func handler(insert inserter) http.Handler {
	ok := []byte(`{"ok":true}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		var b [16]byte
		_, _ = rand.Read(b[:])
		if err := insert(r.Context(), hex.EncodeToString(b[:]), body, time.Now().UnixNano()); err != nil {
			http.Error(w, "insert: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ok)
	})
}

// SQLite returns the bare store over a new database in dir, and its
// closer.
func SQLite(dir string) (http.Handler, func() error, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "ceiling.db"))}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	db, err := sql.Open("sqlite", u.String()+"?"+q.Encode())
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.Exec(table); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("sqlite: %w", err)
	}
	st, err := db.Prepare(`INSERT INTO bench_rows (id, body, at) VALUES (?, ?, ?)`)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("sqlite: %w", err)
	}
	h := handler(func(ctx context.Context, id string, body []byte, at int64) error {
		_, err := st.ExecContext(ctx, id, body, at)
		return err
	})
	return h, db.Close, nil
}

// Postgres returns the bare store over dsn (its search_path selects the
// schema), and its closer.
func Postgres(ctx context.Context, dsn string) (http.Handler, func() error, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns = postgres.DefaultMaxConns()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := pool.Exec(ctx, table); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("postgres: %w", err)
	}
	const insert = `INSERT INTO bench_rows (id, body, at) VALUES ($1, $2, $3)`
	h := handler(func(ctx context.Context, id string, body []byte, at int64) error {
		_, err := pool.Exec(ctx, insert, id, body, at)
		return err
	})
	return h, func() error { pool.Close(); return nil }, nil
}
