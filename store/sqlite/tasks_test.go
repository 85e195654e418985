package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mcp-elicit/elicit/internal/tasktest"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// TestTasksAcrossInstances: instances sharing one database file share
// their tasks, and a reopened file still has them.
func TestTasksAcrossInstances(t *testing.T) {
	path := filepath.Join(t.TempDir(), "elicit.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(path)
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
// made valid, reaches tasks/get on another instance of the database.
func TestTaskStatusMessage(t *testing.T) {
	st := tempStore(t)
	tasktest.StatusMessage(t, st)
}

// TestTaskLeaseLost: a run that lost its task's lease to another
// instance stores no outcome; the lease's end round-trips exactly, so
// the run that holds it keeps writing.
func TestTaskLeaseLost(t *testing.T) {
	st := tempStore(t)
	tasktest.LeaseLost(t, st)
}

// TestTaskInterrupted: an instance that shuts down releases the lease
// of the task it runs, so another instance of the database takes it over
// at once, not after the lease; the work is done once.
func TestTaskInterrupted(t *testing.T) {
	st := tempStore(t)
	tasktest.Interrupted(t, st)
}

// TestTaskRefusedAnswerReplayed: a replayed update whose answer the task
// refused is ignored on every instance of the database file; no
// correction is used up.
func TestTaskRefusedAnswerReplayed(t *testing.T) {
	st := tempStore(t)
	tasktest.RefusedAnswerReplayed(t, st)
}

// tempStore opens a store in a new file, closed when the test ends.
func tempStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
