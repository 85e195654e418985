package elicit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// A form built from a struct: each field a property, the tags its title,
// choices and bounds. What form mode cannot carry is refused when the form
// is built, not when a user is waiting.
func ExampleFormFor() {
	type Options struct {
		Detail string `json:"detail" title:"Detail level" enum:"summary|detailed" enumTitles:"Summary|Detailed"`
		Label  string `json:"label" title:"Label" minLength:"1" maxLength:"80"`
		Copies int    `json:"copies,omitempty" title:"Copies" minimum:"1" maximum:"5" default:"1"`
	}
	form, err := elicit.FormFor[Options]()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(form.JSON()))

	type Address struct {
		City string `json:"city"`
	}
	type Nested struct {
		Ship Address `json:"ship"`
	}
	_, err = elicit.FormFor[Nested]()
	fmt.Println(errors.Is(err, elicit.ErrBadSchema), err)
	// Output:
	// {"type":"object","properties":{"detail":{"type":"string","title":"Detail level","oneOf":[{"const":"summary","title":"Summary"},{"const":"detailed","title":"Detailed"}]},"label":{"type":"string","title":"Label","minLength":1,"maxLength":80},"copies":{"type":"integer","title":"Copies","minimum":1,"maximum":5,"default":1}},"required":["detail","label"]}
	// true elicit: invalid form schema: field Ship ("ship"): nested objects cannot be asked in form mode (flat primitives only, ELI-S-06)
}

// A tool asks a typed question and reads the answer with Decode: accept
// brings the value, decline and cancel stay distinct outcomes. Served over
// Streamable HTTP and answered by mcpclient's Handlers.
func ExampleDecode() {
	type Confirm struct {
		Send bool   `json:"send" title:"Send it now"`
		Note string `json:"note,omitempty" title:"Note for the recipient" maxLength:"200"`
	}
	s := mcpserver.New(mcp.Implementation{Name: "mailer", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "send_report"},
		func(ctx context.Context, req *mcpserver.Request, in struct{}) (mcpserver.Reply, any, error) {
			switch a := elicit.Decode[Confirm](req.Elicitation("confirm")); a.Outcome {
			case elicit.Accepted:
				if !a.Value.Send {
					return mcpserver.ToolError("Not sent: the box was not ticked."), nil, nil
				}
				return mcpserver.Text("Sent, with the note " + fmt.Sprintf("%q", a.Value.Note) + "."), nil, nil
			case elicit.Declined:
				return mcpserver.ToolError("Not sent: you declined."), nil, nil
			case elicit.Cancelled:
				return mcpserver.ToolError("Not sent: the question was dismissed; call again to restart."), nil, nil
			}
			return mcpserver.Ask().ElicitFormSchema("confirm", "Send the Q2 report to bob@example.com?", elicit.MustFormFor[Confirm]()), nil, nil
		})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	for _, answer := range []*mcp.ElicitResult{
		{Action: mcp.ActionAccept, Content: map[string]any{"send": true, "note": "Numbers as agreed"}},
		{Action: mcp.ActionDecline},
		{Action: mcp.ActionCancel},
	} {
		c := mcpclient.New(srv.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
			ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				return answer, nil
			},
		}})
		res, err := c.CallTool(context.Background(), "send_report", nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(answer.Action, res.IsError, res.Content[0].Text)
	}
	// Output:
	// accept false Sent, with the note "Numbers as agreed".
	// decline true Not sent: you declined.
	// cancel true Not sent: the question was dismissed; call again to restart.
}
