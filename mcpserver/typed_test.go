package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
)

type reportArgs struct {
	Period  string   `json:"period" description:"YYYY-MM or YYYY-Qn" pattern:"^[0-9]{4}-(0[1-9]|1[0-2]|Q[1-4])$"`
	Dataset string   `json:"dataset" enum:"sales|support|usage"`
	Limit   int      `json:"limit,omitempty" minimum:"1" maximum:"100" default:"10"`
	To      string   `json:"to,omitempty" title:"Recipient" format:"email" maxLength:"254"`
	Tags    []string `json:"tags,omitempty" maxItems:"2" minLength:"1"`
	Region  string   `json:"region,omitempty" header:"Region"`
	Filter  *filter  `json:"filter,omitempty"`
}

type filter struct {
	Since time.Time `json:"since" jsonschema:"Only rows from this time on"`
	Min   float64   `json:"min,omitzero"`
}

type reportOut struct {
	Rows   int    `json:"rows"`
	Period string `json:"period"`
}

// The inferred schema: jsonschema-go's types and required list, with the
// tags' keywords, the x-mcp-header annotation and date-time for time.Time.
func TestTypedToolSchemas(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddTool(s, &mcp.Tool{Name: "report"}, func(ctx context.Context, req *Request, in reportArgs) (Reply, reportOut, error) {
		return nil, reportOut{}, nil
	})
	r, err := rpc{s, "alice"}.call(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	tool := r["tools"].([]any)[0].(map[string]any)
	wantIn := `{"type":"object","properties":{` +
		`"period":{"type":"string","description":"YYYY-MM or YYYY-Qn","pattern":"^[0-9]{4}-(0[1-9]|1[0-2]|Q[1-4])$"},` +
		`"dataset":{"type":"string","enum":["sales","support","usage"]},` +
		`"limit":{"type":"integer","default":10,"minimum":1,"maximum":100},` +
		`"to":{"type":"string","title":"Recipient","maxLength":254,"format":"email"},` +
		`"tags":{"type":["null","array"],"items":{"type":"string","minLength":1},"maxItems":2},` +
		`"region":{"type":"string","x-mcp-header":"Region"},` +
		`"filter":{"type":["null","object"],"properties":{"since":{"type":"string","description":"Only rows from this time on","format":"date-time"},"min":{"type":"number"}},"required":["since"],"additionalProperties":false}},` +
		`"required":["period","dataset"],"additionalProperties":false}`
	if got := mustJSON(tool["inputSchema"]); got != canon(t, wantIn) {
		t.Errorf("inputSchema\n got %s\nwant %s", got, canon(t, wantIn))
	}
	wantOut := `{"type":"object","properties":{"rows":{"type":"integer"},"period":{"type":"string"}},"required":["rows","period"],"additionalProperties":false}`
	if got := mustJSON(tool["outputSchema"]); got != canon(t, wantOut) {
		t.Errorf("outputSchema\n got %s\nwant %s", got, canon(t, wantOut))
	}
	if hp, _ := s.toolHeaderParams("report"); len(hp) != 1 || hp[0].Header != "Region" {
		t.Errorf("header params %v", hp)
	}
}

func canon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return mustJSON(v)
}

// Arguments are checked before the handler runs; each refusal is -32602
// and names the member and the rule, never the value.
func TestTypedToolStrictArguments(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	var got reportArgs
	AddTool(s, &mcp.Tool{Name: "report"}, func(ctx context.Context, req *Request, in reportArgs) (Reply, reportOut, error) {
		got = in
		return nil, reportOut{Rows: in.Limit, Period: in.Period}, nil
	})
	c := rpc{s, "alice"}
	tests := []struct {
		name, args, want string // want "" means accepted
	}{
		{"minimal", `{"period":"2026-Q2","dataset":"sales"}`, ""},
		{"unknown member", `{"period":"2026-Q2","dataset":"sales","extra":"sneaky-value"}`, `"extra" is not a known argument`},
		{"unknown nested member", `{"period":"2026-Q2","dataset":"sales","filter":{"since":"2026-01-01T00:00:00Z","max":1}}`, `"filter.max" is not a known argument`},
		{"case differs", `{"Period":"2026-Q2","period":"2026-Q2","dataset":"sales"}`, `"Period" is not a known argument`},
		{"missing required", `{"dataset":"sales"}`, `"period" is required`},
		{"missing nested required", `{"period":"2026-Q2","dataset":"sales","filter":{}}`, `"filter.since" is required`},
		{"wrong type", `{"period":2026,"dataset":"sales"}`, `"period" must be a string`},
		{"fraction for an integer", `{"period":"2026-Q2","dataset":"sales","limit":2.5}`, `"limit" must be a whole number`},
		{"enum", `{"period":"2026-Q2","dataset":"secret-data"}`, `"dataset" must be one of "sales", "support", "usage"`},
		{"pattern", `{"period":"2026-13","dataset":"sales"}`, `"period" must match the pattern`},
		{"maximum", `{"period":"2026-Q2","dataset":"sales","limit":101}`, `"limit" must be at most 100`},
		{"format", `{"period":"2026-Q2","dataset":"sales","to":"not-an-email"}`, `"to" must be an email address`},
		{"nested format", `{"period":"2026-Q2","dataset":"sales","filter":{"since":"yesterday"}}`, `"filter.since" must be a date and time`},
		{"items", `{"period":"2026-Q2","dataset":"sales","tags":["a",""]}`, `"tags[1]" must be at least 1 character`},
		{"maxItems", `{"period":"2026-Q2","dataset":"sales","tags":["a","b","c"]}`, `"tags" must have at most 2 items`},
		{"not an object", `[1]`, `arguments must be an object`},
		{"two problems", `{"dataset":"x"}`, `"period" is required; "dataset" must be one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = reportArgs{}
			r, jerr := c.call(t, callWith("tools/call", "report", tt.args, ""))
			if tt.want == "" {
				if jerr != nil {
					t.Fatalf("refused: %v", jerr)
				}
				return
			}
			if jerr == nil || jerr.Code != -32602 || !strings.Contains(jerr.Message, tt.want) {
				t.Fatalf("got %v, %v; want -32602 containing %q", r, jerr, tt.want)
			}
			if strings.Contains(jerr.Message, "sneaky-value") || strings.Contains(jerr.Message, "secret-data") {
				t.Fatalf("the value is quoted: %s", jerr.Message)
			}
			if got.Period != "" {
				t.Fatalf("the handler ran with %+v", got)
			}
		})
	}
	// A default fills an absent optional member; the decoded struct is what
	// was sent.
	r, jerr := c.call(t, callWith("tools/call", "report", `{"period":"2026-Q2","dataset":"usage","filter":{"since":"2026-01-02T03:04:05Z"}}`, ""))
	if jerr != nil {
		t.Fatal(jerr)
	}
	if got.Limit != 10 || got.Dataset != "usage" || got.Filter == nil || !got.Filter.Since.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("decoded %+v", got)
	}
	if sc := mustJSON(r["structuredContent"]); sc != `{"period":"2026-Q2","rows":10}` || text(r) != `{"rows":10,"period":"2026-Q2"}` {
		t.Fatalf("structured %s, text %q", sc, text(r))
	}
}

// BindArguments refuses a member the target does not have.
func TestBindArgumentsIsStrict(t *testing.T) {
	var args struct {
		Region string `json:"region"`
	}
	for raw, want := range map[string]string{
		`{"region":"eu","extra":1}`:   `"extra" is not a known argument`,
		`{"Region":"eu"}`:             `"Region" is not a known argument`,
		`{"region":1}`:                `"region" must be a string, not a number`,
		`{"region":"a","region":"b"}`: `"region" appears twice`,
	} {
		err := (&Request{Arguments: json.RawMessage(raw)}).BindArguments(&args)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-32602") {
			t.Errorf("%s: err = %v, want -32602 %q", raw, err, want)
		}
	}
	if err := (&Request{}).BindArguments(&args); err != nil {
		t.Errorf("absent arguments: %v", err)
	}
}

type who struct {
	Name string `json:"name" title:"Your name" minLength:"1"`
}

type greeting struct {
	Greeting string `json:"greeting"`
}

// A typed handler asks with Ask and returns its typed output on the
// retry; a refusal is a ToolError; a Text reply keeps its text and gets
// the structured output.
func TestTypedToolAsks(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	form := elicit.MustFormFor[who]()
	AddTool(s, &mcp.Tool{Name: "greet"}, func(ctx context.Context, req *Request, in struct{}) (Reply, *greeting, error) {
		switch a := elicit.Decode[who](req.Elicitation("who")); a.Outcome {
		case elicit.Accepted:
			if a.Value.Name == "Text" {
				return Text("Hi!"), &greeting{Greeting: "Hi"}, nil
			}
			return nil, &greeting{Greeting: "Hello, " + a.Value.Name + "!"}, nil
		case elicit.Declined, elicit.Cancelled:
			return ToolError("No name, no greeting."), nil, nil
		}
		return Ask().ElicitFormSchema("who", "What is your name?", form), nil, nil
	})
	c := rpc{s, "alice"}
	answer := func(resp string) map[string]any {
		t.Helper()
		r, jerr := c.call(t, callWith("tools/call", "greet", `{}`, ""))
		if jerr != nil || r["resultType"] != "input_required" {
			t.Fatalf("first round: %v %v", r, jerr)
		}
		r, jerr = c.call(t, callWith("tools/call", "greet", `{}`, retry(r["requestState"].(string), `{"who":`+resp+`}`)))
		if jerr != nil {
			t.Fatalf("retry: %v", jerr)
		}
		return r
	}
	r := answer(`{"action":"accept","content":{"name":"Ada"}}`)
	if mustJSON(r["structuredContent"]) != `{"greeting":"Hello, Ada!"}` || text(r) != `{"greeting":"Hello, Ada!"}` || r["isError"] != nil {
		t.Fatalf("accepted: %v", r)
	}
	r = answer(`{"action":"decline"}`)
	if r["isError"] != true || text(r) != "No name, no greeting." || r["structuredContent"] != nil {
		t.Fatalf("declined: %v", r)
	}
	r = answer(`{"action":"accept","content":{"name":"Text"}}`)
	if text(r) != "Hi!" || mustJSON(r["structuredContent"]) != `{"greeting":"Hi"}` {
		t.Fatalf("text reply: %v", r)
	}
	r = answer(`{"action":"accept","content":{"name":""}}`)
	if r["resultType"] != "input_required" || !strings.Contains(inputMessage(t, r, "who"), "Your name (name): must be at least 1 character") {
		t.Fatalf("invalid answer is asked again: %v", r)
	}
}

// What AddTool cannot serve is a programming error, caught at registration.
func TestAddToolRefuses(t *testing.T) {
	type nested struct {
		A struct {
			B int `json:"b" pattern:"x"`
		} `json:"a"`
	}
	type headerOnNumber struct {
		Score float64 `json:"score" header:"Score"`
	}
	type badDefault struct {
		N int `json:"n,omitempty" maximum:"5" default:"9"`
	}
	type titled struct {
		D string `json:"d" enum:"a|b" enumTitles:"A|B"`
	}
	h := func(ctx context.Context, req *Request, in map[string]any) (Reply, any, error) { return nil, nil, nil }
	tests := []struct {
		name     string
		register func(s *Server)
		want     string
	}{
		{"input schema set", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
		}, "leave them nil"},
		{"input not an object", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *Request, in string) (Reply, any, error) { return nil, nil, nil })
		}, "not a struct or a map"},
		{"output not an object", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *Request, in struct{}) (Reply, []int, error) { return nil, nil, nil })
		}, "output: []int is not a struct"},
		{"tag on the wrong type", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *Request, in nested) (Reply, any, error) { return nil, nil, nil })
		}, `field B ("a.b"): pattern, format, minLength and maxLength apply to strings`},
		{"header on a number", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *Request, in headerOnNumber) (Reply, any, error) { return nil, nil, nil })
		}, "only string, integer and boolean"},
		{"default out of range", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *Request, in badDefault) (Reply, any, error) { return nil, nil, nil })
		}, "default does not fit"},
		{"form-only tags", func(s *Server) {
			AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *Request, in titled) (Reply, any, error) { return nil, nil, nil })
		}, "are for forms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %v, want %q", r, tt.want)
				}
			}()
			tt.register(New(mcp.Implementation{Name: "t", Version: "1"}, nil))
		})
	}
}

func FuzzTypedArguments(f *testing.F) {
	for _, s := range []string{`{"period":"2026-Q2","dataset":"sales"}`, `{"filter":{"since":1}}`, `{"tags":[1,"a"]}`, `null`, `{"limit":1e400}`} {
		f.Add(s)
	}
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddTool(s, &mcp.Tool{Name: "report"}, func(ctx context.Context, req *Request, in reportArgs) (Reply, reportOut, error) {
		if in.Period == "" || in.Limit < 1 || in.Limit > 100 || len(in.Tags) > 2 {
			panic("the handler got arguments its schema refuses")
		}
		return nil, reportOut{}, nil
	})
	e := s.toolIndex["report"]
	f.Fuzz(func(t *testing.T, args string) {
		_, _ = e.handler(context.Background(), &Request{Arguments: json.RawMessage(args)})
	})
}
