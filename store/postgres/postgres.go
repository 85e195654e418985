// Package postgres is the PostgreSQL implementation of store.Store, on
// github.com/jackc/pgx/v5 (pgxpool, native protocol).
//
// The schema is created by embedded, versioned migrations (migrations/NNNN_*.sql,
// append only) that Open applies in one transaction holding a
// transaction-level advisory lock, so several instances starting at once
// against one database apply each migration exactly once; the others wait
// and then find the schema current. schema_migrations lists the versions
// applied. Tables live in the connection's current schema (search_path), so
// a DSN parameter such as search_path=elicit selects where.
//
// As in store/sqlite, times are stored as Unix nanoseconds (BIGINT) and
// session ids only as SHA-256 hashes.
package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-elicit/elicit/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Advisory lock class ids (the first key of the two-key form). lockClass
// also namespaces per-operation locks in CompleteOperation.
const (
	migrateLockClass   int32 = 0x656c6963 // "elic"
	operationLockClass int32 = 0x656c6f70 // "elop"
	recordLockClass    int32 = 0x656c7263 // "elrc": Effects.Count
	taskLockClass      int32 = 0x656c746b // "eltk": a principal's task creations under a limit
)

// Store is a store.Store backed by a PostgreSQL database. It is safe for
// concurrent use, and several Stores (processes) may share one database.
type Store struct {
	pool    *pgxpool.Pool
	timeout time.Duration
	// full is set when a write failed with disk_full and cleared by a
	// Health probe write that works.
	full  atomic.Bool
	flows flowHub  // WatchFlow's listener (flownotify.go)
	reads rowReads // point reads pipelined under load (reads.go)
}

// Options tune Open. The zero value (or nil) gives the defaults.
type Options struct {
	// Timeout is the deadline of every store call: acquiring a pooled
	// connection (or dialing a new one), the statements and the commit.
	// A call that runs out of it fails with store.ErrUnavailable, so a
	// stalled server holds a request no longer than this. It is also the
	// server's statement_timeout unless the DSN sets one. 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxConns sizes the connection pool. 0 means the DSN's
	// pool_max_conns if it sets one, else DefaultMaxConns().
	MaxConns int32
	// DialFunc, when set, opens the connections to the server instead of
	// a net.Dialer (a proxy, or a test that watches the traffic).
	DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 5 * time.Second

// DefaultMaxConns is the pool size used when neither Options nor the DSN
// sets one: four connections per CPU the process may use (GOMAXPROCS),
// and at least 16. A request holds a connection only while its
// statements travel and run, and most of a request's time is spent
// elsewhere, so the pool serves more requests than it has connections;
// but a pool smaller than the requests that need it at once makes them
// queue for a connection (pgxpool's own default, max(4, CPUs), held most
// of 16 concurrent requests waiting on two CPUs). Several instances
// sharing a database each open this many: keep their sum below the
// server's max_connections (100 by default).
func DefaultMaxConns() int32 { return int32(max(16, 4*runtime.GOMAXPROCS(0))) }

var _ store.Store = (*Store)(nil)

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations sorted by version and
// checks that the versions are 1, 2, 3, … without gaps.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, pgErrorf("postgres: bad migration file name %q", base)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, pgErrorf("postgres: migrations are not numbered 1..n: %s", m.name)
		}
	}
	return ms, nil
}

// defaultConnectTimeout bounds a connection attempt when the DSN sets no
// connect_timeout.
const defaultConnectTimeout = 5 * time.Second

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string, as pgx accepts), checks it answers, and brings the
// schema up to date. Connection attempts time out after 5 seconds unless
// the DSN's connect_timeout says otherwise.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, true, nil)
}

// OpenWith is Open with opts.
func OpenWith(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	return open(ctx, dsn, true, opts)
}

// ErrNoSchema is OpenExisting's error for a database (search_path) that
// has no elicit schema yet.
var ErrNoSchema = errors.New("postgres: no elicit schema in this database (start elicitd against it once to create it)")

// OpenExisting is Open for tools that act on an existing deployment (the
// elicitd keys command): it returns ErrNoSchema, creating nothing, when
// no migration was ever applied in the connection's schema, and
// otherwise brings the schema up to date as Open does.
func OpenExisting(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, false, nil)
}

func open(ctx context.Context, dsn string, create bool, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, pgErrorf("postgres: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// pgx dials without a time limit by default: an unreachable
		// server would hold a request until the client gives up.
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		// The server gives up too, so a statement left behind by a
		// client past its deadline does not hold locks on.
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.Timeout.Milliseconds(), 10)
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(dsn, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns()
	}
	if o.DialFunc != nil {
		cfg.ConnConfig.DialFunc = o.DialFunc
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, pgErrorf("postgres: %w", err)
	}
	s := &Store{pool: pool, timeout: o.Timeout, reads: rowReads{limit: readsInFlight()}}
	if create {
		// Connect first, so a refused connection reads as the keys
		// command's (OpenExisting's query below) does.
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, pgErrorf("postgres: %w", err)
		}
	} else {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
			pool.Close()
			return nil, pgErrorf("postgres: %w", err)
		}
		if !exists {
			pool.Close()
			return nil, ErrNoSchema
		}
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Building an index on a large table may take longer than a
		// call: the migration is bounded by ctx alone.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return pgErrorf("postgres: migrate: %w", err)
		}
		// Held until commit or rollback: concurrent starters queue here.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, migrateLockClass); err != nil {
			return pgErrorf("postgres: migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
			return pgErrorf("postgres: migrate: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return pgErrorf("postgres: migrate: %w", err)
		}
		if have > len(ms) {
			return pgErrorf("postgres: database schema version %d is newer than this program (%d)", have, len(ms))
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return pgErrorf("postgres: migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return pgErrorf("postgres: migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

// SchemaVersion reports the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var v int
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, pgErrorf("postgres: %w", err)
	}
	return v, nil
}

func toNanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// nullNanos maps the zero time to NULL: time.Time{}.UnixNano is undefined.
func nullNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// zNanos stores the zero time as 0, and fromZNanos reads 0 back as it.
func zNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromZNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return fromNanos(n)
}

// isUniqueViolation reports SQLSTATE 23505 (unique_violation).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// CreateFlow implements store.Store. ErrConflict if f.ID exists.
func (s *Store) CreateFlow(ctx context.Context, f *store.Flow) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if f == nil {
		return errors.New("postgres: nil flow")
	}
	_, err := s.pool.Exec(ctx,
		`INSERT INTO flows (id, principal, purpose, status, created_at, expires_at, completed_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		f.ID, f.Principal, f.Purpose, string(f.Status), toNanos(f.CreatedAt), toNanos(f.ExpiresAt), nullNanos(f.CompletedAt))
	if isUniqueViolation(err) {
		return s.errorf("postgres: flow id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return s.errorf("postgres: create flow: %w", err)
	}
	return nil
}

func scanFlow(row pgx.Row) (*store.Flow, error) {
	var (
		f                store.Flow
		status           string
		created, expires int64
		completed        *int64
	)
	if err := row.Scan(&f.ID, &f.Principal, &f.Purpose, &status, &created, &expires, &completed); err != nil {
		return nil, err
	}
	f.Status = store.FlowStatus(status)
	f.CreatedAt = fromNanos(created)
	f.ExpiresAt = fromNanos(expires)
	if completed != nil {
		f.CompletedAt = fromNanos(*completed)
	}
	return &f, nil
}

const flowColumns = `id, principal, purpose, status, created_at, expires_at, completed_at`

// GetFlow implements store.Store.
func (s *Store) GetFlow(ctx context.Context, id string) (*store.Flow, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var f *store.Flow
	err := s.readRow(ctx, func(row pgx.Row) (err error) {
		f, err = scanFlow(row)
		return err
	}, `SELECT `+flowColumns+` FROM flows WHERE id = $1`, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: get flow: %w", err)
	}
	return f, nil
}

// PendingFlow implements store.Store.
func (s *Store) PendingFlow(ctx context.Context, principal, purpose string, now time.Time) (*store.Flow, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var f *store.Flow
	err := s.readRow(ctx, func(row pgx.Row) (err error) {
		f, err = scanFlow(row)
		return err
	}, `SELECT `+flowColumns+` FROM flows
		 WHERE principal = $1 AND purpose = $2 AND status = 'pending' AND expires_at > $3
		 ORDER BY created_at DESC, id DESC LIMIT 1`, principal, purpose, toNanos(now))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: pending flow: %w", err)
	}
	return f, nil
}

// CompleteFlow implements store.Store. The conditional UPDATE is the guard:
// a concurrent caller blocks on the row lock, then re-checks the WHERE
// clause against the committed row and changes nothing.
func (s *Store) CompleteFlow(ctx context.Context, flowID, principal string, sealedSecret []byte, now time.Time) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if sealedSecret == nil {
		sealedSecret = []byte{} // the column is NOT NULL
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.errorf("postgres: complete flow: %w", err)
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx,
		`UPDATE flows SET status = 'complete', completed_at = $1
		 WHERE id = $2 AND status = 'pending' AND principal = $3 AND expires_at > $1`,
		toNanos(now), flowID, principal)
	if err != nil {
		return s.errorf("postgres: complete flow: %w", err)
	}
	if tag.RowsAffected() != 1 {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM flows WHERE id = $1`, flowID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return s.errorf("postgres: complete flow: %w", err)
		}
		return s.errorf("postgres: flow not pending, expired or not the principal's: %w", store.ErrConflict)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO secrets (principal, name, sealed, updated_at)
		 SELECT principal, purpose, $1, $2 FROM flows WHERE id = $3
		 ON CONFLICT (principal, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		sealedSecret, toNanos(now), flowID); err != nil {
		return s.errorf("postgres: store secret: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.errorf("postgres: complete flow: %w", err)
	}
	return nil
}

// ReplaceSecret implements store.Store.
func (s *Store) ReplaceSecret(ctx context.Context, principal, name string, old, sealed []byte, now time.Time) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if sealed == nil {
		sealed = []byte{} // the column is NOT NULL
	}
	if old == nil {
		old = []byte{}
	}
	tag, err := s.pool.Exec(ctx,
		`UPDATE secrets SET sealed = $1, updated_at = $2 WHERE principal = $3 AND name = $4 AND sealed = $5`,
		sealed, toNanos(now), principal, name, old)
	if err != nil {
		return s.errorf("postgres: replace secret: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if _, err := s.GetSecret(ctx, principal, name); err != nil {
		return err
	}
	return s.errorf("postgres: secret changed meanwhile: %w", store.ErrConflict)
}

// GetSecret implements store.Store.
func (s *Store) GetSecret(ctx context.Context, principal, name string) ([]byte, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var b []byte
	err := s.readRow(ctx, func(row pgx.Row) error { return row.Scan(&b) },
		`SELECT sealed FROM secrets WHERE principal = $1 AND name = $2`, principal, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: get secret: %w", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// HasSecret implements store.Store.
func (s *Store) HasSecret(ctx context.Context, principal, name string) (bool, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var has bool
	err := s.readRow(ctx, func(row pgx.Row) error { return row.Scan(&has) },
		`SELECT EXISTS (SELECT 1 FROM secrets WHERE principal = $1 AND name = $2)`, principal, name)
	if err != nil {
		return false, s.errorf("postgres: has secret: %w", err)
	}
	return has, nil
}

func hashID(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// CreateSession implements store.Store. Only the hash of s.ID is stored.
func (s *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if sess == nil {
		return errors.New("postgres: nil session")
	}
	_, err := s.pool.Exec(ctx,
		`INSERT INTO sessions (id_hash, principal, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		hashID(sess.ID), sess.Principal, sess.CSRF, toNanos(sess.CreatedAt), toNanos(sess.ExpiresAt))
	if isUniqueViolation(err) {
		return s.errorf("postgres: session id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return s.errorf("postgres: create session: %w", err)
	}
	return nil
}

// GetSession implements store.Store; expired sessions are returned too.
func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	sess := store.Session{ID: id}
	var created, expires int64
	err := s.readRow(ctx, func(row pgx.Row) error { return row.Scan(&sess.Principal, &sess.CSRF, &created, &expires) },
		`SELECT principal, csrf, created_at, expires_at FROM sessions WHERE id_hash = $1`, hashID(id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: get session: %w", err)
	}
	sess.CreatedAt = fromNanos(created)
	sess.ExpiresAt = fromNanos(expires)
	return &sess, nil
}

// DeleteSession implements store.Store; a missing session is not an error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id_hash = $1`, hashID(id)); err != nil {
		return s.errorf("postgres: delete session: %w", err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// call bounds one store call by the store's timeout.
func (s *Store) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// errorf is pgErrorf for a Store: a disk_full error also makes Health
// probe writes until one works.
func (s *Store) errorf(format string, args ...any) error {
	err := pgErrorf(format, args...)
	if errors.Is(err, store.ErrStorageFull) {
		s.full.Store(true)
	}
	return err
}

// pgErrorf is fmt.Errorf for errors that come from PostgreSQL, marking
// those that store.ErrUnavailable describes (see outage).
func pgErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if reason := outage(err); reason != nil {
		return store.Unavailable(reason, err)
	}
	return err
}

// outage classifies err: store.ErrStorageFull for SQLSTATE 53100
// (disk_full); store.ErrUnavailable for a server that cannot be reached,
// is shutting down or out of resources (classes 08, 57 — which includes
// statement_timeout's query_canceled —, 53), a lock or serialization
// conflict worth retrying (55P03, 40001, 40P01), a passed deadline,
// network errors and a connection cut mid-answer; else nil.
func outage(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100":
			return store.ErrStorageFull
		case pe.Code == "55P03", pe.Code == "40001", pe.Code == "40P01":
			return store.ErrUnavailable
		}
		switch pe.Code[:2] {
		case "08", "57", "53":
			return store.ErrUnavailable
		}
		return nil
	}
	var ne net.Error
	if pgconn.Timeout(err) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded) {
		return store.ErrUnavailable
	}
	return nil
}
