package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/reqstate"
)

// reportForm is the export form of docs/flows.md §export_report and
// send_report, built with the builder.
var reportForm = func() *elicit.Schema {
	s, err := elicit.FormSchema(
		elicit.TitledEnum("detail", elicit.Choice{Value: "summary", Title: "Summary"}, elicit.Choice{Value: "detailed", Title: "Detailed"}).
			Title("Detail level").Required(),
		elicit.String("label").Title("Label").MinLength(1).MaxLength(80).Required(),
		elicit.Integer("token_budget").Minimum(1).DeclareNotSecret("counts model tokens; not a credential"),
	)
	if err != nil {
		panic(err) // test fixture
	}
	return s
}()

type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *clock) advance(d time.Duration) { c.now.Add(int64(d)) }

// newFormServer serves the same form-asking handler as a tool (with and
// without RestartStale), a prompt and a resource.
func newFormServer(t *testing.T) (*Server, *clock) {
	t.Helper()
	c := &clock{}
	c.now.Store(time.Unix(1_800_000_000, 0).UnixNano())
	sealer, err := reqstate.New([]reqstate.Key{reqstate.NewKey("k")}, &reqstate.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	s := New(mcp.Implementation{Name: "test", Version: "1"}, &Options{Sealer: sealer})
	ask := func(r *Request) *InputRequired {
		msg := "Choose the detail level and a label."
		if r.Restart != "" {
			msg = "(" + string(r.Restart) + ") " + msg
		}
		return Ask().ElicitFormSchema("report_options", msg, reportForm).WithState([]byte("export"))
	}
	answer := func(r *Request) (string, bool, *InputRequired) {
		a := r.Elicitation("report_options")
		switch a.Outcome {
		case elicit.Accepted:
			b, _ := json.Marshal(a.Content)
			return "accepted " + string(b), false, nil
		case elicit.Declined:
			return "declined", true, nil
		case elicit.Cancelled:
			return "cancelled", true, nil
		}
		return "", false, ask(r)
	}
	tool := func(_ context.Context, r *Request) (Reply, error) {
		text, isErr, again := answer(r)
		if again != nil {
			return again, nil
		}
		if isErr {
			return ToolError(text), nil
		}
		return Text(text), nil
	}
	s.AddToolWith(&mcp.Tool{Name: "export"}, tool, &HandlerOptions{RestartStale: true})
	s.AddTool(&mcp.Tool{Name: "export_strict"}, tool)
	s.AddTool(&mcp.Tool{Name: "nagging"}, func(_ context.Context, r *Request) (Reply, error) {
		return ask(r), nil // asks again whatever the answer: a bug the library stops
	})
	s.AddPromptWith(&mcp.Prompt{Name: "report_prompt"}, func(_ context.Context, r *Request) (Reply, error) {
		text, _, again := answer(r)
		if again != nil {
			return again, nil
		}
		return PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(text)}}}), nil
	}, &HandlerOptions{RestartStale: true})
	s.AddResource(&mcp.Resource{URI: "report://latest", Name: "latest"}, func(_ context.Context, r *Request) (Reply, error) {
		text, _, again := answer(r)
		if again != nil {
			return again, nil
		}
		return ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.Name, Text: text}}}), nil
	})
	return s, c
}

const capsForm = `{"elicitation":{"form":{}}}`

func callWith(method, target, args, extra string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + capsForm + `}`
	switch method {
	case "resources/read":
		return `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + target + `"` + extra + `,` + meta + `}}`
	case "prompts/get":
		return `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"` + target + `","arguments":` + args + extra + `,` + meta + `}}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + target + `","arguments":` + args + extra + `,` + meta + `}}`
}

func inputMessage(t *testing.T, r map[string]any, key string) string {
	t.Helper()
	reqs, _ := r["inputRequests"].(map[string]any)
	ir, _ := reqs[key].(map[string]any)
	if ir == nil {
		t.Fatalf("no input request %q in %v", key, r)
	}
	return ir["params"].(map[string]any)["message"].(string)
}

func TestFormSchemaRoundTripWithOverride(t *testing.T) {
	s, _ := newFormServer(t)
	c := rpc{s, "alice"}
	r1, err := c.call(t, callWith("tools/call", "export", `{"period":"2026-Q2"}`, ""))
	if err != nil || r1["resultType"] != "input_required" {
		t.Fatalf("round 1: %v %v", r1, err)
	}
	reqs := r1["inputRequests"].(map[string]any)
	got, _ := json.Marshal(reqs["report_options"].(map[string]any)["params"].(map[string]any)["requestedSchema"])
	var want any
	_ = json.Unmarshal(reportForm.JSON(), &want)
	if string(got) != mustJSON(want) {
		t.Fatalf("requestedSchema on the wire\n got %s\nwant %s", got, reportForm.JSON())
	}
	// The answer to a field that passed the guard only by DeclareNotSecret
	// is still validated on the retry (95.5 is not an integer).
	r2, _ := c.call(t, callWith("tools/call", "export", `{"period":"2026-Q2"}`,
		retry(r1["requestState"].(string), `{"report_options":{"action":"accept","content":{"detail":"detailed","label":"Q2","token_budget":95.5}}}`)))
	if r2["resultType"] != "input_required" || !strings.Contains(inputMessage(t, r2, "report_options"), "token_budget: must be a whole number") {
		t.Fatalf("fractional integer: %v", r2)
	}
	r3, _ := c.call(t, callWith("tools/call", "export", `{"period":"2026-Q2"}`,
		retry(r2["requestState"].(string), `{"report_options":{"action":"accept","content":{"detail":"detailed","label":"Q2","token_budget":500,"extra":"x"}}}`)))
	if text(r3) != `accepted {"detail":"detailed","label":"Q2","token_budget":500}` {
		t.Fatalf("accepted: %v", r3)
	}
}

func TestReaskAtMostTwice(t *testing.T) {
	invalid := `{"report_options":{"action":"accept","content":{"detail":"huge","label":""}}}`
	for _, tc := range []struct{ method, target, args string }{
		{"tools/call", "export", `{}`},
		{"prompts/get", "report_prompt", `{}`},
		{"resources/read", "report://latest", ``},
	} {
		t.Run(tc.method, func(t *testing.T) {
			s, _ := newFormServer(t)
			c := rpc{s, "alice"}
			r, err := c.call(t, callWith(tc.method, tc.target, tc.args, ""))
			if err != nil || r["resultType"] != "input_required" {
				t.Fatalf("first call: %v %v", r, err)
			}
			first := inputMessage(t, r, "report_options")
			for i := 1; i <= MaxReasks; i++ {
				r, err = c.call(t, callWith(tc.method, tc.target, tc.args, retry(r["requestState"].(string), invalid)))
				if err != nil || r["resultType"] != "input_required" {
					t.Fatalf("invalid answer %d: %v %v", i, r, err)
				}
				msg := inputMessage(t, r, "report_options")
				want := first + "\n\nYour previous answer was not accepted: Detail level (detail): must be one of the choices; Label (label): must be at least 1 character. Please correct it."
				if msg != want {
					t.Fatalf("re-ask %d message\n got %q\nwant %q", i, msg, want)
				}
			}
			// A missing answer does not count as a correction...
			r, err = c.call(t, callWith(tc.method, tc.target, tc.args, retry(r["requestState"].(string), `{}`)))
			if err != nil || r["resultType"] != "input_required" || inputMessage(t, r, "report_options") != first {
				t.Fatalf("missing answer: %v %v", r, err)
			}
			// ...but the count carries over it: the third invalid answer ends it.
			r, err = c.call(t, callWith(tc.method, tc.target, tc.args, retry(r["requestState"].(string), invalid)))
			if tc.method == "tools/call" {
				if err != nil || r["resultType"] != "complete" || r["isError"] != true ||
					!strings.Contains(text(r), `the answer to "report_options" was still not valid after 2 corrections`) {
					t.Fatalf("third invalid answer: %v %v", r, err)
				}
				return
			}
			if err == nil || err.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Message, "still not valid after 2 corrections") {
				t.Fatalf("third invalid answer: %v %v", r, err)
			}
		})
	}
}

func TestNoReaskAfterDeclineOrCancel(t *testing.T) {
	s, _ := newFormServer(t)
	c := rpc{s, "alice"}
	for _, action := range []string{"decline", "cancel"} {
		r, _ := c.call(t, callWith("tools/call", "nagging", `{}`, ""))
		_, err := c.call(t, callWith("tools/call", "nagging", `{}`, retry(r["requestState"].(string), `{"report_options":{"action":"`+action+`"}}`)))
		if err == nil || err.Code != jsonrpc.CodeInternalError {
			t.Fatalf("%s then re-ask: %v", action, err)
		}
	}
	// A well-behaved handler ends with distinct results.
	r, _ := c.call(t, callWith("tools/call", "export", `{}`, ""))
	st := r["requestState"].(string)
	d, _ := c.call(t, callWith("tools/call", "export", `{}`, retry(st, `{"report_options":{"action":"decline","content":{"detail":"junk"}}}`)))
	k, _ := c.call(t, callWith("tools/call", "export", `{}`, retry(st, `{"report_options":{"action":"cancel"}}`)))
	if text(d) != "declined" || text(k) != "cancelled" || d["isError"] != true || k["isError"] != true {
		t.Fatalf("decline %v cancel %v", d, k)
	}
}

func TestRestartStale(t *testing.T) {
	accept := `{"report_options":{"action":"accept","content":{"detail":"summary","label":"Q2"}}}`
	t.Run("expired", func(t *testing.T) {
		s, clk := newFormServer(t)
		c := rpc{s, "alice"}
		r1, _ := c.call(t, callWith("tools/call", "export", `{"period":"Q2"}`, ""))
		clk.advance(reqstate.DefaultTTL)
		r2, err := c.call(t, callWith("tools/call", "export", `{"period":"Q2"}`, retry(r1["requestState"].(string), accept)))
		if err != nil || r2["resultType"] != "input_required" || !strings.HasPrefix(inputMessage(t, r2, "report_options"), "(expired) ") {
			t.Fatalf("expired state: %v %v", r2, err)
		}
		// The fresh question is a new operation: its answer completes.
		r3, _ := c.call(t, callWith("tools/call", "export", `{"period":"Q2"}`, retry(r2["requestState"].(string), accept)))
		if !strings.HasPrefix(text(r3), "accepted") {
			t.Fatalf("fresh answer: %v", r3)
		}
	})
	t.Run("arguments changed", func(t *testing.T) {
		s, _ := newFormServer(t)
		c := rpc{s, "alice"}
		r1, _ := c.call(t, callWith("tools/call", "export", `{"period":"Q2"}`, ""))
		r2, err := c.call(t, callWith("tools/call", "export", `{"period":"Q3"}`, retry(r1["requestState"].(string), accept)))
		if err != nil || r2["resultType"] != "input_required" || !strings.HasPrefix(inputMessage(t, r2, "report_options"), "(arguments_changed) ") {
			t.Fatalf("changed arguments: %v %v", r2, err)
		}
		// The new question is bound to Q3: under Q2 it is refused... as a
		// change of arguments again, so asked afresh, never applied.
		r3, _ := c.call(t, callWith("tools/call", "export", `{"period":"Q2"}`, retry(r2["requestState"].(string), accept)))
		if r3["resultType"] != "input_required" {
			t.Fatalf("Q3's question answered under Q2: %v", r3)
		}
		r4, _ := c.call(t, callWith("tools/call", "export", `{"period":"Q3"}`, retry(r2["requestState"].(string), accept)))
		if !strings.HasPrefix(text(r4), "accepted") {
			t.Fatalf("answer under Q3: %v", r4)
		}
	})
	t.Run("prompt", func(t *testing.T) {
		s, clk := newFormServer(t)
		c := rpc{s, "alice"}
		r1, _ := c.call(t, callWith("prompts/get", "report_prompt", `{}`, ""))
		clk.advance(reqstate.DefaultTTL + time.Second)
		r2, err := c.call(t, callWith("prompts/get", "report_prompt", `{}`, retry(r1["requestState"].(string), accept)))
		if err != nil || r2["resultType"] != "input_required" {
			t.Fatalf("prompt with expired state: %v %v", r2, err)
		}
	})
	t.Run("still refused", func(t *testing.T) {
		s, clk := newFormServer(t)
		alice, bob := rpc{s, "alice"}, rpc{s, "bob"}
		r1, _ := alice.call(t, callWith("tools/call", "export", `{"period":"Q2"}`, ""))
		st := r1["requestState"].(string)
		other, _ := alice.call(t, callWith("tools/call", "export_strict", `{}`, ""))
		otherState := other["requestState"].(string)
		for _, tc := range []struct {
			name, tool, args, state string
			who                     rpc
		}{
			{"another user", "export", `{"period":"Q2"}`, st, bob},
			{"another user, new args", "export", `{"period":"Q3"}`, st, bob},
			{"another tool's state", "export", `{}`, otherState, alice},
			{"tampered", "export", `{"period":"Q2"}`, st + "x", alice},
			{"new args without the option", "export_strict", `{"x":1}`, otherState, alice},
		} {
			_, err := tc.who.call(t, callWith("tools/call", tc.tool, tc.args, retry(tc.state, accept)))
			if err == nil || err.Code != jsonrpc.CodeInvalidParams || err.Message != "invalid or expired requestState" {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		clk.advance(reqstate.DefaultTTL)
		if _, err := alice.call(t, callWith("tools/call", "export_strict", `{}`, retry(otherState, accept))); err == nil || err.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("expired without the option: %v", err)
		}
	})
}

func TestElicitFormSchemaErrors(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "nil_schema"}, func(context.Context, *Request) (Reply, error) {
		return Ask().ElicitFormSchema("k", "m", nil), nil
	})
	s.AddTool(&mcp.Tool{Name: "no_message"}, func(context.Context, *Request) (Reply, error) {
		return Ask().ElicitFormSchema("k", "", reportForm), nil
	})
	s.AddTool(&mcp.Tool{Name: "nested"}, func(context.Context, *Request) (Reply, error) {
		return Ask().ElicitForm("k", "m", json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`)), nil
	})
	c := rpc{s, ""}
	for _, tool := range []string{"nil_schema", "no_message", "nested"} {
		if _, err := c.call(t, callWith("tools/call", tool, `{}`, "")); err == nil || err.Code != jsonrpc.CodeInternalError || err.Message != "Internal error" {
			t.Errorf("%s: %v", tool, err)
		}
	}
}

func TestPayloadReaskCount(t *testing.T) {
	a := Ask().ElicitFormSchema("f", "m", reportForm).ElicitURL("u", "m", "https://x.example/").WithState([]byte("app"))
	is := a.issued["f"]
	is.reasks = 2
	a.issued["f"] = is
	iss, state, ok := decodePayload(encodePayload(a))
	if !ok || string(state) != "app" || iss["f"].reasks != 2 || iss["f"].kind != kindForm || iss["u"].kind != kindURL || iss["u"].reasks != 0 {
		t.Fatalf("decoded %+v %q %v", iss, state, ok)
	}
	// A payload sealed before re-asks were counted reads with count 0.
	old := []byte{1, 1, 'u', kindURL}
	if iss, _, ok := decodePayload(old); !ok || iss["u"].kind != kindURL || iss["u"].reasks != 0 {
		t.Fatalf("old payload: %+v %v", iss, ok)
	}
}

// prompts/get and resources/read ask with the same API as tools/call.
func TestPromptAndResourceAsk(t *testing.T) {
	s, _ := newFormServer(t)
	c := rpc{s, "alice"}
	accept := `{"report_options":{"action":"accept","content":{"detail":"summary","label":"Q2"}}}`
	p1, err := c.call(t, callWith("prompts/get", "report_prompt", `{}`, ""))
	if err != nil || p1["resultType"] != "input_required" {
		t.Fatalf("prompt: %v %v", p1, err)
	}
	p2, err := c.call(t, callWith("prompts/get", "report_prompt", `{}`, retry(p1["requestState"].(string), accept)))
	if err != nil || p2["resultType"] != "complete" || !strings.Contains(mustJSON(p2["messages"]), `accepted {\"detail\":\"summary\",\"label\":\"Q2\"}`) {
		t.Fatalf("prompt answer: %v %v", p2, err)
	}
	r1, err := c.call(t, callWith("resources/read", "report://latest", "", ""))
	if err != nil || r1["resultType"] != "input_required" {
		t.Fatalf("resource: %v %v", r1, err)
	}
	r2, err := c.call(t, callWith("resources/read", "report://latest", "", retry(r1["requestState"].(string), accept)))
	if err != nil || r2["resultType"] != "complete" || !strings.Contains(mustJSON(r2["contents"]), "accepted") || r2["cacheScope"] != "private" || r2["ttlMs"] != 0.0 {
		t.Fatalf("resource answer: %v %v", r2, err)
	}
	// Form-only capability is what the gate checks for these methods too.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if _, err := c.call(t, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"report_prompt",`+meta+`}}`); err == nil || err.Code != mcp.CodeMissingRequiredClientCapability {
		t.Fatalf("prompt without elicitation: %v", err)
	}
}
