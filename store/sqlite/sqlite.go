// Package sqlite is the SQLite implementation of store.Store, using the
// pure-Go driver modernc.org/sqlite (no cgo).
//
// Times are stored as Unix nanoseconds (INTEGER), so they round-trip exactly
// for years 1678–2262. Session ids are stored only as SHA-256 hashes: a copy
// of the database file does not hand out live browser sessions.
//
// Writes and reads take separate paths. Every write (a ledger completion,
// a flow, a session, a sweep batch) runs on one writer goroutine over the
// store's single write connection, in a savepoint of a transaction it
// shares with the writes that queued meanwhile (group commit: one COMMIT,
// one WAL sync, for all of them); so writers of one Store never wait for
// SQLite's lock, and none sleeps in its busy handler. Reads run on a pool
// of read-only connections, which WAL journaling lets proceed alongside
// the writer. Statements are prepared once per connection and reused.
// The store's deadline (Options.Timeout) bounds the wait for the writer or
// a read connection; a statement, once started, runs to its end (an
// interrupt would roll back the writes sharing its transaction, and a
// read takes microseconds).
//
// Durability: the database uses WAL with synchronous=FULL, so a COMMIT
// returns only after the WAL is synced to disk, and a write is
// acknowledged only after its COMMIT. An acknowledged operation therefore
// survives a crash of the process, of the operating system and a power
// cut; with synchronous=NORMAL the last commits before a power cut could
// be lost, and a retry of such an operation would run its effect a second
// time instead of finding it recorded.
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-elicit/elicit/store"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is a store.Store backed by one SQLite database file. It is safe for
// concurrent use.
type Store struct {
	// db opens the read connections, which readers hands out (see
	// reader.go); w owns the write connection.
	db      *sql.DB
	readers chan *reader
	w       *writer
	timeout time.Duration
	// closeOnce makes Close idempotent; closeErr is its result.
	closeOnce sync.Once
	closeErr  error
	// full is set when a write failed with SQLITE_FULL and cleared by a
	// Health probe write that works.
	full atomic.Bool
}

// Options tune Open. The zero value (or nil) gives the defaults.
type Options struct {
	// Timeout is the deadline of every store call: waiting for one of the
	// MaxConns read connections, waiting for the writer (the writes
	// queued before, and the write lock if another process holds it:
	// SQLite's busy timeout is set to Timeout too), the statements and
	// the commit. A call that runs out of it fails with
	// store.ErrUnavailable. 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxConns caps the open read connections (database/sql's pool);
	// readers beyond it wait, within Timeout. Writes use one connection
	// more, of their own. 0 means DefaultMaxConns.
	MaxConns int
	// busyTimeout, when set, replaces Timeout as SQLite's busy timeout
	// (tests: 0 < busyTimeout < 1ms disables SQLite's busy handler).
	busyTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxConns = 8
)

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
	// 7: what Sweep looks up: operations by age, whether a record still
	// refers to one, records of a kind by age.
	`CREATE INDEX operations_completed_at ON operations (completed_at);
	CREATE INDEX records_operation ON records (operation_id);
	CREATE INDEX records_kind_updated ON records (kind, updated_at);`,
	// 8: tasks of the tasks extension (store.Task, mcpserver.TaskStore);
	// expires_at is NULL for no expiry; maps are JSON objects.
	`CREATE TABLE tasks (
		id             TEXT PRIMARY KEY,
		principal      TEXT NOT NULL,
		tool           TEXT NOT NULL,
		arguments      BLOB,
		capabilities   BLOB,
		status         TEXT NOT NULL,
		status_message TEXT NOT NULL,
		created_at     INTEGER NOT NULL,
		updated_at     INTEGER NOT NULL,
		expires_at     INTEGER,
		operation_id   TEXT NOT NULL,
		round          INTEGER NOT NULL,
		asked          BLOB,
		input_requests BLOB,
		responses      BLOB,
		result         BLOB,
		error          BLOB,
		lease_until    INTEGER
	);
	CREATE INDEX tasks_expires_at ON tasks (expires_at);`,
	// 9: a user's live tasks, which CreateTask counts against its limit
	// (the statuses are literals: a partial index serves only queries
	// that name them the same way).
	`CREATE INDEX tasks_live ON tasks (principal) WHERE status IN ('working', 'input_required');`,
}

// Open is OpenWith with the default Options.
func Open(path string) (*Store, error) { return OpenWith(path, nil) }

// OpenWith opens (creating if needed) the database file at path and brings
// its schema up to date. The parent directory is created with mode 0700
// and a new file with mode 0600, since it holds sealed secrets and session
// data. The write connection uses WAL journaling with synchronous=FULL
// (see the package doc), IMMEDIATE transactions, savepoint journals in
// memory, a WAL kept to 64 MiB after checkpoints, and a busy timeout of
// opts.Timeout (only another process's writer can hold the lock); the
// read connections are query_only. A connection of its own checkpoints
// the WAL into the database file (PASSIVE, never waiting) a moment after
// writes, so that no commit, and none of the writes sharing it, waits for
// a checkpoint. All have foreign keys on.
func OpenWith(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
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

	busy := o.Timeout
	if o.busyTimeout > 0 {
		busy = o.busyTimeout
	}
	wdb, err := sql.Open("sqlite", dsn(abs, busy, connWrite))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// One connection, kept open: it holds the prepared statements.
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	s := &Store{timeout: o.Timeout}
	// The write connection sets WAL and the schema before any reader
	// opens.
	if err := s.migrate(context.Background(), wdb); err != nil {
		wdb.Close()
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(abs, busy, connRead))
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	ckdb, err := sql.Open("sqlite", dsn(abs, busy, connCheckpoint))
	if err != nil {
		db.Close()
		wdb.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	ckdb.SetMaxOpenConns(1)
	ckdb.SetMaxIdleConns(1)
	s.db = db
	s.readers = make(chan *reader, o.MaxConns)
	for range o.MaxConns {
		s.readers <- &reader{}
	}
	s.w = newWriter(s, wdb, ckdb)
	return s, nil
}

// Connection roles.
const (
	connWrite = iota
	connRead
	connCheckpoint
)

// dsn builds a file: URI so that path characters such as '?' or '#' cannot be
// mistaken for query parameters.
func dsn(abs string, busy time.Duration, role int) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letter
	}
	u := url.URL{Scheme: "file", Path: p}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	switch role {
	case connWrite:
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "journal_size_limit(67108864)")
		q.Add("_pragma", "temp_store(MEMORY)")
		// The writer's checkpointer does this off the commit path (see
		// writer); the connection itself only if it falls far behind.
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walAutocheckpoint))
		q.Set("_txlock", "immediate")
	case connRead:
		q.Add("_pragma", "query_only(1)")
	}
	return u.String() + "?" + q.Encode()
}

func (s *Store) migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return s.errorf("sqlite: migrate: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return s.errorf("sqlite: migrate: %w", err)
	}
	if have > len(migrations) {
		return s.errorf("sqlite: database schema version %d is newer than this program (%d)", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
			return s.errorf("sqlite: migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return s.errorf("sqlite: migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, v); err != nil {
			return s.errorf("sqlite: migration %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("sqlite: migrate: %w", err)
	}
	return nil
}

// SchemaVersion reports the number of migrations applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, s.errorf("sqlite: %w", err)
	}
	return v, nil
}

// write runs fn on the writer (see writer.write) under the call deadline.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, w *wtx) error) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	return s.w.write(ctx, fn)
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

// call bounds one store call by the store's timeout.
func (s *Store) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// errorf is fmt.Errorf for errors from SQLite, marking those that
// store.ErrUnavailable describes: the deadline passed (waiting for a
// connection, the busy handler or a statement interrupted), the database
// busy or locked past the busy timeout, and (store.ErrStorageFull) the
// disk full, which also makes Health probe writes until one works.
func (s *Store) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	switch outage(err) {
	case store.ErrStorageFull:
		s.full.Store(true)
		return store.Unavailable(store.ErrStorageFull, err)
	case store.ErrUnavailable:
		return store.Unavailable(store.ErrUnavailable, err)
	}
	return err
}

// outage classifies err: store.ErrStorageFull, store.ErrUnavailable or nil.
func outage(err error) error {
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_FULL:
			return store.ErrStorageFull
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_INTERRUPT:
			return store.ErrUnavailable
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return store.ErrUnavailable
	}
	return nil
}

// CreateFlow implements store.Store. ErrConflict if f.ID exists.
func (s *Store) CreateFlow(ctx context.Context, f *store.Flow) error {
	if f == nil {
		return errors.New("sqlite: nil flow")
	}
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		_, err := w.exec(ctx,
			`INSERT INTO flows (id, principal, purpose, status, created_at, expires_at, completed_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?)`,
			f.ID, f.Principal, f.Purpose, string(f.Status), toNanos(f.CreatedAt), toNanos(f.ExpiresAt), nullNanos(f.CompletedAt))
		if isUniqueViolation(err) {
			return s.errorf("sqlite: flow id exists: %w", store.ErrConflict)
		}
		if err != nil {
			return s.errorf("sqlite: create flow: %w", err)
		}
		return nil
	})
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
	f, err := scanFlow(s.queryRow(ctx, `SELECT `+flowColumns+` FROM flows WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: get flow: %w", err)
	}
	return f, nil
}

// PendingFlow implements store.Store.
func (s *Store) PendingFlow(ctx context.Context, principal, purpose string, now time.Time) (*store.Flow, error) {
	f, err := scanFlow(s.queryRow(ctx, `SELECT `+flowColumns+` FROM flows
		 WHERE principal = ? AND purpose = ? AND status = 'pending' AND expires_at > ?
		 ORDER BY created_at DESC, id DESC LIMIT 1`, principal, purpose, now.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: pending flow: %w", err)
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
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		res, err := w.exec(ctx,
			`UPDATE flows SET status = 'complete', completed_at = ?
			 WHERE id = ? AND status = 'pending' AND principal = ? AND expires_at > ?`,
			toNanos(now), flowID, principal, toNanos(now))
		if err != nil {
			return s.errorf("sqlite: complete flow: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.errorf("sqlite: complete flow: %w", err)
		}
		if n != 1 {
			var one int
			err := w.queryRow(ctx, `SELECT 1 FROM flows WHERE id = ?`, flowID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			if err != nil {
				return s.errorf("sqlite: complete flow: %w", err)
			}
			return s.errorf("sqlite: flow not pending, expired or not the principal's: %w", store.ErrConflict)
		}
		if _, err := w.exec(ctx,
			`INSERT INTO secrets (principal, name, sealed, updated_at)
			 SELECT principal, purpose, ?, ? FROM flows WHERE id = ?
			 ON CONFLICT (principal, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
			sealedSecret, toNanos(now), flowID); err != nil {
			return s.errorf("sqlite: store secret: %w", err)
		}
		return nil
	})
}

// ReplaceSecret implements store.Store.
func (s *Store) ReplaceSecret(ctx context.Context, principal, name string, old, sealed []byte, now time.Time) error {
	if sealed == nil {
		sealed = []byte{} // the column is NOT NULL
	}
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		res, err := w.exec(ctx,
			`UPDATE secrets SET sealed = ?, updated_at = ? WHERE principal = ? AND name = ? AND sealed = ?`,
			sealed, toNanos(now), principal, name, nonNil(old))
		if err != nil {
			return s.errorf("sqlite: replace secret: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.errorf("sqlite: replace secret: %w", err)
		} else if n == 1 {
			return nil
		}
		var one int
		err = w.queryRow(ctx, `SELECT 1 FROM secrets WHERE principal = ? AND name = ?`, principal, name).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return s.errorf("sqlite: replace secret: %w", err)
		}
		return s.errorf("sqlite: secret changed meanwhile: %w", store.ErrConflict)
	})
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
	err := s.queryRow(ctx, `SELECT sealed FROM secrets WHERE principal = ? AND name = ?`, principal, name).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: get secret: %w", err)
	}
	return b, nil
}

// HasSecret implements store.Store.
func (s *Store) HasSecret(ctx context.Context, principal, name string) (bool, error) {
	var has bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM secrets WHERE principal = ? AND name = ?)`, principal, name).Scan(&has)
	if err != nil {
		return false, s.errorf("sqlite: has secret: %w", err)
	}
	return has, nil
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
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		_, err := w.exec(ctx,
			`INSERT INTO sessions (id_hash, principal, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			hashID(sess.ID), sess.Principal, sess.CSRF, toNanos(sess.CreatedAt), toNanos(sess.ExpiresAt))
		if isUniqueViolation(err) {
			return s.errorf("sqlite: session id exists: %w", store.ErrConflict)
		}
		if err != nil {
			return s.errorf("sqlite: create session: %w", err)
		}
		return nil
	})
}

// GetSession implements store.Store; expired sessions are returned too.
func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	sess := store.Session{ID: id}
	var created, expires int64
	err := s.queryRow(ctx,
		`SELECT principal, csrf, created_at, expires_at FROM sessions WHERE id_hash = ?`, hashID(id)).
		Scan(&sess.Principal, &sess.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: get session: %w", err)
	}
	sess.CreatedAt = fromNanos(created)
	sess.ExpiresAt = fromNanos(expires)
	return &sess, nil
}

// DeleteSession implements store.Store; a missing session is not an error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		if _, err := w.exec(ctx, `DELETE FROM sessions WHERE id_hash = ?`, hashID(id)); err != nil {
			return s.errorf("sqlite: delete session: %w", err)
		}
		return nil
	})
}

// Close stops the writer (writes still queued fail), waits for the reads
// in progress and closes the database. Later calls return the first's
// result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.w.close()
		s.closeReaders()
		s.closeErr = errors.Join(s.db.Close(), s.w.db.Close(), s.w.ckdb.Close())
	})
	return s.closeErr
}
