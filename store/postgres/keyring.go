package postgres

import (
	"context"
	"fmt"

	"github.com/mcp-elicit/elicit/store"
)

// AddStateKey implements store.KeyRing.
func (s *Store) AddStateKey(ctx context.Context, k *store.StateKey) error {
	if err := k.Check(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO state_keys (id, sealed, created_at) VALUES ($1, $2, $3)`, k.ID, k.Sealed, toNanos(k.CreatedAt))
	if isUniqueViolation(err) {
		return pgErrorf("postgres: state key id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return pgErrorf("postgres: add state key: %w", err)
	}
	return nil
}

// StateKeys implements store.KeyRing.
func (s *Store) StateKeys(ctx context.Context) ([]*store.StateKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, sealed, created_at FROM state_keys ORDER BY seq DESC`)
	if err != nil {
		return nil, pgErrorf("postgres: state keys: %w", err)
	}
	defer rows.Close()
	keys := []*store.StateKey{}
	for rows.Next() {
		var k store.StateKey
		var created int64
		if err := rows.Scan(&k.ID, &k.Sealed, &created); err != nil {
			return nil, pgErrorf("postgres: state keys: %w", err)
		}
		k.CreatedAt = fromNanos(created)
		keys = append(keys, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErrorf("postgres: state keys: %w", err)
	}
	return keys, nil
}

// RetireStateKey implements store.KeyRing. One DELETE both checks and
// removes, so a concurrent rotation cannot leave the ring without its
// sealing key.
func (s *Store) RetireStateKey(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM state_keys WHERE id = $1 AND seq <> (SELECT MAX(seq) FROM state_keys)`, id)
	if err != nil {
		return pgErrorf("postgres: retire state key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM state_keys WHERE id = $1)`, id).Scan(&exists); err != nil {
		return pgErrorf("postgres: retire state key: %w", err)
	}
	if exists {
		return fmt.Errorf("postgres: state key %q seals; rotate first: %w", id, store.ErrConflict)
	}
	return store.ErrNotFound
}
