package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcp-elicit/elicit/store"
)

// AddStateKey implements store.KeyRing.
func (s *Store) AddStateKey(ctx context.Context, k *store.StateKey) error {
	if err := k.Check(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO state_keys (id, sealed, created_at) VALUES (?, ?, ?)`, k.ID, k.Sealed, toNanos(k.CreatedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: state key id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: add state key: %w", err)
	}
	return nil
}

// StateKeys implements store.KeyRing.
func (s *Store) StateKeys(ctx context.Context) ([]*store.StateKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, sealed, created_at FROM state_keys ORDER BY seq DESC`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: state keys: %w", err)
	}
	defer rows.Close()
	keys := []*store.StateKey{}
	for rows.Next() {
		var k store.StateKey
		var created int64
		if err := rows.Scan(&k.ID, &k.Sealed, &created); err != nil {
			return nil, fmt.Errorf("sqlite: state keys: %w", err)
		}
		k.CreatedAt = fromNanos(created)
		keys = append(keys, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: state keys: %w", err)
	}
	return keys, nil
}

// RetireStateKey implements store.KeyRing.
func (s *Store) RetireStateKey(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: retire state key: %w", err)
	}
	defer tx.Rollback()
	var newest string
	err = tx.QueryRowContext(ctx, `SELECT id FROM state_keys ORDER BY seq DESC LIMIT 1`).Scan(&newest)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: retire state key: %w", err)
	}
	if newest == id {
		return fmt.Errorf("sqlite: state key %q seals; rotate first: %w", id, store.ErrConflict)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM state_keys WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("sqlite: retire state key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: retire state key: %w", err)
	}
	return nil
}
