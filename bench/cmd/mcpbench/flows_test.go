package main

import (
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/bench/internal/report"
)

// A dump as /debug/pprof/goroutine?debug=2 writes it: five goroutines in
// the connection loop (one idle between requests, one asleep in SQLite's
// busy handler, one queued for the writer, one waiting for a pooled
// PostgreSQL connection, one in a PostgreSQL round trip) and one that
// serves no request.
const dump = `goroutine 1 [IO wait]:
internal/poll.runtime_pollWait(0x7f, 0x72)
net/http.(*conn).readRequest(0xc000, {0x1, 0x2})
net/http.(*conn).serve(0xc000, {0x1, 0x2})

goroutine 7 [sleep]:
time.Sleep(0xf4240)
modernc.org/sqlite.busyHandler(0xc0, 0x1, 0x2)
modernc.org/sqlite/lib._sqlite3InvokeBusyHandler(0xc0)
net/http.(*conn).serve(0xc000, {0x1, 0x2})

goroutine 8 [select]:
github.com/mcp-elicit/elicit/store/sqlite.(*writer).write(0xc0, {0x1, 0x2})
github.com/mcp-elicit/elicit/store/sqlite.(*Store).CompleteOperation(0xc0)
net/http.(*conn).serve(0xc000, {0x1, 0x2})

goroutine 9 [select]:
github.com/jackc/pgx/v5/pgxpool.(*Pool).Acquire(0xc0, {0x1, 0x2})
net/http.(*conn).serve(0xc000, {0x1, 0x2})

goroutine 11 [IO wait]:
internal/poll.runtime_pollWait(0x7f, 0x72)
github.com/jackc/pgx/v5/pgconn.(*PgConn).receiveMessage(0xc0)
net/http.(*conn).serve(0xc000, {0x1, 0x2})

goroutine 10 [chan receive]:
github.com/mcp-elicit/elicit/store/sqlite.(*writer).loop(0xc0)
`

func TestCountGoroutines(t *testing.T) {
	var b report.BusyCheck
	countGoroutines([]byte(dump), &b)
	countGoroutines([]byte(dump), &b)
	want := report.BusyCheck{Samples: 2, Requests: 8, BusyHandler: 2, Writer: 2, Acquire: 2, Postgres: 2}
	if b != want {
		t.Fatalf("counted %+v, want %+v", b, want)
	}
}

// The command field may hold spaces and parentheses; utime and stime are
// the 14th and 15th fields, in 10 ms ticks.
func TestStatCPU(t *testing.T) {
	line := "4242 (node (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 37 0 0 20 0 11 0 123 1000 200 18446744073709551615\n"
	got, err := statCPU([]byte(line))
	if want := int64(287 * 10 * time.Millisecond); err != nil || got != want {
		t.Fatalf("statCPU = %d, %v; want %d", got, err, want)
	}
	if _, err := statCPU([]byte("4242 (short) S 1")); err == nil {
		t.Fatal("a short line parsed")
	}
}
