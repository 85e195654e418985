package main

import (
	"context"
	"errors"
	"testing"

	"github.com/mcp-elicit/elicit/internal/progtest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// The program as a user runs it: built, started, and driven by mcpclient.
func TestQuickstart(t *testing.T) {
	url := progtest.Start(t)
	ctx := context.Background()
	answer := func(res *mcp.ElicitResult) *mcpclient.Client {
		return mcpclient.New(url, &mcpclient.Options{Handlers: &mcpclient.Handlers{
			ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				if who.Server == nil || who.Server.Name != "greeter" || key != "who" || p.Message != "What is your name?" {
					t.Errorf("asked by %+v under %q: %q", who.Server, key, p.Message)
				}
				return res, nil
			},
		}})
	}
	for _, tt := range []struct {
		answer  *mcp.ElicitResult
		isError bool
		text    string
	}{
		{&mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, false, "Hello, Ada!"},
		{&mcp.ElicitResult{Action: mcp.ActionDecline}, true, "No greeting: you chose not to give your name."},
		{&mcp.ElicitResult{Action: mcp.ActionCancel}, true, "No greeting yet: the question was closed unanswered. Call greet again to answer it."},
	} {
		res, err := answer(tt.answer).CallTool(ctx, "greet", nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.answer.Action, err)
		}
		if res.IsError != tt.isError || res.Content[0].Text != tt.text {
			t.Errorf("%s: %+v", tt.answer.Action, res)
		}
	}
	// An empty name does not fit the form: the client is asked again, with
	// the reason, and its second answer counts.
	calls := 0
	c := mcpclient.New(url, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			calls++
			if calls == 1 {
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": ""}}, nil
			}
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Grace"}}, nil
		},
	}})
	if res, err := c.CallTool(ctx, "greet", nil); err != nil || res.Content[0].Text != "Hello, Grace!" || calls != 2 {
		t.Fatalf("re-ask: %+v %v after %d questions", res, err, calls)
	}
	// A client without form mode is refused before anything is asked.
	_, err := mcpclient.New(url, nil).CallTool(ctx, "greet", nil)
	var missing *mcpclient.MissingCapabilityError
	if !errors.As(err, &missing) || !missing.RequiredCapabilities.ElicitationForm() {
		t.Fatalf("without form mode: %v", err)
	}
}
