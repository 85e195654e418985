package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/reqstate"
)

// instance starts one gateway instance of a group sharing sealer and
// secret; peered instances take forwarded retries at their own URL.
func instance(t *testing.T, up string, sealer *reqstate.Sealer, secret []byte, peered bool) string {
	t.Helper()
	mux := http.NewServeMux()
	ts := httptest.NewUnstartedServer(mux)
	url := "http://" + ts.Listener.Addr().String() + "/mcp"
	opts := Options{Upstreams: []Upstream{{Name: "a", URL: up, Credentials: demoTokens("alice", "bob"), Revision: Revision2025}},
		Sealer: sealer, PeerSecret: secret, Logger: quietLog()}
	if peered {
		opts.PeerURL = url
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := g.Handler(&HandlerOptions{Auth: auth.DemoBearer{}, Logger: quietLog(), Legacy: &legacy.Options{Logger: quietLog()}})
	mux.Handle("/mcp", h)
	ts.Start()
	t.Cleanup(func() { _ = h.Close(); ts.Close(); _ = g.Close() })
	return url
}

// A held 2025 call's retry that reaches another instance is forwarded to
// the instance holding it (with a peer token, not the client's), and
// completes there; another user's replay is refused before any
// forwarding; without a peer URL the retry is refused naming the holder.
func TestRetryOnAnotherInstance(t *testing.T) {
	up := serveElicit(t, personal)
	sealer, err := reqstate.New([]reqstate.Key{reqstate.NewKey("shared")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(strings.Repeat("s", 32))
	a := instance(t, up, sealer, secret, true)
	b := instance(t, up, sealer, secret, true)
	alice := func(url string) *mcpclient.Client {
		return mcpclient.New(url, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{ElicitForm: noForm}})
	}
	state, key := firstRound(t, alice(a))
	_, err = retryWith(mcpclient.New(b, &mcpclient.Options{Token: "bob", Handlers: &mcpclient.Handlers{ElicitForm: noForm}}), state, key, "Mallory")
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("bob's replay on the other instance: %v, want -32602", err)
	}
	raw, err := retryWith(alice(b), state, key, "Ada")
	if err != nil || !strings.Contains(string(raw), `"alice:Ada"`) {
		t.Fatalf("alice's retry on the other instance: %s, %v", raw, err)
	}

	c := instance(t, up, sealer, secret, false)
	d := instance(t, up, sealer, secret, false)
	state, key = firstRound(t, alice(c))
	_, err = retryWith(alice(d), state, key, "Ada")
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError || !strings.Contains(rpc.Message, "another gateway instance") {
		t.Errorf("retry on an unpeered instance: %v", err)
	}
	if raw, err := retryWith(alice(c), state, key, "Ada"); err != nil || !strings.Contains(string(raw), `"alice:Ada"`) {
		t.Errorf("the same retry on the holding instance: %s, %v", raw, err)
	}
}

// A request that claims to come from a peer with a forged or expired
// token is not authenticated.
func TestPeerTokens(t *testing.T) {
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	g, err := New(Options{Upstreams: []Upstream{{Name: "a", URL: "http://127.0.0.1:1/mcp"}}, PeerURL: "http://127.0.0.1:2/mcp",
		PeerSecret: []byte(strings.Repeat("k", 32)), Now: now, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	other := newPeers(g, []byte(strings.Repeat("x", 32)))
	good := g.peers.token("alice", now().Add(peerTokenTTL))
	for _, tc := range []struct {
		name, tok string
		ok        bool
	}{
		{"valid", good, true},
		{"another secret", other.token("alice", now().Add(peerTokenTTL)), false},
		{"expired", g.peers.token("alice", now().Add(-time.Second)), false},
		{"altered user", strings.Replace(good, good[len(peerTokenPrefix):len(peerTokenPrefix)+4], "Ym9i", 1), false},
		{"not a peer token", "alice", false},
	} {
		p, ok := g.peers.verify(tc.tok, now())
		if ok != tc.ok || (ok && p != "alice") {
			t.Errorf("%s: verify = %q, %v", tc.name, p, ok)
		}
	}
}
