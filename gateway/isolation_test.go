package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// personal asks its caller a question that names them, and answers with
// who asked (the upstream's principal: the gateway's credential for the
// user) and what they answered.
func personal(s *mcpserver.Server) {
	mcpserver.AddTool(s, &mcp.Tool{Name: "personal"}, func(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
		switch a := elicit.Decode[who](req.Elicitation("who")); a.Outcome {
		case elicit.Accepted:
			return mcpserver.Text(req.Principal + ":" + a.Value.Name), nil, nil
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.ToolError("no answer"), nil, nil
		}
		return mcpserver.Ask().ElicitFormSchema("who", "Question for "+req.Principal, elicit.MustFormFor[who]()), nil, nil
	})
}

// revisions runs f once per upstream revision the gateway speaks.
func revisions(t *testing.T, f func(t *testing.T, rev string)) {
	for _, rev := range []string{Revision2026, Revision2025} {
		t.Run(rev, func(t *testing.T) { f(t, rev) })
	}
}

// Two users calling the same tool at once, several calls each: every
// question a user sees is theirs, every result carries their upstream
// identity and their own answer.
func TestTwoUsersInParallel(t *testing.T) {
	up := serveElicit(t, personal)
	revisions(t, func(t *testing.T, rev string) {
		_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "a", URL: up, Credentials: demoTokens("alice", "bob"), Revision: rev}}})
		const calls = 6
		var wg sync.WaitGroup
		errs := make(chan error, 2*calls)
		for _, user := range []string{"alice", "bob"} {
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					nonce := fmt.Sprintf("%s-%d", user, i)
					c := formClient(gw, user, func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
						if p.Message != "Question for "+user {
							errs <- fmt.Errorf("%s saw the question %q", user, p.Message)
						}
						return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": nonce}}
					})
					res, err := c.CallTool(context.Background(), "personal", nil)
					if err != nil {
						errs <- fmt.Errorf("%s: %v", user, err)
						return
					}
					if want := user + ":" + nonce; res.IsError || res.Content[0].Text != want {
						errs <- fmt.Errorf("%s got %+v, want %q", user, res.Content, want)
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// firstRound sends the first round of tools/call personal as user and
// returns the gateway's requestState and the key of its one input
// request (the upstream's own, or for a 2025 upstream the gateway's).
func firstRound(t *testing.T, c *mcpclient.Client) (state, key string) {
	t.Helper()
	raw, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "personal", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ResultType    string                     `json:"resultType"`
		RequestState  string                     `json:"requestState"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		Meta          map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ResultType != mcp.ResultTypeInputRequired || res.RequestState == "" || len(res.InputRequests) != 1 {
		t.Fatalf("first round: %s (%v)", raw, err)
	}
	if string(res.Meta[MetaUpstream]) != `"a"` {
		t.Errorf("_meta[%s] = %s, want \"a\"", MetaUpstream, res.Meta[MetaUpstream])
	}
	for k := range res.InputRequests {
		key = k
	}
	return res.RequestState, key
}

func retryWith(c *mcpclient.Client, state, key, name string) (json.RawMessage, error) {
	return c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "personal", Arguments: json.RawMessage(`{}`),
		RequestState:   &state,
		InputResponses: map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{"name":"` + name + `"}}`)}})
}

// One user's requestState, replayed by another user (or altered), is
// refused with -32602 and reaches no upstream; the owner's retry still
// completes afterwards.
func TestStateOfAnotherUserRefused(t *testing.T) {
	up := serveElicit(t, personal)
	revisions(t, func(t *testing.T, rev string) {
		var recs []*Record
		var mu sync.Mutex
		_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "a", URL: up, Credentials: demoTokens("alice", "bob"), Revision: rev}},
			Audit: func(_ context.Context, r *Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
		alice := mcpclient.New(gw, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{ElicitForm: noForm}})
		bob := mcpclient.New(gw, &mcpclient.Options{Token: "bob", Handlers: &mcpclient.Handlers{ElicitForm: noForm}})
		state, key := firstRound(t, alice)
		altered := state[:len(state)-2] + flip(state[len(state)-2:])
		for _, tc := range []struct {
			name  string
			c     *mcpclient.Client
			state string
		}{{"bob replays alice's state", bob, state}, {"alice sends an altered state", alice, altered}} {
			_, err := retryWith(tc.c, tc.state, key, "Mallory")
			var rpc *mcpclient.RPCError
			if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: %v, want -32602", tc.name, err)
			}
		}
		raw, err := retryWith(alice, state, key, "Ada")
		if err != nil || !strings.Contains(string(raw), `"alice:Ada"`) {
			t.Fatalf("alice's own retry: %s, %v", raw, err)
		}
		mu.Lock()
		defer mu.Unlock()
		var outcomes []string
		for _, r := range recs {
			outcomes = append(outcomes, r.Principal+" "+r.Outcome)
			if r.UpstreamRevision != rev || r.ClientRevision != mcp.ProtocolVersion {
				t.Errorf("record revisions: %+v", r)
			}
		}
		want := []string{"alice input_required", "bob invalid_state", "alice invalid_state", "alice complete"}
		if strings.Join(outcomes, ",") != strings.Join(want, ",") {
			t.Errorf("audit outcomes %v, want %v", outcomes, want)
		}
		if recs[0].Call == "" || recs[0].Call != recs[3].Call || recs[3].Round != 1 {
			t.Errorf("the call id does not correlate the rounds: %+v, %+v", recs[0], recs[3])
		}
	})
}

func noForm(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
	return nil, errors.New("not asked in this test")
}

// flip changes the last character of s (base64url) to another one.
func flip(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}
