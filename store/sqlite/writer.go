package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The writer: every write of a Store runs on one goroutine over the one
// write connection, so writers never contend for SQLite's lock (no call
// sleeps in the busy handler waiting for another connection of this
// process). Writes that arrive while a transaction commits wait in the
// queue and then share the next transaction: each runs in a savepoint of
// its own, so one that fails undoes only its own statements, and one
// COMMIT (one WAL sync) makes all of them durable. No caller hears of its
// write before that COMMIT returned, so an acknowledged write is on disk
// and an error means nothing of it was written.

// maxBatch bounds the writes that share one transaction.
const maxBatch = 128

// Checkpoints: the checkpointer runs a PASSIVE checkpoint at most every
// checkpointEvery while there are commits; the write connection
// checkpoints itself only past walAutocheckpoint pages (4 KiB each), if
// the checkpointer cannot keep up.
const (
	checkpointEvery   = 100 * time.Millisecond
	walAutocheckpoint = 16384
)

// Job states.
const (
	jobQueued int32 = iota
	jobRunning
	jobAbandoned // the caller's deadline passed before the job started
)

// job is one write: fn runs inside the writer's transaction.
type job struct {
	ctx   context.Context
	fn    func(ctx context.Context, w *wtx) error
	state atomic.Int32
	// ran is closed once fn returned (or panicked); done once the
	// transaction it ran in ended and err is final.
	ran, done chan struct{}
	err       error
	panicked  any
	hasPanic  bool
}

// writer owns the write connection.
type writer struct {
	s     *Store
	db    *sql.DB // one connection (SetMaxOpenConns(1))
	ckdb  *sql.DB // the checkpointer's connection
	queue chan *job
	// committed wakes the checkpointer after a commit.
	committed chan struct{}
	quit      chan struct{}
	gone      chan struct{}
	ckGone    chan struct{}
	once      sync.Once
	// stmts are the prepared statements of the write connection, by
	// query; used through Tx.StmtContext, which reuses them since the
	// transaction runs on the same connection.
	stmts sync.Map // string -> *sql.Stmt
	// unprepared collects queries first met inside a transaction (the
	// connection is busy then); they are prepared after it ends.
	unprepared []string
	batch      []*job
	// txs counts the transactions run (tests).
	txs atomic.Int64
}

func newWriter(s *Store, db, ckdb *sql.DB) *writer {
	w := &writer{s: s, db: db, ckdb: ckdb, queue: make(chan *job), committed: make(chan struct{}, 1),
		quit: make(chan struct{}), gone: make(chan struct{}), ckGone: make(chan struct{})}
	go w.loop()
	go w.checkpointer()
	return w
}

// checkpointer copies committed WAL frames into the database file, a
// PASSIVE checkpoint (it skips what readers still use and never waits
// for a lock), at most every checkpointEvery while writes go on. The
// WAL restarts from its beginning at a write after a complete
// checkpoint.
func (w *writer) checkpointer() {
	defer close(w.ckGone)
	for {
		select {
		case <-w.committed:
		case <-w.quit:
			return
		}
		_, _ = w.ckdb.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
		select {
		case <-time.After(checkpointEvery):
		case <-w.quit:
			return
		}
	}
}

var errClosed = errors.New("sqlite: store closed")

// close stops the writer after the transaction in progress; writes still
// waiting fail with errClosed.
func (w *writer) close() {
	w.once.Do(func() { close(w.quit) })
	<-w.gone
	<-w.ckGone
	w.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
}

// write runs fn in the writer's transaction and returns its error, or the
// transaction's if it did not commit. ctx bounds the wait: if it ends
// before fn started, fn never runs; if it ends later, write waits for fn
// to return (each statement checks ctx first, so that is quick) and then
// returns without waiting for the commit.
func (w *writer) write(ctx context.Context, fn func(ctx context.Context, w *wtx) error) error {
	if err := ctx.Err(); err != nil {
		return w.s.errorf("sqlite: %w", err)
	}
	j := &job{ctx: ctx, fn: fn, ran: make(chan struct{}), done: make(chan struct{})}
	select {
	case w.queue <- j:
	case <-ctx.Done():
		return w.s.errorf("sqlite: waiting for the writer: %w", ctx.Err())
	case <-w.quit:
		return errClosed
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return w.s.errorf("sqlite: waiting for the writer: %w", ctx.Err())
		}
		<-j.ran
		select {
		case <-j.done:
		default:
			return w.s.errorf("sqlite: the deadline passed while the write was committing (a retry finds it if it committed): %w", ctx.Err())
		}
	}
	if j.hasPanic {
		panic(j.panicked)
	}
	return j.err
}

func (w *writer) loop() {
	defer close(w.gone)
	for {
		var first *job
		select {
		case first = <-w.queue:
		case <-w.quit:
			return
		}
		batch := append(w.batch[:0], first)
	drain:
		for len(batch) < maxBatch {
			select {
			case j := <-w.queue:
				batch = append(batch, j)
			default:
				break drain
			}
		}
		w.run(batch)
		clear(batch)
		w.batch = batch[:0]
		w.prepareLater()
	}
}

// run runs batch in one transaction. Statements run without a
// cancellable context: SQLite answers an interrupt inside a transaction
// by rolling all of it back, which would take the other jobs' writes
// with it. Each job's own deadline is checked before each statement.
func (w *writer) run(batch []*job) {
	w.txs.Add(1)
	tx, err := w.db.BeginTx(context.Background(), nil)
	if err != nil {
		failAll(batch, w.s.errorf("sqlite: begin: %w", err))
		return
	}
	t := &wtx{w: w, tx: tx}
	ok, err := t.runJobs(batch)
	if err != nil {
		tx.Rollback()
		failAll(batch, err)
		return
	}
	w.end(tx, batch, ok)
	for _, j := range batch {
		close(j.done)
	}
}

// failAll ends every job of batch with err: the transaction is gone.
func failAll(batch []*job, err error) {
	for _, j := range batch {
		j.state.CompareAndSwap(jobQueued, jobRunning)
		if j.state.Load() == jobRunning {
			j.err = err
		}
		closeOnce(j.ran)
		close(j.done)
	}
}

// runJobs runs each job of batch that is still wanted, in a savepoint of
// its own when there are several (a lone job's savepoint is the
// transaction), and returns how many succeeded. An error is the
// transaction's: it is lost, and every job fails with that error.
func (t *wtx) runJobs(batch []*job) (ok int, err error) {
	savepoints := len(batch) > 1
	for _, j := range batch {
		if !j.state.CompareAndSwap(jobQueued, jobRunning) {
			closeOnce(j.ran)
			continue
		}
		if savepoints {
			if err := t.savepoint(`SAVEPOINT job`); err != nil {
				return 0, err
			}
		}
		j.err = t.runJob(j)
		close(j.ran)
		if savepoints {
			if err := t.endSavepoint(j); err != nil {
				return 0, err
			}
		}
		if j.err == nil {
			ok++
		}
	}
	return ok, nil
}

// savepoint runs one savepoint statement q.
func (t *wtx) savepoint(q string) error {
	if _, err := t.exec(context.Background(), q); err != nil {
		return t.w.s.errorf("sqlite: %s: %w", q, err)
	}
	return nil
}

// endSavepoint releases j's savepoint, after undoing j's statements if j
// failed. If undoing fails, SQLite has ended the whole transaction (it
// may on a full disk or an I/O error): the error, j's own if it is an
// outage, is returned for every job.
func (t *wtx) endSavepoint(j *job) error {
	if j.err != nil {
		if _, err := t.exec(context.Background(), `ROLLBACK TO job`); err != nil {
			if outage(j.err) == nil {
				j.err = t.w.s.errorf("sqlite: rollback to savepoint: %w", err)
			}
			return j.err
		}
	}
	return t.savepoint(`RELEASE job`)
}

// end commits the transaction of batch, in which ok jobs succeeded, or
// rolls it back when none did. If COMMIT fails, every job that ran fails
// with its error.
func (w *writer) end(tx *sql.Tx, batch []*job, ok int) {
	if ok == 0 {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		// Nothing of the batch was written: a job that failed because
		// of another's write (a duplicate id) must not say so either.
		err = w.s.errorf("sqlite: commit: %w", err)
		for _, j := range batch {
			if j.state.Load() == jobRunning {
				j.err = err
			}
		}
		return
	}
	select {
	case w.committed <- struct{}{}:
	default:
	}
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// runJob runs j.fn, turning a panic into an error for the batch and a
// panic again on the caller's goroutine.
func (t *wtx) runJob(j *job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			j.panicked, j.hasPanic = p, true
			err = fmt.Errorf("sqlite: write panicked: %v", p)
		}
	}()
	return j.fn(j.ctx, t)
}

// stmt returns the write connection's prepared statement for q, bound to
// t's transaction.
func (t *wtx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if v, ok := t.w.stmts.Load(q); ok {
		return t.tx.StmtContext(ctx, v.(*sql.Stmt)), nil
	}
	t.w.unprepared = append(t.w.unprepared, q)
	return t.tx.PrepareContext(ctx, q)
}

// prepareLater prepares the queries first met inside the last
// transaction, now that the connection is free.
func (w *writer) prepareLater() {
	for _, q := range w.unprepared {
		if _, ok := w.stmts.Load(q); ok {
			continue
		}
		if st, err := w.db.PrepareContext(context.Background(), q); err == nil {
			w.stmts.Store(q, st)
		}
	}
	clear(w.unprepared)
	w.unprepared = w.unprepared[:0]
}

// wtx is what a job sees: the writer's open transaction. Its methods
// check the caller's ctx before each statement and run the statement
// itself uninterrupted (see writer.run).
type wtx struct {
	w  *writer
	tx *sql.Tx
}

func (t *wtx) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bg := context.WithoutCancel(ctx)
	st, err := t.stmt(bg, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(bg, args...)
}

// errRow is a rowScanner that returns err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (t *wtx) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	if err := ctx.Err(); err != nil {
		return errRow{err}
	}
	bg := context.WithoutCancel(ctx)
	st, err := t.stmt(bg, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(bg, args...)
}
