package postgres

import (
	"context"
	"runtime"
	"sync"

	"github.com/jackc/pgx/v5"
)

// rowReads pipelines the point reads (one row by key, outside a
// transaction) that calls make at the same time. Up to limit of them run
// at once, each as a plain query; a read that comes while all limit are
// in flight waits in a queue, and when one of them finishes, the queued
// reads go to the server as one pipeline (one write, one wake-up of the
// server process, instead of one each; on loopback those are most of a
// read's cost to the caller). Nothing is kept between calls: every read
// is sent after its call began, so it sees every commit made before, as
// an unpipelined one does.
type rowReads struct {
	limit int
	mu    sync.Mutex
	// running counts the reads or pipelines in flight; queue holds the
	// reads waiting for one of them to finish.
	running int
	queue   []*rowRead
	// queued, if set (by tests), is called with the queue's length each
	// time a read joins it, under mu.
	queued func(int)
}

// maxPipelinedReads caps the reads of one pipeline.
const maxPipelinedReads = 64

type rowRead struct {
	sql  string
	args []any
	scan func(pgx.Row) error
	err  error
	done chan struct{}
}

// readsInFlight is rowReads.limit: the CPUs the process may use, and at
// least two.
func readsInFlight() int { return max(2, runtime.GOMAXPROCS(0)) }

// readRow runs sql with args and calls scan with its row (a Row whose
// Scan gives pgx.ErrNoRows if there is none), then returns scan's error;
// a pipelined read that waits past ctx returns ctx's error without
// waiting for its answer. scan may run on another goroutine, before
// readRow returns: it must only store into variables the caller reads
// after a nil error.
func (s *Store) readRow(ctx context.Context, scan func(pgx.Row) error, sql string, args ...any) error {
	r := &s.reads
	r.mu.Lock()
	if r.running < r.limit {
		r.running++
		r.mu.Unlock()
		err := scan(s.pool.QueryRow(ctx, sql, args...))
		s.readsDone()
		return err
	}
	rd := &rowRead{sql: sql, args: args, scan: scan, done: make(chan struct{})}
	r.queue = append(r.queue, rd)
	if r.queued != nil {
		r.queued(len(r.queue))
	}
	r.mu.Unlock()
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readsDone is called when a read or pipeline finished: the queued reads
// go next, on a goroutine of their own so that the caller returns now.
func (s *Store) readsDone() {
	if next := s.nextReads(); next != nil {
		go s.pipelineReads(next)
	}
}

// nextReads takes the next pipeline's reads off the queue, or, if none
// are queued, gives up the finished one's place and returns nil.
func (s *Store) nextReads() []*rowRead {
	r := &s.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.queue), maxPipelinedReads)
	if n == 0 {
		r.running--
		return nil
	}
	next := make([]*rowRead, n)
	copy(next, r.queue)
	r.queue = append(r.queue[:0], r.queue[n:]...)
	return next
}

// pipelineReads sends reads as one pipeline, answers each, and goes on
// with the reads queued meanwhile. Its deadline is the store's call
// timeout: a caller that gave up does not cancel the others' reads.
func (s *Store) pipelineReads(reads []*rowRead) {
	for ; reads != nil; reads = s.nextReads() {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(reads))}
		for _, rd := range reads {
			b.Queue(rd.sql, rd.args...)
		}
		br := s.pool.SendBatch(ctx, b)
		for _, rd := range reads {
			rd.err = rd.scan(br.QueryRow())
		}
		// Each read has its own error; Close's repeats the first.
		_ = br.Close()
		cancel()
		for _, rd := range reads {
			close(rd.done)
		}
	}
}
