package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// GreetArgs are the greet tool's arguments: the schema is inferred from
// the type, and the tags refine it.
type GreetArgs struct {
	Language string `json:"language,omitempty" description:"Language of the greeting." enum:"en|fr" default:"en"`
}

// Who is the question greet asks, as a form.
type Who struct {
	Name string `json:"name" title:"Your name" minLength:"1" maxLength:"40"`
}

// Greeting is greet's structured result.
type Greeting struct {
	Text string `json:"text"`
}

// greet asks the user's name in a form and greets them. The library
// seals the state between the rounds, refuses clients that did not
// declare form mode (-32021), and checks the answer against the form
// before Decode reads it.
func greet(ctx context.Context, req *mcpserver.Request, in GreetArgs) (mcpserver.Reply, Greeting, error) {
	switch a := elicit.Decode[Who](req.Elicitation("who")); a.Outcome {
	case elicit.Accepted:
		hello := map[string]string{"en": "Hello", "fr": "Bonjour"}[in.Language]
		return nil, Greeting{Text: hello + ", " + a.Value.Name + "!"}, nil
	case elicit.Declined, elicit.Cancelled:
		return mcpserver.ToolError("No name, no greeting."), Greeting{}, nil
	}
	return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Who]()), Greeting{}, nil
}

// A typed tool that asks the user a question, served over Streamable
// HTTP and called with mcpclient, whose Handlers answer the form.
func Example() {
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets the user by name."}, greet)
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Printf("%s asks: %s\n", who.Server.Name, p.Message)
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
		},
	}})
	res, err := c.CallTool(context.Background(), "greet", map[string]any{"language": "fr"})
	if err != nil {
		fmt.Println(err)
		return
	}
	structured, _ := json.Marshal(res.StructuredContent)
	fmt.Println(string(structured))
	// Output:
	// greeter asks: What is your name?
	// {"text":"Bonjour, Ada!"}
}

// AddTool infers the input and output schemas from the Go types and
// checks the arguments before the handler runs: a member the type does
// not have is refused with -32602, naming it.
func ExampleAddTool() {
	type Args struct {
		Period  string `json:"period" pattern:"^[0-9]{4}-Q[1-4]$"`
		Dataset string `json:"dataset" enum:"sales|usage"`
	}
	type Summary struct {
		Rows int `json:"rows"`
	}
	s := mcpserver.New(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "count_rows"},
		func(ctx context.Context, req *mcpserver.Request, in Args) (mcpserver.Reply, Summary, error) {
			return nil, Summary{Rows: len(in.Dataset) * 100}, nil
		})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()
	c := mcpclient.New(srv.URL, nil)
	ctx := context.Background()

	tools, _ := c.ListTools(ctx)
	fmt.Println(string(tools[0].InputSchema))
	fmt.Println(string(tools[0].OutputSchema))
	res, _ := c.CallTool(ctx, "count_rows", map[string]any{"period": "2026-Q2", "dataset": "sales"})
	fmt.Println(res.Content[0].Text)
	_, err := c.CallTool(ctx, "count_rows", map[string]any{"period": "2026-Q2", "dataset": "sales", "limit": 5})
	var rpc *mcpclient.RPCError
	if errors.As(err, &rpc) {
		fmt.Println(rpc.Code, rpc.Message)
	}
	// Output:
	// {"type":"object","properties":{"period":{"type":"string","pattern":"^[0-9]{4}-Q[1-4]$"},"dataset":{"type":"string","enum":["sales","usage"]}},"required":["period","dataset"],"additionalProperties":false}
	// {"type":"object","properties":{"rows":{"type":"integer"}},"required":["rows"],"additionalProperties":false}
	// {"rows":500}
	// -32602 Invalid params: "limit" is not a known argument
}

// A flow of several rounds: each round asks one question, and what the
// earlier rounds learnt travels in the sealed state (WithState), not in
// server memory, so any instance can serve the next round.
func ExampleInputRequired_WithState() {
	type Size struct {
		Size string `json:"size" title:"Size" enum:"s|m|l" enumTitles:"Small|Medium|Large"`
	}
	type Confirm struct {
		OK bool `json:"ok" title:"Place the order"`
	}
	type Order struct {
		Item string `json:"item"`
	}
	type Placed struct {
		Item string `json:"item"`
		Size string `json:"size"`
	}
	s := mcpserver.New(mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "order"},
		func(ctx context.Context, req *mcpserver.Request, in Order) (mcpserver.Reply, Placed, error) {
			size := string(req.State) // chosen in an earlier round
			if a := elicit.Decode[Size](req.Elicitation("size")); a.Outcome == elicit.Accepted {
				size = a.Value.Size
			}
			if size == "" {
				return mcpserver.Ask().ElicitFormSchema("size", "Which size of "+in.Item+"?", elicit.MustFormFor[Size]()), Placed{}, nil
			}
			switch a := elicit.Decode[Confirm](req.Elicitation("confirm")); {
			case a.Outcome == elicit.Accepted && a.Value.OK:
				return nil, Placed{Item: in.Item, Size: size}, nil
			case a.Outcome == elicit.Accepted, a.Outcome == elicit.Declined, a.Outcome == elicit.Cancelled:
				return mcpserver.ToolError("Nothing was ordered."), Placed{}, nil
			}
			msg := fmt.Sprintf("Order one %s, size %s?", in.Item, size)
			return mcpserver.Ask().ElicitFormSchema("confirm", msg, elicit.MustFormFor[Confirm]()).WithState([]byte(size)), Placed{}, nil
		})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	answers := map[string]map[string]any{"size": {"size": "m"}, "confirm": {"ok": true}}
	c := mcpclient.New(srv.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", p.Message)
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: answers[key]}, nil
		},
	}})
	res, err := c.CallTool(context.Background(), "order", map[string]any{"item": "T-shirt"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// asked: Which size of T-shirt?
	// asked: Order one T-shirt, size m?
	// {"item":"T-shirt","size":"m"}
}

// The raw registration, for a hand-written schema: the handler decodes
// its arguments (BindArguments is strict) and answers with a Reply. An
// invalid form answer is asked again with what was wrong, at most
// MaxReasks times; the handler just asks.
func ExampleServer_AddTool() {
	s := mcpserver.New(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "export_report",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"period":{"type":"string"}},"required":["period"]}`)},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			var args struct {
				Period string `json:"period"`
			}
			if err := req.BindArguments(&args); err != nil {
				return nil, err
			}
			switch a := req.Elicitation("options"); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text("Prepared a " + a.Content["detail"].(string) + " draft for " + args.Period + "."), nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("No draft was prepared."), nil
			}
			return mcpserver.Ask().ElicitForm("options", "Choose the detail level.",
				json.RawMessage(`{"type":"object","properties":{"detail":{"type":"string","title":"Detail level","enum":["summary","detailed"]}},"required":["detail"]}`)), nil
		})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	first := true
	c := mcpclient.New(srv.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Printf("asked: %q\n", p.Message)
			detail := "detailed"
			if first {
				detail, first = "everything", false // not one of the choices
			}
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"detail": detail}}, nil
		},
	}})
	res, err := c.CallTool(context.Background(), "export_report", map[string]any{"period": "2026-Q2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// asked: "Choose the detail level."
	// asked: "Choose the detail level.\n\nYour previous answer was not accepted: Detail level (detail): must be one of the choices. Please correct it."
	// Prepared a detailed draft for 2026-Q2.
}

// An Observer turns each round into an audit line: the category says what
// happened (here the user declined), never what was typed.
func ExampleObserver() {
	audit := func(_ context.Context, r *mcpserver.Round) {
		fmt.Printf("%s %s round=%d outcome=%s\n", r.Method, r.Name, r.Round, r.Outcome)
	}
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, &mcpserver.Options{Observer: audit})
	mcpserver.AddTool(s, &mcp.Tool{Name: "greet"}, greet)
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		},
	}})
	res, err := c.CallTool(context.Background(), "greet", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.IsError, res.Content[0].Text)
	// Output:
	// tools/call greet round=0 outcome=input_required
	// tools/call greet round=1 outcome=declined
	// true No name, no greeting.
}

// ExampleOutcomes pre-declares a metric's outcome labels, so every
// series shows from the start, at 0; the slice is the caller's own.
func ExampleOutcomes() {
	counts := map[mcpserver.Outcome]int{}
	for _, o := range mcpserver.Outcomes() {
		counts[o] = 0
	}
	fmt.Println(len(counts), counts[mcpserver.OutcomeLeaseLost])
	// Output: 14 0
}
