package postgres

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// gatedConn counts round trips (a write after a read) and, while gate is
// set, holds every read until gate is closed, after telling held.
type gatedConn struct {
	net.Conn
	g *gate
}

type gate struct {
	mu         sync.Mutex
	roundTrips int
	lastRead   bool
	gate, held chan struct{}
}

func (c *gatedConn) Write(b []byte) (int, error) {
	c.g.mu.Lock()
	if c.g.lastRead {
		c.g.roundTrips++
		c.g.lastRead = false
	}
	c.g.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *gatedConn) Read(b []byte) (int, error) {
	c.g.mu.Lock()
	gate, held := c.g.gate, c.g.held
	c.g.held = nil
	c.g.mu.Unlock()
	if gate != nil {
		if held != nil {
			close(held)
		}
		<-gate
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.g.mu.Lock()
		c.g.lastRead = true
		c.g.mu.Unlock()
	}
	return n, err
}

// TestPointReadsPipelined: reads that come while the reads in flight use
// every place wait, go to the server as one pipeline when a place frees
// (one round trip for all), and see a commit made before they were
// called though a read in flight was sent before it; a waiting read
// whose context ends returns at once.
func TestPointReadsPipelined(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	g := &gate{lastRead: true}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, g: g}, nil
	}
	// One connection, one read in flight at most: the queue forms behind
	// the first read.
	s, err := OpenWith(ctx, dsn, &Options{MaxConns: 1, DialFunc: dial})
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
	g.mu.Lock()
	g.gate, g.held = make(chan struct{}), make(chan struct{})
	held := g.held
	g.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			g.mu.Lock()
			g.roundTrips = 0
			gate := g.gate
			g.gate = nil
			g.mu.Unlock()
			close(gate)
		})
	}
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
	release()
	if err := <-first; err != nil {
		t.Fatalf("the first read: %v", err)
	}
	for range n {
		if a := <-answers; !a.has || a.err != nil {
			t.Fatalf("a waiting read = %v, %v; want true: it is sent after the commit", a.has, a.err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.roundTrips != 1 {
		t.Fatalf("the %d waiting reads took %d round trips, want 1 (one pipeline)", n+1, g.roundTrips)
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
