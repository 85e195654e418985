package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/internal/progtest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// answering returns a client whose form answers come from answers, one
// per question, and records the questions' messages.
func answering(url string, asked *[]string, answers ...*mcp.ElicitResult) *mcpclient.Client {
	return mcpclient.New(url, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			*asked = append(*asked, p.Message)
			if len(*asked) > len(answers) {
				return nil, errors.New("asked once too often")
			}
			return answers[len(*asked)-1], nil
		},
	}})
}

var args = map[string]any{"restaurant": "sakura", "date": "2026-08-14"}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}
}

func TestBookTable(t *testing.T) {
	srv := httptest.NewServer(streamhttp.NewHandler(newServer(), nil))
	defer srv.Close()
	ctx := context.Background()
	good := map[string]any{"party": 4, "time": "19:30", "needs": []any{"vegan"}, "email": "ada@example.com"}

	var asked []string
	res, err := answering(srv.URL, &asked, accept(good)).CallTool(ctx, "book_table", args)
	if err != nil {
		t.Fatal(err)
	}
	var b Booked
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &b); err != nil || res.IsError || !strings.HasPrefix(b.Reference, "BK-") {
		t.Fatalf("booked: %+v (%s)", res, raw)
	}
	b.Reference = ""
	if want := (Booked{Restaurant: "sakura", Date: "2026-08-14", Time: "19:30", Party: 4, Needs: []string{"vegan"}}); !reflect.DeepEqual(b, want) {
		t.Fatalf("booked %+v, want %+v", b, want)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "sakura on 2026-08-14") {
		t.Fatalf("asked %q", asked)
	}

	// Decline and cancel end differently; nothing is booked either way.
	for action, want := range map[string]string{mcp.ActionDecline: TextDeclined, mcp.ActionCancel: TextCancelled} {
		asked = nil
		res, err := answering(srv.URL, &asked, &mcp.ElicitResult{Action: action}).CallTool(ctx, "book_table", args)
		if err != nil || !res.IsError || res.Content[0].Text != want || res.StructuredContent != nil {
			t.Fatalf("%s: %+v %v", action, res, err)
		}
	}

	// An answer that does not fit the form is asked again with the reason.
	asked = nil
	tooMany := map[string]any{"party": 20, "time": "19:30", "email": "ada@example.com"}
	if _, err := answering(srv.URL, &asked, accept(tooMany), accept(good)).CallTool(ctx, "book_table", args); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || !strings.Contains(asked[1], "Party size (party): must be at most 12") {
		t.Fatalf("re-ask: %q", asked)
	}

}

// Bad arguments never reach the user.
func TestBookTableBadArguments(t *testing.T) {
	srv := httptest.NewServer(streamhttp.NewHandler(newServer(), nil))
	defer srv.Close()
	ctx := context.Background()
	good := map[string]any{"party": 4, "time": "19:30", "needs": []any{"vegan"}, "email": "ada@example.com"}
	var asked []string
	for _, bad := range []map[string]any{
		{"restaurant": "nowhere", "date": "2026-08-14"},
		{"restaurant": "sakura", "date": "next friday"},
		{"restaurant": "sakura", "date": "2026-08-14", "party": 3},
	} {
		asked = nil
		_, err := answering(srv.URL, &asked, accept(good)).CallTool(ctx, "book_table", bad)
		var rpc *mcpclient.RPCError
		if !errors.As(err, &rpc) || rpc.Code != -32602 || len(asked) != 0 {
			t.Errorf("%v: %v, asked %q", bad, err, asked)
		}
	}
}

// The program as a user runs it.
func TestProgram(t *testing.T) {
	url := progtest.Start(t)
	var asked []string
	c := answering(url, &asked, accept(map[string]any{"party": 2, "time": "18:00", "email": "ada@example.com"}))
	tools, err := c.ListTools(context.Background())
	if err != nil || len(tools) != 1 || len(tools[0].OutputSchema) == 0 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := c.CallTool(context.Background(), "book_table", args)
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
}
