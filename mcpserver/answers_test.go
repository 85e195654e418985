package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// answerCase is one answer to the question "to" (emailForm) and what the
// server does with it, the same for an MRTR retry and a tasks/update
// (the Errors tables of docs/tasks.md and docs/protocol.md). Exactly one
// of code, reason and result is set, or none: the answer is ignored.
type answerCase struct {
	name, answer string
	code         int    // refused with this JSON-RPC error: nothing stored
	reason       string // accepted as an answer and asked again with this reason, using a correction
	result       string // the handler's result
}

var answerCases = []answerCase{
	{name: "not an object", answer: `"bob@example.com"`, code: jsonrpc.CodeInvalidParams},
	{name: "no known action", answer: `{"action":"send"}`, code: jsonrpc.CodeInvalidParams},
	{name: "action not a string", answer: `{"action":1}`, code: jsonrpc.CodeInvalidParams},
	{name: "content a string", answer: `{"action":"accept","content":"bob@example.com"}`, reason: "the answer's content is not an object"},
	{name: "content an array", answer: `{"action":"accept","content":["bob@example.com"]}`, reason: "the answer's content is not an object"},
	{name: "a value the schema refuses", answer: `{"action":"accept","content":{"to":"not-an-address"}}`, reason: "to: must be an email address"},
	{name: "accept without content", answer: `{"action":"accept"}`, reason: "missing; it is required"},
	{name: "null", answer: `null`},
	{name: "a member the form did not ask: dropped", answer: `{"action":"accept","content":{"to":"bob@example.com","bcc":"eve@example.com"}}`, result: "sent to bob@example.com; fields: to"},
	{name: "decline with content: ignored", answer: `{"action":"decline","content":{"to":"x"}}`, result: "not sent"},
}

// answerServer has "mail", which asks "to" (emailForm) in the call
// (MRTR) or as a task, and says which fields of the accepted content it
// read.
func answerServer(t *testing.T, st TaskStore) *Server {
	t.Helper()
	s := New(mcp.Implementation{Name: "answers", Version: "1"}, nil)
	s.EnableTasks(&TaskOptions{Store: st})
	s.AddToolWith(&mcp.Tool{Name: "mail"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		switch to := r.Elicitation("to"); to.Outcome {
		case elicit.Accepted:
			return Text("sent to " + to.Content["to"].(string) + "; fields: " + strings.Join(slices.Sorted(maps.Keys(to.Content)), ",")), nil
		case elicit.Declined, elicit.Cancelled:
			return ToolError("not sent"), nil
		}
		return Ask().ElicitForm("to", "Who gets the mail?", json.RawMessage(emailForm)), nil
	}, &HandlerOptions{Tasks: TaskOptional})
	return s
}

// TestAnswersMRTR pins each answerCase on an MRTR retry.
func TestAnswersMRTR(t *testing.T) {
	for _, tc := range answerCases {
		t.Run(tc.name, func(t *testing.T) {
			c := rpc{answerServer(t, nil), "alice"}
			first := mustCall(t, c, toolCall("mail", `{"elicitation":{}}`, ""))
			r, err := c.call(t, toolCall("mail", `{"elicitation":{}}`, retry(first["requestState"].(string), `{"to":`+tc.answer+`}`)))
			switch {
			case tc.code != 0:
				if err == nil || err.Code != tc.code {
					t.Fatalf("got %v %v, want the error %d", r, err, tc.code)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			case tc.result != "":
				if text(r) != tc.result {
					t.Fatalf("got %v, want the result %q", r, tc.result)
				}
			case tc.reason != "":
				if msg := inputMessage(t, r, "to"); !strings.Contains(msg, "Your previous answer was not accepted: ") || !strings.Contains(msg, tc.reason) {
					t.Fatalf("asked again with %q, want a correction saying %q", msg, tc.reason)
				}
			default:
				if msg := inputMessage(t, r, "to"); msg != "Who gets the mail?" {
					t.Fatalf("asked again with %q, want the question as it was", msg)
				}
			}
		})
	}
}

// TestAnswersTask pins each answerCase on a tasks/update: refused and
// ignored answers leave the stored task as it was; a correction is asked
// under a key of its own and counted.
func TestAnswersTask(t *testing.T) {
	for _, tc := range answerCases {
		t.Run(tc.name, func(t *testing.T) {
			st := NewMemoryTaskStore()
			s := answerServer(t, st)
			c := rpc{s, "alice"}
			id := startTask(t, c, "mail", `{}`)
			s.WaitTasks()
			before := snapshot(t, st, []string{id})[id]
			r, err := c.call(t, taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{"to":`+tc.answer+`}`))
			s.WaitTasks()
			after := snapshot(t, st, []string{id})[id]
			g := getTask(t, c, id)
			switch {
			case tc.code != 0:
				if err == nil || err.Code != tc.code || !reflect.DeepEqual(before, after) {
					t.Fatalf("got %v %v, want the error %d and nothing stored", r, err, tc.code)
				}
				return
			case err != nil || r["resultType"] != "complete" || len(r) != 2:
				t.Fatalf("got %v %v, want the empty acknowledgement", r, err)
			}
			switch {
			case tc.result != "":
				res, _ := g["result"].(map[string]any)
				if g["status"] != "completed" || text(res) != tc.result {
					t.Fatalf("the task is %v, want completed with %q", g, tc.result)
				}
			case tc.reason != "":
				n, _ := corrections(t, st, id, "to")
				if keys := pendingKeys(t, g); !slices.Equal(keys, []string{"to#2"}) || n != 1 || !strings.Contains(inputMessage(t, g, "to#2"), tc.reason) {
					t.Fatalf("the task is %v (%d corrections), want to#2 asked with %q, one correction", g, n, tc.reason)
				}
			default:
				if !reflect.DeepEqual(before, after) {
					t.Fatalf("the task changed: %v", g)
				}
			}
		})
	}
}
