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

// TestTasksShared: the checks of a task store that instances share
// (tasktest.Run): a status message reaches tasks/get on another instance
// of the file; a run that lost its lease stores no outcome; an instance
// that shuts down releases its runs' leases, so another takes over at
// once; a replayed refused answer is ignored on every instance.
func TestTasksShared(t *testing.T) {
	tasktest.Run(t, func(t *testing.T) mcpserver.TaskStore { return tempStore(t) })
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
