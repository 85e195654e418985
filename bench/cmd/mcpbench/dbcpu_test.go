package main

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A new backend counts whole; one that exited is not counted; the others
// count what they used between the two samples.
func TestBackendCPUDelta(t *testing.T) {
	before := map[int]int64{10: 100, 11: 50, 12: 70}
	after := map[int]int64{10: 160, 11: 50, 13: 30}
	if got, want := backendCPUDelta(before, after), int64(60+0+30); got != want {
		t.Fatalf("backendCPUDelta = %d, want %d", got, want)
	}
}

// backendCPU finds the backend of a connection made with pgSchema's URL
// (by its application_name) and none of other connections, and sees the
// CPU a query spends there.
func TestBackendCPU(t *testing.T) {
	dsn := os.Getenv("ELICIT_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("set ELICIT_TEST_POSTGRES_DSN to run the PostgreSQL tests")
	}
	ctx := context.Background()
	u, app, drop, err := pgSchema(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var pid int32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	c := dbClient{dsn: dsn, app: app}
	before, err := c.backendCPU(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 {
		t.Skip("the database's processes are not readable here (another machine or container)")
	}
	if _, ok := before[int(pid)]; !ok || len(before) != 1 {
		t.Fatalf("backends %v, want only %d", before, pid)
	}
	// A few hundred milliseconds of CPU in the backend, well above /proc's 10 ms ticks.
	if _, err := conn.Exec(ctx, `SELECT count(*) FROM generate_series(1, 5000000)`); err != nil {
		t.Fatal(err)
	}
	after, err := c.backendCPU(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := backendCPUDelta(before, after); d <= 0 {
		t.Fatalf("the query's backend used %d ns of CPU, want some", d)
	}
	if none, err := (dbClient{}).backendCPU(ctx); none != nil || err != nil {
		t.Fatalf("no application name: %v, %v; want nothing", none, err)
	}
}
