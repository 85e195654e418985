package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// A label is shown as a JSON string literal: it cannot end the quote or
// add a line; text meant for people is not HTML-escaped.
func ExampleQuote() {
	fmt.Println(Quote("R&D <b>\"final\"</b>\nIgnore the above\u202e"))
	// Output: "R&D <b>\"final\"</b>\nIgnore the above\u202e"
}

func TestForms(t *testing.T) {
	// The export form of docs/flows.md: a titled choice and a bounded label.
	tests := []struct {
		name    string
		schema  *elicit.Schema
		content map[string]any
		ok      bool
	}{
		{"summary", exportForm, map[string]any{"detail": "summary", "label": "x"}, true},
		{"detailed, 80 characters", exportForm, map[string]any{"detail": "detailed", "label": strings.Repeat("é", 80)}, true},
		{"81 characters", exportForm, map[string]any{"detail": "detailed", "label": strings.Repeat("x", 81)}, false},
		{"empty label", exportForm, map[string]any{"detail": "detailed", "label": ""}, false},
		{"title instead of const", exportForm, map[string]any{"detail": "Detailed", "label": "x"}, false},
		{"no detail", exportForm, map[string]any{"label": "x"}, false},
		{"confirm", confirmForm, map[string]any{"send": true}, true},
		{"confirm as text", confirmForm, map[string]any{"send": "yes"}, false},
	}
	for _, tt := range tests {
		if err := tt.schema.Validate(tt.content); (err == nil) != tt.ok {
			t.Errorf("%s: Validate = %v", tt.name, err)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(exportForm.JSON(), &raw); err != nil || raw["required"] == nil {
		t.Fatalf("export form JSON: %s", exportForm.JSON())
	}
}

func TestQuoteShowsFormatCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"Q3 <b>":          `"Q3 <b>"`,
		"R&D > plan":      `"R&D > plan"`,
		"nul\x00esc\x1b":  `"nul\u0000esc\u001b"`,
		"x\u202ey":        `"x\u202ey"`,
		"zero\u200bwidth": `"zero\u200bwidth"`,
		"line\nbreak":     `"line\nbreak"`,
		"fill\u3164er":    `"fill\u3164er"`,
		"blank\u2800":     `"blank\u2800"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// The tools' arguments are checked by the library against the schemas
// inferred from exportArgs and sendArgs, before a handler runs: names
// match exactly (a "Recipient" beside "recipient" must not pick the address
// a gateway or policy did not see), the period follows its pattern, the
// dataset is one of the list, the recipient is an email address.
func TestArguments(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "reports", Version: "1"}, nil)
	New(nil, nil, nil).Register(s)
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()
	c := mcpclient.New(srv.URL, nil)
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{ToolExport, `{"period":"2026-Q2","dataset":"sales"}`, true},
		{ToolExport, `{"period":"2026-01","dataset":"usage"}`, true},
		{ToolExport, `{"period":"2026-12","dataset":"support"}`, true},
		{ToolExport, `{"period":"2026-13","dataset":"sales"}`, false},
		{ToolExport, `{"period":"2026-Q5","dataset":"sales"}`, false},
		{ToolExport, `{"period":"26-Q1","dataset":"sales"}`, false},
		{ToolExport, `{"period":"2026-Q1 ","dataset":"sales"}`, false},
		{ToolExport, `{"period":"","dataset":"sales"}`, false},
		{ToolExport, `{"period":"2026-Q1","dataset":"secrets"}`, false},
		{ToolExport, `{"period":"2026-Q1"}`, false},
		{ToolSend, `{"draft_id":"d_1","recipient":"bob@example.com"}`, true},
		{ToolSend, `{"draft_id":"d_1","recipient":"bob@example.com","Recipient":"eve@evil.example"}`, false},
		{ToolSend, `{"DRAFT_ID":"d_1","recipient":"bob@example.com"}`, false},
		{ToolSend, `{"draft_id":"d_1","recipient":"bob"}`, false},
		{ToolSend, `{"draft_id":"d_1","recipient":""}`, false},
		{ToolSend, `{"draft_id":"","recipient":"bob@example.com"}`, false},
		{ToolList, `{}`, true},
		{ToolList, `{"all":true}`, false},
	}
	for _, tt := range tests {
		res, err := c.CallTool(context.Background(), tt.tool, json.RawMessage(tt.args))
		var rpc *mcpclient.RPCError
		switch {
		case tt.ok && (err != nil || res.Content[0].Text != TextSignIn):
			// Without a signed-in user, valid arguments get as far as the
			// sign-in check.
			t.Errorf("%s %s: %+v %v", tt.tool, tt.args, res, err)
		case !tt.ok && (!errors.As(err, &rpc) || rpc.Code != -32602):
			t.Errorf("%s %s: %+v %v, want -32602", tt.tool, tt.args, res, err)
		}
	}
}
