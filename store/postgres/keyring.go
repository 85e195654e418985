package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-elicit/elicit/store"
)

// AddStateKey implements store.KeyRing.
func (s *Store) AddStateKey(ctx context.Context, k *store.StateKey) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if err := k.Check(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO state_keys (id, sealed, created_at, activates_at) VALUES ($1, $2, $3, $4)`,
		k.ID, k.Sealed, toNanos(k.CreatedAt), toNanos(k.Activation()))
	if isUniqueViolation(err) {
		return s.errorf("postgres: state key id exists: %w", store.ErrConflict)
	}
	if err != nil {
		return s.errorf("postgres: add state key: %w", err)
	}
	return nil
}

// StateKeys implements store.KeyRing.
func (s *Store) StateKeys(ctx context.Context) ([]*store.StateKey, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, sealed, created_at, activates_at FROM state_keys ORDER BY seq DESC`)
	if err != nil {
		return nil, s.errorf("postgres: state keys: %w", err)
	}
	defer rows.Close()
	keys := []*store.StateKey{}
	for rows.Next() {
		var k store.StateKey
		var created, activates int64
		if err := rows.Scan(&k.ID, &k.Sealed, &created, &activates); err != nil {
			return nil, s.errorf("postgres: state keys: %w", err)
		}
		k.CreatedAt, k.ActivatesAt = fromNanos(created), fromNanos(activates)
		keys = append(keys, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("postgres: state keys: %w", err)
	}
	return keys, nil
}

// RetireStateKey implements store.KeyRing. One DELETE both checks and
// removes: the key must have activated and must not be the newest
// activated one (the sealing key), so a concurrent rotation or
// retirement cannot leave the ring without its sealing key.
func (s *Store) RetireStateKey(ctx context.Context, id string, now time.Time) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM state_keys WHERE id = $1 AND activates_at <= $2
		AND seq <> (SELECT MAX(seq) FROM state_keys WHERE activates_at <= $2)`, id, toNanos(now))
	if err != nil {
		return s.errorf("postgres: retire state key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var activates int64
	err = s.pool.QueryRow(ctx, `SELECT activates_at FROM state_keys WHERE id = $1`, id).Scan(&activates)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return s.errorf("postgres: retire state key: %w", err)
	case activates > toNanos(now):
		return fmt.Errorf("postgres: state key %q seals from %s: %w", id, fromNanos(activates).Format(time.RFC3339), store.ErrConflict)
	}
	return fmt.Errorf("postgres: state key %q seals now: %w", id, store.ErrConflict)
}

// RemoveStateKey implements store.KeyRing.
func (s *Store) RemoveStateKey(ctx context.Context, id string) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM state_keys WHERE id = $1`, id)
	if err != nil {
		return s.errorf("postgres: remove state key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// masterKeyCheckName is the store_meta row of the master-key check value.
const masterKeyCheckName = "master_key_check"

// MasterKeyCheck implements store.KeyRing.
func (s *Store) MasterKeyCheck(ctx context.Context) ([]byte, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM store_meta WHERE name = $1`, masterKeyCheckName).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("postgres: master key check: %w", err)
	}
	return v, nil
}

// InitMasterKeyCheck implements store.KeyRing.
func (s *Store) InitMasterKeyCheck(ctx context.Context, check []byte) ([]byte, error) {
	ctx, cancel := s.call(ctx)
	defer cancel()
	if len(check) == 0 {
		return nil, errors.New("postgres: empty master key check")
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO store_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		masterKeyCheckName, check); err != nil {
		return nil, s.errorf("postgres: master key check: %w", err)
	}
	return s.MasterKeyCheck(ctx)
}
