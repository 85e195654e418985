// Package tasktest checks a mcpserver.TaskStore end to end: several
// server instances sharing it, and a restart.
package tasktest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

const tasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// instance is one server process of a deployment that shares the store.
func instance(st mcpserver.TaskStore, effects *atomic.Int32) *mcpserver.Server {
	s := mcpserver.New(mcp.Implementation{Name: "i", Version: "1"}, nil)
	s.EnableTasks(&mcpserver.TaskOptions{Store: st})
	s.AddToolWith(&mcp.Tool{Name: "send"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		if a := r.Elicitation("ok"); a.Outcome != elicit.Accepted {
			return mcpserver.Ask().ElicitForm("ok", "Send it?", json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)), nil
		}
		effects.Add(1)
		return mcpserver.Text("sent"), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired})
	return s
}

func serve(t *testing.T, s *mcpserver.Server, body string) map[string]any {
	t.Helper()
	req, jerr := jsonrpc.DecodeRequest([]byte(body))
	if jerr != nil {
		t.Fatal(jerr)
	}
	in, jerr := transport.Parse(req)
	if jerr != nil {
		t.Fatal(jerr)
	}
	resp := transport.Of(s).Serve(context.Background(), in, "alice", nil)
	if resp.Error != nil {
		t.Fatalf("%s: %v", body, resp.Error)
	}
	b, _ := json.Marshal(resp.Result)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func waitStatus(t *testing.T, s *mcpserver.Server, id, want string) map[string]any {
	t.Helper()
	s.WaitTasks()
	g := serve(t, s, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+id+`",`+tasksMeta+`}}`)
	if g["status"] != want {
		t.Fatalf("status %v, want %s: %v", g["status"], want, g)
	}
	return g
}

// AcrossInstances checks that tasks live in the store, not in a server:
// a task started on one instance is seen, answered and completed through
// another that shares the store (which runs the rest of the work once),
// and an instance on the store reopened with reopen still reads it. st
// is the shared store; reopen closes it and opens it again, as a restart
// does.
func AcrossInstances(t *testing.T, st mcpserver.TaskStore, reopen func() mcpserver.TaskStore) {
	t.Helper()
	var effects atomic.Int32
	a, b := instance(st, &effects), instance(st, &effects)
	created := serve(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send","arguments":{},`+tasksMeta+`}}`)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v", created)
	}
	waitStatus(t, a, id, "input_required")
	waitStatus(t, b, id, "input_required")
	ack := serve(t, b, `{"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"`+id+`","inputResponses":{"ok":{"action":"accept","content":{"confirm":true}}},`+tasksMeta+`}}`)
	if ack["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v", ack)
	}
	b.WaitTasks()
	g := waitStatus(t, a, id, "completed")
	if res, _ := g["result"].(map[string]any); res == nil || effects.Load() != 1 {
		t.Fatalf("completed task %v, effects %d", g, effects.Load())
	}
	waitStatus(t, instance(reopen(), &effects), id, "completed")
}

// Run runs the checks of a store shared by instances, each as a subtest
// on a store of its own from fresh: StatusMessage, LeaseLost,
// Interrupted and RefusedAnswerReplayed.
func Run(t *testing.T, fresh func(*testing.T) mcpserver.TaskStore) {
	for _, c := range []struct {
		name  string
		check func(*testing.T, mcpserver.TaskStore)
	}{
		{"StatusMessage", StatusMessage},
		{"LeaseLost", LeaseLost},
		{"Interrupted", Interrupted},
		{"RefusedAnswerReplayed", RefusedAnswerReplayed},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, fresh(t)) })
	}
}
