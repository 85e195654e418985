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

// TestTasksShared: the checks of a task store that instances share
// (tasktest.Run): a status message reaches tasks/get on another instance
// of the database; a run that lost its lease stores no outcome; an instance
// that shuts down releases its runs' leases, so another takes over at
// once; a replayed refused answer is ignored on every instance.
func TestTasksShared(t *testing.T) {
	tasktest.Run(t, func(t *testing.T) mcpserver.TaskStore { return freshStore(t) })
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
