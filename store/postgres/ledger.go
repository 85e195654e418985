package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcp-elicit/elicit/store"
)

// CompleteOperation implements store.Ledger, in as few round trips as
// the contract allows: one that begins the transaction, takes a
// transaction-level advisory lock on the operation id (so concurrent calls
// for one id, from this or another process, queue) and reads the id's
// ledger row; then the effect, whose writes are sent ahead with whatever
// it does next rather than each on its own; and one that carries those
// writes, the ledger row and COMMIT. An effect that only inserts costs no
// round trip of its own: two in all, and a caller that relies on the
// store.RecordedError of a replay needs no lookup before. The call that
// finds no ledger row runs its effect; the others then find its row and
// get it in a store.RecordedError without running theirs (a replay costs
// a second round trip, the ROLLBACK). The unique key on operations.id
// backs this up.
//
// A write sent ahead cannot report its own failure to the effect (a
// duplicate record id is found only when it reaches the server), so if one
// fails, the transaction is rolled back and the whole call runs again with
// every write sent at once, where each reports to the effect as it is
// made: the effect then runs a second time (store.Ledger allows it).
func (s *Store) CompleteOperation(ctx context.Context, op *store.Operation, effect func(context.Context, store.Effects) error) error {
	if op == nil || op.ID == "" || len(op.ID) > store.MaxOperationIDLen {
		return errors.New("postgres: complete operation: operation id must be 1 to 128 bytes")
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	err := s.completeOperation(ctx, op, effect, true)
	if errors.Is(err, errRerun) {
		err = s.completeOperation(ctx, op, effect, false)
	}
	return err
}

// errRerun says that a write sent ahead failed: the transaction was rolled
// back and the call must run again writing as it goes.
var errRerun = errors.New("postgres: a write sent ahead failed; running the operation again")

func (s *Store) completeOperation(ctx context.Context, op *store.Operation, effect func(context.Context, store.Effects) error, ahead bool) error {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return s.errorf("postgres: complete operation: %w", err)
	}
	defer release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, operationLockClass, op.ID)
	b.Queue(selectOperation, op.ID)
	var recorded *store.Operation
	if err := sendBatch(ctx, conn, b, func(br pgx.BatchResults) (err error) {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		recorded, err = scanOperation(br.QueryRow(), op.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		return s.errorf("postgres: complete operation: %w", err)
	}
	if recorded != nil {
		return fmt.Errorf("postgres: complete operation: %w", &store.RecordedError{Op: recorded})
	}
	fx := &effects{s: s, conn: conn, opID: op.ID, ahead: ahead}
	if effect != nil {
		err := effect(ctx, fx)
		fx.done = true
		if fx.rerun {
			return errRerun
		}
		if err != nil {
			return err
		}
	}
	result := op.Result
	if result == nil {
		result = []byte{}
	}
	b = &pgx.Batch{}
	b.Queue(`INSERT INTO operations (id, principal, name, outcome, result, completed_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		op.ID, op.Principal, op.Name, op.Outcome, result, zNanos(op.CompletedAt))
	b.Queue(`COMMIT`)
	err = fx.send(ctx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("operation already recorded: %w", store.ErrConflict)
			}
			return fmt.Errorf("record operation: %w", err)
		}
		_, err := br.Exec()
		return err
	})
	if fx.rerun {
		return errRerun
	}
	if err != nil {
		return s.errorf("postgres: complete operation: %w", err)
	}
	return nil
}

// acquire takes a pool connection for a transaction sent by hand (BEGIN
// and COMMIT in batches); release rolls back whatever is left open on it
// and gives it back.
func (s *Store) acquire(ctx context.Context) (conn *pgx.Conn, release func(), err error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn = pc.Conn()
	return conn, func() {
		if conn.PgConn().TxStatus() != 'I' {
			// Roll back here rather than let the pool close the
			// connection; a broken one is closed anyway.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
			_, _ = conn.Exec(rctx, `ROLLBACK`)
			cancel()
		}
		pc.Release()
	}, nil
}

// sendBatch sends b in one round trip and reads its results with read.
func sendBatch(ctx context.Context, conn *pgx.Conn, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	br := conn.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// lockedRow runs, in one round trip on conn: BEGIN; the advisory lock
// (class, hashtext(key)); the statement sql with args, whose one row scan
// reads; COMMIT. The lock is a statement of its own because a statement's
// snapshot predates a lock it takes itself: only a later statement sees
// every commit made before the lock was granted. A statement that fails
// aborts the transaction and the COMMIT is not run; acquire's release
// rolls the connection back.
func lockedRow(ctx context.Context, conn *pgx.Conn, class int32, key, sql string, args []any, scan func(pgx.Row) error) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, class, key)
	b.Queue(sql, args...)
	b.Queue(`COMMIT`)
	return sendBatch(ctx, conn, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if err := scan(br.QueryRow()); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	})
}

// GetOperation implements store.Ledger.
func (s *Store) GetOperation(ctx context.Context, id string) (*store.Operation, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var op *store.Operation
	err := s.readRow(ctx, func(row pgx.Row) (err error) {
		op, err = scanOperation(row, id)
		return err
	}, selectOperation, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, err
	case err != nil:
		return nil, s.errorf("postgres: get operation: %w", err)
	}
	return op, nil
}

const selectOperation = `SELECT principal, name, outcome, result, completed_at FROM operations WHERE id = $1`

// scanOperation reads the row of selectOperation: store.ErrNotFound if
// there is none.
func scanOperation(row pgx.Row, id string) (*store.Operation, error) {
	op := store.Operation{ID: id}
	var completed int64
	err := row.Scan(&op.Principal, &op.Name, &op.Outcome, &op.Result, &completed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if op.Result == nil {
		op.Result = []byte{}
	}
	op.CompletedAt = fromZNanos(completed)
	return &op, nil
}

const recordColumns = `kind, id, principal, status, data, operation_id, version, created_at, updated_at`

func scanRecord(row pgx.Row) (*store.Record, error) {
	var (
		r                store.Record
		created, updated int64
	)
	if err := row.Scan(&r.Kind, &r.ID, &r.Principal, &r.Status, &r.Data, &r.OperationID, &r.Version, &created, &updated); err != nil {
		return nil, err
	}
	if r.Data == nil {
		r.Data = []byte{}
	}
	r.CreatedAt, r.UpdatedAt = fromZNanos(created), fromZNanos(updated)
	return &r, nil
}

func (s *Store) getRecord(ctx context.Context, kind, id string) (*store.Record, error) {
	var r *store.Record
	err := s.readRow(ctx, func(row pgx.Row) (err error) {
		r, err = scanRecord(row)
		return err
	}, `SELECT `+recordColumns+` FROM records WHERE kind = $1 AND id = $2`, kind, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: get record: %w", err)
	}
	return r, nil
}

// GetRecord implements store.Ledger.
func (s *Store) GetRecord(ctx context.Context, kind, id string) (*store.Record, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	return s.getRecord(ctx, kind, id)
}

// ListRecords implements store.Ledger.
func (s *Store) ListRecords(ctx context.Context, kind, principal string) ([]*store.Record, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx,
		`SELECT `+recordColumns+` FROM records WHERE kind = $1 AND principal = $2 ORDER BY created_at, id`, kind, principal)
	if err != nil {
		return nil, s.errorf("postgres: list records: %w", err)
	}
	defer rows.Close()
	out := []*store.Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, s.errorf("postgres: list records: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("postgres: list records: %w", err)
	}
	return out, nil
}

// effects is store.Effects over the transaction open on conn. With ahead
// set, Insert only queues its statement (pending), to be sent with the
// next statement that needs an answer, or with the commit.
type effects struct {
	s     *Store
	conn  *pgx.Conn
	opID  string
	ahead bool
	// pending are the writes not yet sent.
	pending []pendingWrite
	// rerun is set once a pending write failed (see CompleteOperation).
	rerun bool
	done  bool
}

type pendingWrite struct {
	sql  string
	args []any
}

var errEffectsDone = errors.New("postgres: Effects used after the effect returned")

// send sends the pending writes and then b's statements in one round
// trip; read reads b's results. A pending write that fails sets e.rerun
// and gives errRerun.
func (e *effects) send(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	if e.rerun {
		return errRerun
	}
	n := len(e.pending)
	if n > 0 {
		all := &pgx.Batch{}
		for _, w := range e.pending {
			all.Queue(w.sql, w.args...)
		}
		all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
		b = all
		e.pending = e.pending[:0]
	}
	return sendBatch(ctx, e.conn, b, func(br pgx.BatchResults) error {
		for range n {
			if _, err := br.Exec(); err != nil {
				if isUniqueViolation(err) {
					e.rerun = true
					return errRerun
				}
				return fmt.Errorf("insert record: %w", err)
			}
		}
		return read(br)
	})
}

// Insert implements store.Effects. Sent ahead (see CompleteOperation), it
// is a plain INSERT, whose duplicate key fails the transaction; sent at
// once, ON CONFLICT DO NOTHING, so that a duplicate leaves the
// transaction usable without a savepoint and reads as ErrConflict.
func (e *effects) Insert(ctx context.Context, r *store.Record) error {
	if e.done {
		return errEffectsDone
	}
	if e.rerun {
		return errRerun
	}
	data, err := store.RecordData(r)
	if err != nil {
		return err
	}
	if err := store.CheckRecordKey(r.Kind, r.ID); err != nil {
		return err
	}
	const insert = `INSERT INTO records (` + recordColumns + `) VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8)`
	args := []any{r.Kind, r.ID, r.Principal, r.Status, data, e.opID, zNanos(r.CreatedAt), zNanos(r.UpdatedAt)}
	if e.ahead {
		e.pending = append(e.pending, pendingWrite{insert, args})
		r.Version, r.OperationID = 1, e.opID
		return nil
	}
	var tag pgconn.CommandTag
	b := &pgx.Batch{}
	b.Queue(insert+` ON CONFLICT (kind, id) DO NOTHING`, args...)
	if err := e.send(ctx, b, func(br pgx.BatchResults) (err error) {
		tag, err = br.Exec()
		return err
	}); err != nil {
		return e.s.errorf("postgres: insert record: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return e.s.errorf("postgres: record exists: %w", store.ErrConflict)
	}
	r.Version, r.OperationID = 1, e.opID
	return nil
}

// Get implements store.Effects.
func (e *effects) Get(ctx context.Context, kind, id string) (*store.Record, error) {
	if e.done {
		return nil, errEffectsDone
	}
	var r *store.Record
	b := &pgx.Batch{}
	b.Queue(`SELECT `+recordColumns+` FROM records WHERE kind = $1 AND id = $2`, kind, id)
	err := e.send(ctx, b, func(br pgx.BatchResults) (err error) {
		r, err = scanRecord(br.QueryRow())
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, e.s.errorf("postgres: get record: %w", err)
	}
	return r, nil
}

// Count implements store.Effects. It first takes a transaction-level
// advisory lock on (kind, principal), held until commit or rollback, then
// counts in a statement of its own, which sees every commit made before
// the lock was granted; both go in one round trip.
func (e *effects) Count(ctx context.Context, kind, principal string, since time.Time) (int64, error) {
	if e.done {
		return 0, errEffectsDone
	}
	var n int64
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, recordLockClass, kind, principal)
	b.Queue(`SELECT count(*) FROM records WHERE kind = $1 AND principal = $2 AND created_at >= $3`, kind, principal, zNanos(since))
	err := e.send(ctx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return br.QueryRow().Scan(&n)
	})
	if err != nil {
		return 0, e.s.errorf("postgres: count records: %w", err)
	}
	return n, nil
}

// Update implements store.Effects; the version condition in the WHERE
// clause is the optimistic lock (a concurrent writer blocks on the row
// lock, then re-checks the condition against the committed row).
func (e *effects) Update(ctx context.Context, r *store.Record) error {
	if e.done {
		return errEffectsDone
	}
	data, err := store.RecordData(r)
	if err != nil {
		return err
	}
	var tag pgconn.CommandTag
	b := &pgx.Batch{}
	b.Queue(`UPDATE records SET status = $1, data = $2, updated_at = $3, operation_id = $4, version = version + 1
		 WHERE kind = $5 AND id = $6 AND version = $7`,
		r.Status, data, zNanos(r.UpdatedAt), e.opID, r.Kind, r.ID, r.Version)
	if err := e.send(ctx, b, func(br pgx.BatchResults) (err error) {
		tag, err = br.Exec()
		return err
	}); err != nil {
		return e.s.errorf("postgres: update record: %w", err)
	}
	if tag.RowsAffected() != 1 {
		if _, err := e.Get(ctx, r.Kind, r.ID); err != nil {
			return err
		}
		return e.s.errorf("postgres: record changed since it was read: %w", store.ErrConflict)
	}
	r.Version++
	r.OperationID = e.opID
	return nil
}
