package connect_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// onlyConnect hides every method of the store but connect.Store's.
type onlyConnect struct{ connect.Store }

// A Service needs only connect.Store of its store, not all of
// store.Store: a store that has nothing else (here a wrapper, in a
// library user's code a store of their own) serves it.
func TestNarrowStore(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := connect.New(connect.Options{Store: onlyConnect{st}, MasterKey: make([]byte, 32), BaseURL: "http://127.0.0.1:3000",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, err := svc.StartFlow(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.StartFlow(ctx, "alice", "billing_key")
	if err != nil || again.ID != f.ID {
		t.Fatalf("a pending flow is reused: %v, %v", again, err)
	}
	if got, err := svc.Flow(ctx, f.ID); err != nil || got.Principal != "alice" {
		t.Fatalf("Flow = %+v, %v", got, err)
	}
	if has, err := svc.HasSecret(ctx, "alice", "billing_key"); err != nil || has {
		t.Fatalf("HasSecret = %v, %v before the flow completed", has, err)
	}
}
