package connect_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/internal/pagetest"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/postgres/pgtest"
)

// Two instances share a PostgreSQL store: a WaitFlow on one wakes when
// the page is finished on the other (LISTEN/NOTIFY), long before its hour
// is up. Without the notice it would wait the hour (and the test time out).
func TestWaitFlowAcrossInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t, pgtest.DSN(t))
	ctx := context.Background()
	key := make([]byte, 32)
	instance := func(base string) (*connect.Service, store.Store) {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		svc, err := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: base, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return svc, st
	}
	// B serves the pages; A only waits.
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	a, _ := instance(ts.URL)
	b, _ := instance(ts.URL)
	handler = b.Handler()

	f, err := a.StartFlow(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	ticked := make(chan struct{})
	done := make(chan *store.Flow, 1)
	go func() {
		got, err := a.WaitFlow(ctx, f.ID, time.Hour, func() {
			select {
			case <-ticked:
			default:
				close(ticked) // the wait has begun (and is subscribed)
			}
		})
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	<-ticked
	link := a.FlowURL(f)
	if err := pagetest.New().FinishKey(link, "alice", "sk_live_other_instance"); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got == nil || got.Status != store.FlowComplete {
		t.Fatalf("WaitFlow returned %+v", got)
	}
	if u, _ := url.Parse(link); u.Host == "" {
		t.Fatal("bad link")
	}
}
