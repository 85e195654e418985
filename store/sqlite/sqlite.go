// Package sqlite is the SQLite implementation of store.Store, using the
// pure-Go driver modernc.org/sqlite (no cgo).
//
// Times are stored as Unix nanoseconds (INTEGER), so they round-trip exactly
// for years 1678–2262. Session ids are stored only as SHA-256 hashes: a copy
// of the database file does not hand out live browser sessions.
package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/store"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is a store.Store backed by one SQLite database file. It is safe for
// concurrent use.
type Store struct {
	db *sql.DB
}

var _ store.Store = (*Store)(nil)

// migrations are applied in order, each once; schema_version records the
// number applied. Append only: never edit a released entry.
var migrations = []string{
	// 1: initial schema.
	`CREATE TABLE flows (
		id           TEXT PRIMARY KEY,
		principal    TEXT NOT NULL,
		purpose      TEXT NOT NULL,
		status       TEXT NOT NULL CHECK (status IN ('pending', 'complete')),
		created_at   INTEGER NOT NULL,
		expires_at   INTEGER NOT NULL,
		completed_at INTEGER
	);
	CREATE INDEX flows_expires_at ON flows (expires_at);
	CREATE TABLE secrets (
		principal  TEXT NOT NULL,
		name       TEXT NOT NULL,
		sealed     BLOB NOT NULL,
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (principal, name)
	);
	CREATE TABLE sessions (
		id_hash    TEXT PRIMARY KEY,
		principal  TEXT NOT NULL,
		csrf       TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX sessions_expires_at ON sessions (expires_at);`,
	// 2: the operation ledger and the records its effects write.
	`CREATE TABLE operations (
		id           TEXT PRIMARY KEY,
		principal    TEXT NOT NULL,
		name         TEXT NOT NULL,
		outcome      TEXT NOT NULL,
		result       BLOB NOT NULL,
		completed_at INTEGER NOT NULL
	);
	CREATE TABLE records (
		kind         TEXT NOT NULL,
		id           TEXT NOT NULL,
		principal    TEXT NOT NULL,
		status       TEXT NOT NULL,
		data         BLOB NOT NULL,
		operation_id TEXT NOT NULL,
		version      INTEGER NOT NULL,
		created_at   INTEGER NOT NULL,
		updated_at   INTEGER NOT NULL,
		PRIMARY KEY (kind, id)
	);
	CREATE INDEX records_owner ON records (kind, principal, created_at, id);`,
	// 3: find a user's pending flow for a purpose (PendingFlow).
	`CREATE INDEX flows_principal_purpose ON flows (principal, purpose, status, created_at);`,
	// 4: the shared requestState key ring (store.KeyRing); seq orders keys
	// by addition, AUTOINCREMENT never reuses a retired key's number.
	`CREATE TABLE state_keys (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		id         TEXT NOT NULL UNIQUE,
		sealed     BLOB NOT NULL,
		created_at INTEGER NOT NULL
	);`,
	// 5: when each key starts to seal (StateKey.ActivatesAt); keys added
	// before seal from their creation.
	`ALTER TABLE state_keys ADD COLUMN activates_at INTEGER NOT NULL DEFAULT 0;
	UPDATE state_keys SET activates_at = created_at;`,
	// 6: settings of the store itself; master_key_check holds the
	// master-key check value (KeyRing.MasterKeyCheck).
	`CREATE TABLE store_meta (
		name  TEXT PRIMARY KEY,
		value BLOB NOT NULL
	);`,
}

// Open opens (creating if needed) the database file at path and brings its
// schema up to date. The parent directory is created with mode 0700 and a
// new file with mode 0600, since it holds sealed secrets and session data.
// Each connection uses WAL journaling, busy_timeout 5000 ms, foreign keys,
// and IMMEDIATE transactions (writers queue on the busy timeout instead of
// failing to upgrade a read lock).
func Open(path string) (*Store, error) {
	if path == "" || strings.ContainsRune(path, 0) {
		return nil, errors.New("sqlite: invalid database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create directory: %w", err)
	}
	// Create the file ourselves so it gets 0600; SQLite gives the -wal and
	// -shm files the same permissions as the database.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}

	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	s := &Store{db: db}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// dsn builds a file: URI so that path characters such as '?' or '#' cannot be
// mistaken for query parameters.
func dsn(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letter
	}
	u := url.URL{Scheme: "file", Path: p}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return u.String() + "?" + q.Encode()
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("sqlite: database schema version %d is newer than this program (%d)", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
			return fmt.Errorf("sqlite: migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return fmt.Errorf("sqlite: migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, v); err != nil {
			return fmt.Errorf("sqlite: migration %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}

// SchemaVersion reports the number of migrations applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: %w", err)
	}
	return v, nil
}

func toNanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// nullNanos maps the zero time to NULL: time.Time{}.UnixNano is undefined.
func nullNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// isUniqueViolation reports a PRIMARY KEY / UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var se *sqlitedrv.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// CreateFlow implements store.Store. ErrConflict if f.ID exists.
func (s *Store) CreateFlow(ctx context.Context, f *store.Flow) error {
	if f == nil {
		return errors.New("sqlite: nil flow")
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO flows (id, principal, purpose, status, created_at, expires_at, completed_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?)`,
		f.ID, f.Principal, f.Purpose, string(f.Status), toNanos(f.CreatedAt), toNanos(f.ExpiresAt), nullNanos(f.CompletedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: flow id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create flow: %w", err)
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanFlow(row rowScanner) (*store.Flow, error) {
	var (
		f                store.Flow
		status           string
		created, expires int64
		completed        sql.NullInt64
	)
	if err := row.Scan(&f.ID, &f.Principal, &f.Purpose, &status, &created, &expires, &completed); err != nil {
		return nil, err
	}
	f.Status = store.FlowStatus(status)
	f.CreatedAt = fromNanos(created)
	f.ExpiresAt = fromNanos(expires)
	if completed.Valid {
		f.CompletedAt = fromNanos(completed.Int64)
	}
	return &f, nil
}

const flowColumns = `id, principal, purpose, status, created_at, expires_at, completed_at`

// GetFlow implements store.Store.
func (s *Store) GetFlow(ctx context.Context, id string) (*store.Flow, error) {
	f, err := scanFlow(s.db.QueryRowContext(ctx, `SELECT `+flowColumns+` FROM flows WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get flow: %w", err)
	}
	return f, nil
}

// PendingFlow implements store.Store.
func (s *Store) PendingFlow(ctx context.Context, principal, purpose string, now time.Time) (*store.Flow, error) {
	f, err := scanFlow(s.db.QueryRowContext(ctx, `SELECT `+flowColumns+` FROM flows
		 WHERE principal = ? AND purpose = ? AND status = 'pending' AND expires_at > ?
		 ORDER BY created_at DESC, id DESC LIMIT 1`, principal, purpose, now.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending flow: %w", err)
	}
	return f, nil
}

// CompleteFlow implements store.Store. The conditional UPDATE is the guard:
// only a call that finds the flow still pending changes a row, so concurrent
// completions cannot both win.
func (s *Store) CompleteFlow(ctx context.Context, flowID, principal string, sealedSecret []byte, now time.Time) error {
	if sealedSecret == nil {
		sealedSecret = []byte{} // the column is NOT NULL
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: complete flow: %w", err)
	}
	defer tx.Rollback()

	res, err := tx.ExecContext(ctx,
		`UPDATE flows SET status = 'complete', completed_at = ?
		 WHERE id = ? AND status = 'pending' AND principal = ? AND expires_at > ?`,
		toNanos(now), flowID, principal, toNanos(now))
	if err != nil {
		return fmt.Errorf("sqlite: complete flow: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: complete flow: %w", err)
	}
	if n != 1 {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM flows WHERE id = ?`, flowID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlite: complete flow: %w", err)
		}
		return fmt.Errorf("sqlite: flow not pending, expired or not the principal's: %w", store.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO secrets (principal, name, sealed, updated_at)
		 SELECT principal, purpose, ?, ? FROM flows WHERE id = ?
		 ON CONFLICT (principal, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		sealedSecret, toNanos(now), flowID); err != nil {
		return fmt.Errorf("sqlite: store secret: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: complete flow: %w", err)
	}
	return nil
}

// ReplaceSecret implements store.Store.
func (s *Store) ReplaceSecret(ctx context.Context, principal, name string, old, sealed []byte, now time.Time) error {
	if sealed == nil {
		sealed = []byte{} // the column is NOT NULL
	}
	res, err := s.db.ExecContext(ctx,
		`UPDATE secrets SET sealed = ?, updated_at = ? WHERE principal = ? AND name = ? AND sealed = ?`,
		sealed, toNanos(now), principal, name, nonNil(old))
	if err != nil {
		return fmt.Errorf("sqlite: replace secret: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: replace secret: %w", err)
	} else if n == 1 {
		return nil
	}
	if _, err := s.GetSecret(ctx, principal, name); err != nil {
		return err
	}
	return fmt.Errorf("sqlite: secret changed meanwhile: %w", store.ErrConflict)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// GetSecret implements store.Store.
func (s *Store) GetSecret(ctx context.Context, principal, name string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, `SELECT sealed FROM secrets WHERE principal = ? AND name = ?`, principal, name).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get secret: %w", err)
	}
	return b, nil
}

func hashID(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// CreateSession implements store.Store. Only the hash of s.ID is stored.
func (s *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	if sess == nil {
		return errors.New("sqlite: nil session")
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO sessions (id_hash, principal, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		hashID(sess.ID), sess.Principal, sess.CSRF, toNanos(sess.CreatedAt), toNanos(sess.ExpiresAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: session id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create session: %w", err)
	}
	return nil
}

// GetSession implements store.Store; expired sessions are returned too.
func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	sess := store.Session{ID: id}
	var created, expires int64
	err := s.db.QueryRowContext(ctx,
		`SELECT principal, csrf, created_at, expires_at FROM sessions WHERE id_hash = ?`, hashID(id)).
		Scan(&sess.Principal, &sess.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get session: %w", err)
	}
	sess.CreatedAt = fromNanos(created)
	sess.ExpiresAt = fromNanos(expires)
	return &sess, nil
}

// DeleteSession implements store.Store; a missing session is not an error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, hashID(id)); err != nil {
		return fmt.Errorf("sqlite: delete session: %w", err)
	}
	return nil
}

// DeleteExpired implements store.Store.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete expired: %w", err)
	}
	defer tx.Rollback()
	var total int64
	for _, q := range []string{
		`DELETE FROM flows WHERE expires_at < ?`,
		`DELETE FROM sessions WHERE expires_at < ?`,
	} {
		res, err := tx.ExecContext(ctx, q, toNanos(now))
		if err != nil {
			return 0, fmt.Errorf("sqlite: delete expired: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("sqlite: delete expired: %w", err)
		}
		total += n
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: delete expired: %w", err)
	}
	return total, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }
