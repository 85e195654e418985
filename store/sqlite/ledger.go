package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// CompleteOperation implements store.Ledger. It runs on the writer (see
// the package doc): calls run one after another in its transaction, so
// the one that finds no ledger row runs its effect and the others, even in
// the same transaction, see its row and get it in a store.RecordedError
// without running theirs. No call returns before the transaction committed
// or rolled back: an ErrConflict always names a committed row.
func (s *Store) CompleteOperation(ctx context.Context, op *store.Operation, effect func(context.Context, store.Effects) error) error {
	if op == nil || op.ID == "" || len(op.ID) > store.MaxOperationIDLen {
		return errors.New("sqlite: complete operation: operation id must be 1 to 128 bytes")
	}
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		if err := s.unrecorded(ctx, w, op.ID, "complete operation"); err != nil {
			return err
		}
		if effect != nil {
			fx := &effects{s: s, w: w, opID: op.ID}
			err := effect(ctx, fx)
			fx.done = true
			if err != nil {
				return err
			}
		}
		return s.insertOperation(ctx, w, op)
	})
}

// unrecorded returns nil if w's transaction finds no ledger row id, and
// else a *store.RecordedError carrying it; what names the call.
func (s *Store) unrecorded(ctx context.Context, w *wtx, id, what string) error {
	recorded, err := scanOperation(w.queryRow(ctx, selectOperation, id), id)
	switch {
	case err == nil:
		return fmt.Errorf("sqlite: %s: %w", what, &store.RecordedError{Op: recorded})
	case !errors.Is(err, store.ErrNotFound):
		return s.errorf("sqlite: %s: %w", what, err)
	}
	return nil
}

// insertOperation writes op's ledger row in w's transaction.
func (s *Store) insertOperation(ctx context.Context, w *wtx, op *store.Operation) error {
	result := op.Result
	if result == nil {
		result = []byte{}
	}
	_, err := w.exec(ctx,
		`INSERT INTO operations (id, principal, name, outcome, result, completed_at) VALUES (?, ?, ?, ?, ?, ?)`,
		op.ID, op.Principal, op.Name, op.Outcome, result, zNanos(op.CompletedAt))
	if isUniqueViolation(err) {
		return s.errorf("sqlite: operation already recorded: %w", store.ErrConflict)
	}
	if err != nil {
		return s.errorf("sqlite: record operation: %w", err)
	}
	return nil
}

// GetOperation implements store.Ledger.
func (s *Store) GetOperation(ctx context.Context, id string) (*store.Operation, error) {
	op, err := scanOperation(s.queryRow(ctx, selectOperation, id), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, s.errorf("sqlite: get operation: %w", err)
	}
	return op, err
}

const selectOperation = `SELECT principal, name, outcome, result, completed_at FROM operations WHERE id = ?`

// scanOperation reads the row of selectOperation: store.ErrNotFound if
// there is none.
func scanOperation(row rowScanner, id string) (*store.Operation, error) {
	op := store.Operation{ID: id}
	var completed int64
	err := row.Scan(&op.Principal, &op.Name, &op.Outcome, &op.Result, &completed)
	if errors.Is(err, sql.ErrNoRows) {
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

func scanRecord(row rowScanner) (*store.Record, error) {
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

// queryRower is a read connection (Store) or the writer's transaction
// (wtx).
type queryRower interface {
	queryRow(ctx context.Context, q string, args ...any) rowScanner
}

func (s *Store) getRecord(ctx context.Context, q queryRower, kind, id string) (*store.Record, error) {
	r, err := scanRecord(q.queryRow(ctx, `SELECT `+recordColumns+` FROM records WHERE kind = ? AND id = ?`, kind, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: get record: %w", err)
	}
	return r, nil
}

// GetRecord implements store.Ledger.
func (s *Store) GetRecord(ctx context.Context, kind, id string) (*store.Record, error) {
	return s.getRecord(ctx, s, kind, id)
}

// ListRecords implements store.Ledger.
func (s *Store) ListRecords(ctx context.Context, kind, principal string) ([]*store.Record, error) {
	out := []*store.Record{}
	err := s.queryRows(ctx, `SELECT `+recordColumns+` FROM records WHERE kind = ? AND principal = ? ORDER BY created_at, id`,
		[]any{kind, principal}, func(rows *sql.Rows) error {
			r, err := scanRecord(rows)
			if err == nil {
				out = append(out, r)
			}
			return err
		})
	if err != nil {
		return nil, s.errorf("sqlite: list records: %w", err)
	}
	return out, nil
}

// effects is store.Effects over the writer's transaction.
type effects struct {
	s    *Store
	w    *wtx
	opID string
	done bool
}

var errEffectsDone = errors.New("sqlite: Effects used after the effect returned")

// Insert implements store.Effects.
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
	_, err = e.w.exec(ctx, `INSERT INTO records (`+recordColumns+`) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`,
		r.Kind, r.ID, r.Principal, r.Status, data, e.opID, zNanos(r.CreatedAt), zNanos(r.UpdatedAt))
	if isUniqueViolation(err) {
		return e.s.errorf("sqlite: record exists: %w", store.ErrConflict)
	}
	if err != nil {
		return e.s.errorf("sqlite: insert record: %w", err)
	}
	r.Version, r.OperationID = 1, e.opID
	return nil
}

// Get implements store.Effects.
func (e *effects) Get(ctx context.Context, kind, id string) (*store.Record, error) {
	if e.done {
		return nil, errEffectsDone
	}
	return e.s.getRecord(ctx, e.w, kind, id)
}

// Count implements store.Effects. The writer's transaction holds the
// database's write lock (IMMEDIATE, see OpenWith) and runs one effect at a
// time, which is the lock Count promises.
func (e *effects) Count(ctx context.Context, kind, principal string, since time.Time) (int64, error) {
	if e.done {
		return 0, errEffectsDone
	}
	var n int64
	err := e.w.queryRow(ctx, `SELECT count(*) FROM records WHERE kind = ? AND principal = ? AND created_at >= ?`,
		kind, principal, zNanos(since)).Scan(&n)
	if err != nil {
		return 0, e.s.errorf("sqlite: count records: %w", err)
	}
	return n, nil
}

// Update implements store.Effects; the version condition in the WHERE
// clause is the optimistic lock.
func (e *effects) Update(ctx context.Context, r *store.Record) error {
	if e.done {
		return errEffectsDone
	}
	data, err := store.RecordData(r)
	if err != nil {
		return err
	}
	res, err := e.w.exec(ctx,
		`UPDATE records SET status = ?, data = ?, updated_at = ?, operation_id = ?, version = version + 1
		 WHERE kind = ? AND id = ? AND version = ?`,
		r.Status, data, zNanos(r.UpdatedAt), e.opID, r.Kind, r.ID, r.Version)
	if err != nil {
		return e.s.errorf("sqlite: update record: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return e.s.errorf("sqlite: update record: %w", err)
	}
	if n != 1 {
		if _, err := e.s.getRecord(ctx, e.w, r.Kind, r.ID); err != nil {
			return err
		}
		return e.s.errorf("sqlite: record changed since it was read: %w", store.ErrConflict)
	}
	r.Version++
	r.OperationID = e.opID
	return nil
}

// zNanos stores the zero time as 0 (its UnixNano is undefined), and
// fromZNanos reads 0 back as the zero time.
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
