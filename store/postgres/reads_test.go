package postgres

import (
	"context"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// TestPointReadsPipelined: reads that come while the reads in flight use
// every place wait, go to the server as one pipeline when a place frees
// (one round trip for all), and see a commit made before they were
// called though a read in flight was sent before it; a waiting read
// whose context ends returns at once.
func TestPointReadsPipelined(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	rt := &RoundTrips{}
	// One connection, one read in flight at most: the queue forms behind
	// the first read.
	s, err := OpenWith(ctx, dsn, &Options{MaxConns: 1, DialFunc: rt.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.reads.limit = 1
	writer, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if has, err := s.HasSecret(ctx, "alice", "billing_key"); has || err != nil {
		t.Fatalf("HasSecret before = %v, %v", has, err)
	}

	const n = 10
	queued := make(chan struct{})
	s.reads.mu.Lock()
	s.reads.queued = func(l int) {
		if l == n+1 {
			close(queued)
		}
	}
	s.reads.mu.Unlock()
	held, release := rt.Hold()
	defer release() // before Close, which waits for the held connection

	first := make(chan error, 1)
	go func() {
		_, err := s.HasSecret(ctx, "alice", "billing_key")
		first <- err
	}()
	<-held // the first read is in flight, its answer held

	// A secret committed now, before the waiting reads are called.
	now := time.Now()
	f := &store.Flow{ID: "0123456789abcdef0123456789abcdef", Principal: "alice", Purpose: "billing_key",
		Status: store.FlowPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := writer.CreateFlow(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := writer.CompleteFlow(ctx, f.ID, "alice", []byte("sealed"), now); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		has bool
		err error
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			has, err := s.HasSecret(ctx, "alice", "billing_key")
			answers <- answer{has, err}
		}()
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := s.HasSecret(cctx, "alice", "billing_key")
		gaveUp <- err
	}()
	select { // all n+1 wait
	case <-queued:
	case <-time.After(30 * time.Second): // a guard against a hang, not a speed check
		t.Fatalf("the reads did not wait for the one in flight")
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting read whose context ended: %v, want context.Canceled", err)
	}

	// Release the first read: the waiting ones go next, together.
	rt.Reset()
	release()
	if err := <-first; err != nil {
		t.Fatalf("the first read: %v", err)
	}
	for range n {
		if a := <-answers; !a.has || a.err != nil {
			t.Fatalf("a waiting read = %v, %v; want true: it is sent after the commit", a.has, a.err)
		}
	}
	if trips := rt.Reset(); trips != 1 {
		t.Fatalf("the %d waiting reads took %d round trips, want 1 (one pipeline)", n+1, trips)
	}
}

// BenchmarkPointReads runs HasSecret from 16 goroutines, each read alone
// (as before pipelining) and pipelined, and reports the process's CPU
// time per read (user + system, from getrusage): what a read-only tool
// pays for its store read.
func BenchmarkPointReads(b *testing.B) {
	dsn := pgtest.SchemaDSN(b)
	for _, bc := range []struct {
		name  string
		limit int
	}{{"alone", 1 << 20}, {"pipelined", readsInFlight()}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.reads.limit = bc.limit
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			c0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.HasSecret(context.Background(), "alice", "billing_key"); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
