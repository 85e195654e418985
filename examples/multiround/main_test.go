package main

import (
	"bytes"
	"context"
	"encoding/base64"
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

type step struct {
	key    string
	answer *mcp.ElicitResult
}

// script answers each question with the next step, checking its key, and
// fails on a question too many.
func script(t *testing.T, url string, steps ...step) (*mcpclient.Client, *[]string) {
	var asked []string
	return mcpclient.New(url, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			asked = append(asked, key+": "+p.Message)
			if len(asked) > len(steps) {
				return nil, errors.New("asked once too often")
			}
			s := steps[len(asked)-1]
			if key != s.key {
				t.Errorf("question %d is %q, want %q", len(asked), key, s.key)
			}
			return s.answer, nil
		},
	}}), &asked
}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}
}

var (
	decline = &mcp.ElicitResult{Action: mcp.ActionDecline}
	cancel  = &mcp.ElicitResult{Action: mcp.ActionCancel}
)

func TestCreateProject(t *testing.T) {
	srv := httptest.NewServer(streamhttp.NewHandler(newServer(), nil))
	defer srv.Close()
	args := map[string]any{"name": "shop-api"}
	yes := accept(map[string]any{"create": true})
	tests := []struct {
		name    string
		steps   []step
		want    *Created // nil: an isError result with text
		text    string
		nAsked  int
		lastMsg string
	}{
		{"web service", []step{{"kind", accept(map[string]any{"kind": "web"})}, {"web", accept(map[string]any{"port": 9090, "sign_in": true})}, {"confirm", yes}},
			&Created{Name: "shop-api", Kind: "web", Language: "go", Port: 9090, SignIn: true}, "", 3, "Create shop-api, a web project in go?"},
		{"library", []step{{"kind", accept(map[string]any{"kind": "lib"})}, {"language", accept(map[string]any{"language": "rust"})}, {"confirm", yes}},
			&Created{Name: "shop-api", Kind: "lib", Language: "rust"}, "", 3, "Create shop-api, a lib project in rust?"},
		{"invalid port asked again", []step{{"kind", accept(map[string]any{"kind": "web"})}, {"web", accept(map[string]any{"port": 80, "sign_in": false})},
			{"web", accept(map[string]any{"port": 8080, "sign_in": false})}, {"confirm", yes}},
			&Created{Name: "shop-api", Kind: "web", Language: "go", Port: 8080}, "", 4, ""},
		{"declined at the second question", []step{{"kind", accept(map[string]any{"kind": "cli"})}, {"language", decline}}, nil, TextDeclined, 2, ""},
		{"cancelled at the first question", []step{{"kind", cancel}}, nil, TextCancelled, 1, ""},
		{"not confirmed", []step{{"kind", accept(map[string]any{"kind": "cli"})}, {"language", accept(map[string]any{"language": "go"})},
			{"confirm", accept(map[string]any{"create": false})}}, nil, TextNotConfirmed, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, asked := script(t, srv.URL, tt.steps...)
			res, err := c.CallTool(context.Background(), "create_project", args)
			if err != nil {
				t.Fatal(err)
			}
			if len(*asked) != tt.nAsked {
				t.Fatalf("asked %q", *asked)
			}
			if tt.lastMsg != "" && !strings.HasSuffix((*asked)[len(*asked)-1], tt.lastMsg) {
				t.Fatalf("last question %q", (*asked)[len(*asked)-1])
			}
			if tt.want == nil {
				if !res.IsError || res.Content[0].Text != tt.text || res.StructuredContent != nil {
					t.Fatalf("%+v", res)
				}
				return
			}
			var got Created
			raw, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(raw, &got); err != nil || res.IsError || !reflect.DeepEqual(&got, tt.want) {
				t.Fatalf("created %s, want %+v", raw, tt.want)
			}
		})
	}
}

// The plan travels sealed: the client sees neither the project name nor
// the answers in the requestState, and a bad name is refused before any
// question.
func TestStateIsSealed(t *testing.T) {
	srv := httptest.NewServer(streamhttp.NewHandler(newServer(), nil))
	defer srv.Close()
	ctx := context.Background()
	c, _ := script(t, srv.URL, step{"kind", accept(map[string]any{"kind": "web"})})
	_, ir, err := c.CallToolOnce(ctx, "create_project", map[string]any{"name": "secret-plan"}, nil)
	if err != nil || ir == nil {
		t.Fatal(ir, err)
	}
	answers, err := c.Answer(ctx, ir)
	if err != nil {
		t.Fatal(err)
	}
	_, ir, err = c.CallToolOnce(ctx, "create_project", map[string]any{"name": "secret-plan"}, ir.Retry(answers))
	if err != nil || ir == nil || !reflect.DeepEqual(ir.Keys(), []string{"web"}) {
		t.Fatal(ir, err)
	}
	// The token is base64url: look for the plaintext in what it decodes
	// to (the encoded text itself can spell "web" by chance).
	raw, err := base64.RawURLEncoding.DecodeString(ir.RequestState)
	if err != nil {
		t.Fatalf("state is not base64url: %v", err)
	}
	for _, plain := range []string{"secret-plan", `"web"`, `"kind"`} {
		if bytes.Contains(raw, []byte(plain)) {
			t.Fatalf("state readable (%s): %s", plain, ir.RequestState)
		}
	}
	_, err = c.CallTool(ctx, "create_project", map[string]any{"name": "Not A Name"})
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32602 || !strings.Contains(rpc.Message, `"name" must match the pattern`) {
		t.Fatalf("bad name: %v", err)
	}
}

// The program as a user runs it.
func TestProgram(t *testing.T) {
	url := progtest.Start(t)
	c, asked := script(t, url, step{"kind", accept(map[string]any{"kind": "cli"})}, step{"language", accept(map[string]any{"language": "python"})},
		step{"confirm", accept(map[string]any{"create": true})})
	res, err := c.CallTool(context.Background(), "create_project", map[string]any{"name": "tool"})
	if err != nil || res.IsError || len(*asked) != 3 {
		t.Fatalf("%+v %v %q", res, err, *asked)
	}
}
