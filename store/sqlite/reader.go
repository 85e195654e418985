package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// The read pool: MaxConns query_only connections, each with the
// statements prepared on it, handed out one call at a time. A call waits
// for a free connection within the store's deadline; its statements then
// run without a cancellable context (a point read takes microseconds, and
// the driver would otherwise start a goroutine per statement to watch the
// context).

// reader is one read connection and its prepared statements.
type reader struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

// acquire takes a read connection, opening it on first use; release
// gives it back.
func (s *Store) acquire(ctx context.Context) (*reader, error) {
	var r *reader
	select {
	case r = <-s.readers:
	default:
		cctx, cancel := s.call(ctx)
		defer cancel()
		select {
		case r = <-s.readers:
		case <-cctx.Done():
			return nil, s.errorf("sqlite: waiting for a read connection: %w", cctx.Err())
		}
	}
	if r.conn == nil {
		c, err := s.db.Conn(context.WithoutCancel(ctx))
		if err != nil {
			s.readers <- r
			return nil, s.errorf("sqlite: %w", err)
		}
		r.conn, r.stmts = c, map[string]*sql.Stmt{}
	}
	return r, nil
}

// release returns r to the pool; after err that says the connection is
// unusable, r is closed and reopened at its next use.
func (s *Store) release(r *reader, err error) {
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		r.close()
	}
	s.readers <- r
}

func (r *reader) close() {
	for _, st := range r.stmts {
		st.Close()
	}
	if r.conn != nil {
		r.conn.Close()
	}
	r.conn, r.stmts = nil, nil
}

// stmt returns r's prepared statement for q.
func (r *reader) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := r.stmts[q]; ok {
		return st, nil
	}
	st, err := r.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	r.stmts[q] = st
	return st, nil
}

// pooledRow is a row that gives its connection back once scanned.
type pooledRow struct {
	s   *Store
	r   *reader
	row *sql.Row
}

func (p *pooledRow) Scan(dest ...any) error {
	err := p.row.Scan(dest...)
	p.s.release(p.r, err)
	return err
}

// queryRow runs q on a read connection. Call Scan on the result exactly
// once: it returns the connection to the pool.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	if err := ctx.Err(); err != nil {
		return errRow{err}
	}
	r, err := s.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	bg := context.WithoutCancel(ctx)
	st, err := r.stmt(bg, q)
	if err != nil {
		s.release(r, err)
		return errRow{err}
	}
	return &pooledRow{s: s, r: r, row: st.QueryRowContext(bg, args...)}
}

// queryRows runs q on a read connection and each on its rows.
func (s *Store) queryRows(ctx context.Context, q string, args []any, each func(*sql.Rows) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { s.release(r, err) }()
	bg := context.WithoutCancel(ctx)
	st, err := r.stmt(bg, q)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(bg, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// closeReaders waits for every read connection to come back and closes
// them.
func (s *Store) closeReaders() {
	for range cap(s.readers) {
		(<-s.readers).close()
	}
}
