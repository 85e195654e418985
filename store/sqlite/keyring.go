package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// AddStateKey implements store.KeyRing.
func (s *Store) AddStateKey(ctx context.Context, k *store.StateKey) error {
	if err := k.Check(); err != nil {
		return s.errorf("sqlite: %w", err)
	}
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		_, err := w.exec(ctx, `INSERT INTO state_keys (id, sealed, created_at, activates_at) VALUES (?, ?, ?, ?)`,
			k.ID, k.Sealed, toNanos(k.CreatedAt), toNanos(k.Activation()))
		if isUniqueViolation(err) {
			return s.errorf("sqlite: state key id exists: %w", store.ErrConflict)
		}
		if err != nil {
			return s.errorf("sqlite: add state key: %w", err)
		}
		return nil
	})
}

// StateKeys implements store.KeyRing.
func (s *Store) StateKeys(ctx context.Context) ([]*store.StateKey, error) {
	keys := []*store.StateKey{}
	err := s.queryRows(ctx, `SELECT id, sealed, created_at, activates_at FROM state_keys ORDER BY seq DESC`, nil,
		func(rows *sql.Rows) error {
			var k store.StateKey
			var created, activates int64
			if err := rows.Scan(&k.ID, &k.Sealed, &created, &activates); err != nil {
				return err
			}
			k.CreatedAt, k.ActivatesAt = fromNanos(created), fromNanos(activates)
			keys = append(keys, &k)
			return nil
		})
	if err != nil {
		return nil, s.errorf("sqlite: state keys: %w", err)
	}
	return keys, nil
}

// RetireStateKey implements store.KeyRing. The check and the delete are
// one write, so a concurrent rotation or retirement cannot slip between
// them.
func (s *Store) RetireStateKey(ctx context.Context, id string, now time.Time) error {
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		var activates int64
		err := w.queryRow(ctx, `SELECT activates_at FROM state_keys WHERE id = ?`, id).Scan(&activates)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return s.errorf("sqlite: retire state key: %w", err)
		}
		if activates > toNanos(now) {
			return s.errorf("sqlite: state key %q seals from %s: %w", id, fromNanos(activates).Format(time.RFC3339), store.ErrConflict)
		}
		var sealing string
		err = w.queryRow(ctx, `SELECT id FROM state_keys WHERE activates_at <= ? ORDER BY seq DESC LIMIT 1`, toNanos(now)).Scan(&sealing)
		if err != nil {
			return s.errorf("sqlite: retire state key: %w", err)
		}
		if sealing == id {
			return s.errorf("sqlite: state key %q seals now: %w", id, store.ErrConflict)
		}
		if _, err := w.exec(ctx, `DELETE FROM state_keys WHERE id = ?`, id); err != nil {
			return s.errorf("sqlite: retire state key: %w", err)
		}
		return nil
	})
}

// RemoveStateKey implements store.KeyRing.
func (s *Store) RemoveStateKey(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, w *wtx) error {
		res, err := w.exec(ctx, `DELETE FROM state_keys WHERE id = ?`, id)
		if err != nil {
			return s.errorf("sqlite: remove state key: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.errorf("sqlite: remove state key: %w", err)
		} else if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
}

// masterKeyCheckName is the store_meta row of the master-key check value.
const masterKeyCheckName = "master_key_check"

// MasterKeyCheck implements store.KeyRing.
func (s *Store) MasterKeyCheck(ctx context.Context) ([]byte, error) {
	var v []byte
	err := s.queryRow(ctx, `SELECT value FROM store_meta WHERE name = ?`, masterKeyCheckName).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.errorf("sqlite: master key check: %w", err)
	}
	return v, nil
}

// InitMasterKeyCheck implements store.KeyRing.
func (s *Store) InitMasterKeyCheck(ctx context.Context, check []byte) ([]byte, error) {
	if len(check) == 0 {
		return nil, errors.New("sqlite: empty master key check")
	}
	if err := s.write(ctx, func(ctx context.Context, w *wtx) error {
		if _, err := w.exec(ctx, `INSERT INTO store_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
			masterKeyCheckName, check); err != nil {
			return s.errorf("sqlite: master key check: %w", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s.MasterKeyCheck(ctx)
}
