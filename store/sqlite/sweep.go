package sqlite

import (
	"context"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// DeleteExpired implements store.Store.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.Sweep(ctx, now, nil)
	return res.Flows + res.Sessions, err
}

// Sweep implements store.Store. Each batch is one DELETE, one write (see
// the package doc) under the call deadline.
func (s *Store) Sweep(ctx context.Context, now time.Time, r *store.Retention) (*store.SweepResult, error) {
	return store.RunSweep(ctx, sweeper{s}, now, r)
}

// sweeper is store.SweepDeleter over s.
type sweeper struct{ s *Store }

// del runs one batch delete under the call deadline.
func (sw sweeper) del(ctx context.Context, what, q string, args ...any) (int64, error) {
	var n int64
	err := sw.s.write(ctx, func(ctx context.Context, w *wtx) error {
		res, err := w.exec(ctx, q, args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return sw.s.errorf("sqlite: sweep %s: %w", what, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (w sweeper) DeleteFlows(ctx context.Context, t time.Time, limit int) (int64, error) {
	return w.del(ctx, "flows", `DELETE FROM flows WHERE id IN (SELECT id FROM flows WHERE expires_at < ? LIMIT ?)`, toNanos(t), limit)
}

func (w sweeper) DeleteSessions(ctx context.Context, t time.Time, limit int) (int64, error) {
	return w.del(ctx, "sessions", `DELETE FROM sessions WHERE id_hash IN (SELECT id_hash FROM sessions WHERE expires_at < ? LIMIT ?)`, toNanos(t), limit)
}

func (w sweeper) DeleteRecords(ctx context.Context, kind string, t time.Time, limit int) (int64, error) {
	return w.del(ctx, "records", `DELETE FROM records WHERE kind = ? AND id IN
		(SELECT id FROM records WHERE kind = ? AND updated_at < ? LIMIT ?)`, kind, kind, toNanos(t), limit)
}

func (w sweeper) DeleteOperations(ctx context.Context, t time.Time, limit int) (int64, error) {
	return w.del(ctx, "operations", `DELETE FROM operations WHERE id IN
		(SELECT o.id FROM operations o WHERE o.completed_at < ?
		 AND NOT EXISTS (SELECT 1 FROM records r WHERE r.operation_id = o.id) LIMIT ?)`, toNanos(t), limit)
}

// Health implements store.Store: a read of the schema version, and while
// a write has failed with SQLITE_FULL, a write of the probe row
// health_probe in store_meta.
func (s *Store) Health(ctx context.Context) error {
	ctx, cancel := s.call(ctx)
	defer cancel()
	var v int
	if err := s.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return store.Unavailable(store.ErrUnavailable, s.errorf("sqlite: health: %w", err))
	}
	if !s.full.Load() {
		return nil
	}
	if err := s.write(ctx, func(ctx context.Context, w *wtx) error {
		if _, err := w.exec(ctx, `INSERT INTO store_meta (name, value) VALUES ('health_probe', ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return s.errorf("sqlite: health: probe write: %w", err)
		}
		return nil
	}); err != nil {
		return store.Unavailable(store.ErrUnavailable, err)
	}
	s.full.Store(false)
	return nil
}
