package tasktest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// RefusedAnswerReplayed checks, on two instances sharing st, that a
// tasks/update whose answer the task refused (and asked again, a
// correction) is ignored when it comes again, on either instance and
// however often, 30 times at once included: the task still waits for the
// corrected question, with the one correction used, so the next refused
// answer gets the second correction rather than ending the task. The
// decision comes from the stored record: the corrected question goes out
// under a key of its own, and the replay names a key that is no longer
// pending.
func RefusedAnswerReplayed(t *testing.T, st mcpserver.TaskStore) {
	t.Helper()
	var sent atomic.Int32
	instance := func(name string) *mcpserver.Server {
		s := mcpserver.New(mcp.Implementation{Name: name, Version: "1"}, nil)
		s.EnableTasks(&mcpserver.TaskOptions{Store: st})
		s.AddToolWith(&mcp.Tool{Name: "mail"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			if r.TaskAllowed() {
				return mcpserver.RunAsTask(), nil
			}
			if to := r.Elicitation("to"); to.Outcome == elicit.Accepted {
				sent.Add(1)
				return mcpserver.Text("sent"), nil
			}
			return mcpserver.Ask().ElicitForm("to", "Who gets the mail?",
				json.RawMessage(`{"type":"object","properties":{"to":{"type":"string","format":"email"}},"required":["to"]}`)), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired})
		return s
	}
	a, b := instance("a"), instance("b")
	created := serve(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mail","arguments":{},`+tasksMeta+`}}`)
	id, _ := created["taskId"].(string)
	update := func(s *mcpserver.Server, key, answer string) {
		ack := serve(t, s, `{"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"`+id+`","inputResponses":{"`+key+`":`+answer+`},`+tasksMeta+`}}`)
		if ack["resultType"] != "complete" || len(ack) != 2 {
			t.Errorf("tasks/update: %v", ack)
		}
	}
	waitBoth := func() { a.WaitTasks(); b.WaitTasks() }
	wantPending := func(want string) {
		t.Helper()
		waitBoth()
		g := waitStatus(t, b, id, "input_required")
		if keys := slices.Sorted(maps.Keys(g["inputRequests"].(map[string]any))); !slices.Equal(keys, []string{want}) {
			t.Fatalf("pending %v, want [%s]: %v", keys, want, g)
		}
	}
	wantPending("to")

	const bad = `{"action":"accept","content":{"to":"not-an-address"}}`
	update(a, "to", bad)
	waitBoth()
	waitStatus(t, b, id, "input_required") // corrected: asks again
	// Replayed one at a time, alternating instances.
	for i := range 5 {
		update([]*mcpserver.Server{a, b}[i%2], "to", bad)
		waitBoth()
	}
	var wg sync.WaitGroup
	for i := range 30 { // and 30 at once
		wg.Go(func() { update([]*mcpserver.Server{a, b}[i%2], "to", bad) })
	}
	wg.Wait()
	wantPending("to#2")

	// One correction was used: a new refused answer gets the second.
	update(b, "to#2", `{"action":"accept","content":{"to":"still@@wrong"}}`)
	wantPending("to#3")
	update(a, "to#3", `{"action":"accept","content":{"to":"bob@example.com"}}`)
	waitBoth()
	if g := waitStatus(t, b, id, "completed"); sent.Load() != 1 {
		t.Fatalf("sent %d times: %v", sent.Load(), g)
	}
}
