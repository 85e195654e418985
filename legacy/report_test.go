package legacy_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// observed collects the rounds the server reports.
type observed struct {
	mu     sync.Mutex
	rounds []mcpserver.Round
}

func (o *observed) observe(_ context.Context, r *mcpserver.Round) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rounds = append(o.rounds, *r)
}

func (o *observed) all() []mcpserver.Round {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]mcpserver.Round(nil), o.rounds...)
}

func startObserved(t *testing.T, opts *legacy.Options) (string, *observed) {
	t.Helper()
	obs := &observed{}
	s := newServer(&atomic.Int32{}, obs.observe)
	if opts == nil {
		opts = &legacy.Options{}
	}
	opts.Logger = quiet
	h := legacy.NewHandler(s, streamhttp.NewHandler(s, &streamhttp.Options{Logger: quiet}), opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, obs
}

// TestBridgeClientError: a client that answers elicitation/create with an
// error ends the call with the client's code (-32603 when it gave none)
// and its message, printable and clipped; the ending is reported as a
// fault round of the operation, so it is audited and counted.
func TestBridgeClientError(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name     string
		err      error
		wantCode int64
		wantMsg  string
	}{
		{"plain error", errors.New("secret-ish client detail"), -32603,
			"The client answered elicitation/create with an error: secret-ish client detail"},
		{"its own schema check", &jsonrpc.Error{Code: -32602, Message: "elicitation result content does not match requested schema:\n\x1b[31mname\u202e"}, -32602,
			"The client answered elicitation/create with error -32602: elicitation result content does not match requested schema:  [31mname"},
		{"long message", &jsonrpc.Error{Code: -32000, Message: long}, -32000,
			"The client answered elicitation/create with error -32000: " + long[:200] + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, obs := startObserved(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs := connect(t, ctx, url, &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{}}, &sdk.ClientOptions{
				ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) { return nil, tc.err },
			})
			_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask_name", Arguments: map[string]any{}})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != tc.wantCode || we.Message != tc.wantMsg {
				t.Fatalf("got %v\nwant %d %q", err, tc.wantCode, tc.wantMsg)
			}
			wantEnding(t, obs.all(), "ask_name", int(tc.wantCode), 1)
		})
	}
}

// TestBridgeEndingsAudited: the bridge's own round cap (-32602) and the
// unfinished-page ending (-32042) are reported as fault rounds too.
func TestBridgeEndingsAudited(t *testing.T) {
	url, obs := startObserved(t, &legacy.Options{MaxRounds: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := connect(t, ctx, url, nil, nil)
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "forever", Arguments: map[string]any{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32602 {
		t.Fatalf("want -32602 Too many rounds, got %v", err)
	}
	wantEnding(t, obs.all(), "forever", -32602, 4)

	url, obs = startObserved(t, &legacy.Options{MaxRounds: 3, URLPolls: -1})
	cs = connect(t, ctx, url, &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept"}, nil // and never finishes the page
		},
	})
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "page_forever", Arguments: map[string]any{}})
	if !errors.As(err, &we) || we.Code != -32042 {
		t.Fatalf("want -32042, got %v", err)
	}
	wantEnding(t, obs.all(), "page_forever", -32042, 3)
}

// wantEnding checks that the last reported round of tool is a fault with
// code, in the same operation as the rounds before it, at round.
func wantEnding(t *testing.T, rounds []mcpserver.Round, tool string, code, round int) {
	t.Helper()
	if len(rounds) < 2 {
		t.Fatalf("%d rounds reported: %+v", len(rounds), rounds)
	}
	last, prev := rounds[len(rounds)-1], rounds[len(rounds)-2]
	if last.Name != tool || last.Outcome != mcpserver.OutcomeFault || last.Code != code || last.Round != round ||
		last.OperationID == "" || last.OperationID != prev.OperationID || last.Principal != prev.Principal {
		t.Fatalf("ending reported as %+v (previous round %+v); want a fault %d at round %d of the same operation", last, prev, code, round)
	}
}
