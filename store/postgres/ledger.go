package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/store"
)

// CompleteOperation implements store.Ledger. The transaction first takes a
// transaction-level advisory lock on the operation id, so concurrent calls
// for one id (from this or another process) queue; the one that finds no
// ledger row runs its effect, the others then see its row and get
// ErrConflict without running theirs. The unique key on operations.id
// backs this up.
func (s *Store) CompleteOperation(ctx context.Context, op *store.Operation, effect func(context.Context, store.Effects) error) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if op == nil || op.ID == "" || len(op.ID) > store.MaxOperationIDLen {
		return errors.New("postgres: complete operation: operation id must be 1 to 128 bytes")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.errorf("postgres: complete operation: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, operationLockClass, op.ID); err != nil {
		return s.errorf("postgres: complete operation: lock: %w", err)
	}
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM operations WHERE id = $1`, op.ID).Scan(&one)
	switch {
	case err == nil:
		return s.errorf("postgres: operation already recorded: %w", store.ErrConflict)
	case !errors.Is(err, pgx.ErrNoRows):
		return s.errorf("postgres: complete operation: %w", err)
	}
	if effect != nil {
		fx := &effects{s: s, tx: tx, opID: op.ID}
		err := effect(ctx, fx)
		fx.done = true
		if err != nil {
			return err
		}
	}
	result := op.Result
	if result == nil {
		result = []byte{}
	}
	_, err = tx.Exec(ctx,
		`INSERT INTO operations (id, principal, name, outcome, result, completed_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		op.ID, op.Principal, op.Name, op.Outcome, result, zNanos(op.CompletedAt))
	if isUniqueViolation(err) {
		return s.errorf("postgres: operation already recorded: %w", store.ErrConflict)
	}
	if err != nil {
		return s.errorf("postgres: record operation: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		if isUniqueViolation(err) {
			return s.errorf("postgres: operation already recorded: %w", store.ErrConflict)
		}
		return s.errorf("postgres: complete operation: %w", err)
	}
	return nil
}

// GetOperation implements store.Ledger.
func (s *Store) GetOperation(ctx context.Context, id string) (*store.Operation, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	op := store.Operation{ID: id}
	var completed int64
	err := s.pool.QueryRow(ctx,
		`SELECT principal, name, outcome, result, completed_at FROM operations WHERE id = $1`, id).
		Scan(&op.Principal, &op.Name, &op.Outcome, &op.Result, &completed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: get operation: %w", err)
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

// queryer is what both *pgxpool.Pool and pgx.Tx offer.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) getRecord(ctx context.Context, q queryer, kind, id string) (*store.Record, error) {
	r, err := scanRecord(q.QueryRow(ctx, `SELECT `+recordColumns+` FROM records WHERE kind = $1 AND id = $2`, kind, id))
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
	return s.getRecord(ctx, s.pool, kind, id)
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

// effects is store.Effects over one transaction.
type effects struct {
	s    *Store
	tx   pgx.Tx
	opID string
	done bool
}

var errEffectsDone = errors.New("postgres: Effects used after the effect returned")

// Insert implements store.Effects. The INSERT runs under a savepoint, so a
// duplicate key leaves the transaction usable (PostgreSQL aborts the whole
// transaction on an error otherwise).
func (e *effects) Insert(ctx context.Context, r *store.Record) error {
	if e.done {
		return errEffectsDone
	}
	data, err := store.RecordData(r)
	if err != nil {
		return err
	}
	if err := store.CheckRecordKey(r.Kind, r.ID); err != nil {
		return err
	}
	sp, err := e.tx.Begin(ctx)
	if err != nil {
		return e.s.errorf("postgres: insert record: %w", err)
	}
	defer sp.Rollback(ctx)
	_, err = sp.Exec(ctx, `INSERT INTO records (`+recordColumns+`) VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8)`,
		r.Kind, r.ID, r.Principal, r.Status, data, e.opID, zNanos(r.CreatedAt), zNanos(r.UpdatedAt))
	if isUniqueViolation(err) {
		return e.s.errorf("postgres: record exists: %w", store.ErrConflict)
	}
	if err != nil {
		return e.s.errorf("postgres: insert record: %w", err)
	}
	if err := sp.Commit(ctx); err != nil {
		return e.s.errorf("postgres: insert record: %w", err)
	}
	r.Version, r.OperationID = 1, e.opID
	return nil
}

// Get implements store.Effects.
func (e *effects) Get(ctx context.Context, kind, id string) (*store.Record, error) {
	if e.done {
		return nil, errEffectsDone
	}
	return e.s.getRecord(ctx, e.tx, kind, id)
}

// Count implements store.Effects. It first takes a transaction-level
// advisory lock on (kind, principal), held until commit or rollback, then
// counts in a statement of its own, which sees every commit made before
// the lock was granted.
func (e *effects) Count(ctx context.Context, kind, principal string, since time.Time) (int64, error) {
	if e.done {
		return 0, errEffectsDone
	}
	if _, err := e.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, recordLockClass, kind, principal); err != nil {
		return 0, e.s.errorf("postgres: count records: lock: %w", err)
	}
	var n int64
	err := e.tx.QueryRow(ctx, `SELECT count(*) FROM records WHERE kind = $1 AND principal = $2 AND created_at >= $3`,
		kind, principal, zNanos(since)).Scan(&n)
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
	tag, err := e.tx.Exec(ctx,
		`UPDATE records SET status = $1, data = $2, updated_at = $3, operation_id = $4, version = version + 1
		 WHERE kind = $5 AND id = $6 AND version = $7`,
		r.Status, data, zNanos(r.UpdatedAt), e.opID, r.Kind, r.ID, r.Version)
	if err != nil {
		return e.s.errorf("postgres: update record: %w", err)
	}
	if tag.RowsAffected() != 1 {
		if _, err := e.s.getRecord(ctx, e.tx, r.Kind, r.ID); err != nil {
			return err
		}
		return e.s.errorf("postgres: record changed since it was read: %w", store.ErrConflict)
	}
	r.Version++
	r.OperationID = e.opID
	return nil
}
