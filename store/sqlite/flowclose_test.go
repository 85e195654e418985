package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/mcp-elicit/elicit/store/storetest"
)

// TestCloseFlowAtomic: a ledger row that cannot be written (a trigger
// refuses it, after the flow's UPDATE ran) takes the close back with it.
func TestCloseFlowAtomic(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckCloseFlowAtomic(t, s, func(t *testing.T) {
		if _, err := s.w.db.ExecContext(t.Context(),
			`CREATE TRIGGER refuse_operations BEFORE INSERT ON operations BEGIN SELECT RAISE(ABORT, 'injected: ledger write refused'); END`); err != nil {
			t.Fatal(err)
		}
	})
}
