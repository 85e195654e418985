package postgres

import (
	"context"
	"testing"

	"github.com/mcp-elicit/elicit/internal/tasktest"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// TestTasksAcrossInstances: instances on one PostgreSQL database share
// their tasks, and a new connection pool (a restart) still has them.
func TestTasksAcrossInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	open := func() *Store {
		st, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := open()
	tasktest.AcrossInstances(t, st, func() mcpserver.TaskStore {
		st.Close()
		return open()
	})
}

// TestTaskStatusMessage: a task's statusMessage, NUL and invalid UTF-8
// made valid (PostgreSQL text takes neither), reaches tasks/get on
// another instance of the database.
func TestTaskStatusMessage(t *testing.T) {
	st := freshStore(t)
	tasktest.StatusMessage(t, st)
}

// TestTaskLeaseLost: a run that lost its task's lease to another
// instance stores no outcome; the lease's end round-trips exactly, so
// the run that holds it keeps writing.
func TestTaskLeaseLost(t *testing.T) {
	st := freshStore(t)
	tasktest.LeaseLost(t, st)
}

// TestTaskInterrupted: an instance that shuts down releases the lease
// of the task it runs, so another instance of the database takes it over
// at once, not after the lease; the work is done once.
func TestTaskInterrupted(t *testing.T) {
	st := freshStore(t)
	tasktest.Interrupted(t, st)
}

// TestTaskRefusedAnswerReplayed: a replayed update whose answer the task
// refused is ignored on every instance of the database; no correction
// is used up.
func TestTaskRefusedAnswerReplayed(t *testing.T) {
	st := freshStore(t)
	tasktest.RefusedAnswerReplayed(t, st)
}

// freshStore opens a store on a schema of its own, closed when the test
// ends.
func freshStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), pgtest.FreshSchema(t, pgtest.DSN(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
