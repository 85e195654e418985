package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// TestDiskFull fills a real 2 MiB tmpfs under the database: a write fails
// with store.ErrStorageFull, Health says so (reads still work), and once
// space is freed Health's probe write works and writes go on. It needs
// root (mount); elsewhere it skips.
func TestDiskFull(t *testing.T) {
	dir := tmpfs(t, "size=2m")
	s, err := Open(filepath.Join(dir, "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// A WAL that a checkpoint emptied is written again from its start,
	// in space the file already has: writes that fit still work on a
	// full disk. A reader holding a snapshot from before any write keeps
	// the WAL from restarting, so that every write below needs new space.
	pin := holdSnapshot(t, s)
	defer pin.Close()
	big := make([]byte, 256<<10)
	write := func(id string) error {
		return s.CompleteOperation(ctx, &store.Operation{ID: id, Principal: "alice", CompletedAt: time.Now()},
			func(ctx context.Context, fx store.Effects) error {
				return fx.Insert(ctx, &store.Record{Kind: "blob", ID: id, Principal: "alice", Status: "x", Data: big})
			})
	}
	if err := write("before"); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)

	checkFull(t, s, write("full"))

	if _, err := pin.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Health(ctx); err != nil {
		t.Fatalf("Health once space is free: %v", err)
	}
	if err := write("after"); err != nil {
		t.Fatalf("write once space is free: %v", err)
	}
}

// tmpfs mounts a tmpfs with opts on a new directory for the test's
// duration, or skips the test where it cannot.
func tmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	return dir
}

// holdSnapshot opens a read transaction on s's database and reads from
// it, so it holds a snapshot until rolled back.
func holdSnapshot(t *testing.T, s *Store) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	pin, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := pin.ExecContext(ctx, `BEGIN`); err != nil {
		pin.Close()
		t.Fatal(err)
	}
	if err := pin.QueryRowContext(ctx, `SELECT count(*) FROM records`).Scan(&n); err != nil {
		pin.Close()
		t.Fatal(err)
	}
	return pin
}

// fill writes a file in dir until the file system is full, and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	f.Close()
	return filler
}

// checkFull checks s on a full disk: err, the write "full"'s, is
// ErrStorageFull, the record "before" still reads, Health reports the
// full disk, and the failed write left nothing.
func checkFull(t *testing.T, s *Store, err error) {
	t.Helper()
	ctx := context.Background()
	var ur interface{ UnavailableReason() string }
	if !errors.Is(err, store.ErrStorageFull) || !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &ur) || ur.UnavailableReason() != "storage_full" {
		t.Fatalf("write on a full disk: %v, want store.ErrStorageFull", err)
	}
	if _, err := s.GetRecord(ctx, "blob", "before"); err != nil {
		t.Fatalf("read on a full disk: %v", err)
	}
	if err := s.Health(ctx); !errors.Is(err, store.ErrStorageFull) {
		t.Fatalf("Health on a full disk: %v, want store.ErrStorageFull", err)
	}
	if _, err := s.GetRecord(ctx, "blob", "full"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the failed write left a record: %v", err)
	}
}
