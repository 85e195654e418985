package check_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/check"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Checking a small server built with mcpserver: a tool that asks the
// user's name in a form. Its state is sealed and bound, so every
// applicable case passes; it asks nothing in URL mode and takes no
// arguments, so those cases do not apply. Accepting the form would
// complete the tool, which the checker does only with AllowEffects: the
// two cases that need it are not run, and nothing was completed.
func Example() {
	sealer, _ := reqstate.New([]reqstate.Key{{ID: "k1", Secret: make([]byte, 32)}}, nil)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, &mcpserver.Options{Sealer: sealer, Logger: quiet})
	s.AddTool(&mcp.Tool{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			switch a := req.Elicitation("who"); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text(fmt.Sprintf("Hello, %s!", a.Content["name"])), nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("No name, no greeting."), nil
			}
			return mcpserver.Ask().ElicitForm("who", "What is your name?",
				json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":40}},"required":["name"]}`)), nil
		})
	ts := httptest.NewServer(streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "example"}, Logger: quiet}))
	defer ts.Close()

	rep, err := check.Run(context.Background(), check.Config{URL: ts.URL, Tool: "greet", Token: "alice", OtherToken: "bob"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Results {
		fmt.Printf("%-24s %s\n", r.ID, r.Verdict)
	}
	fmt.Println("failed:", rep.Failed())
	fmt.Println("completed:", len(rep.Effects.Completed))
	// Output:
	// capability-missing-mode  pass
	// decline                  pass
	// cancel                   pass
	// state-bit-flip           pass
	// state-truncated          pass
	// state-re-encoded         pass
	// state-segments-swapped   not applicable
	// state-plaintext          pass
	// replay-other-user        pass
	// replay-changed-arguments not applicable
	// replay-other-tool        could not test
	// responses-missing        pass
	// responses-extra          pass
	// responses-wrong-key      pass
	// replay-completed         not run
	// swapped-pending          not applicable
	// form-invalid-answers     not run
	// form-secret              pass
	// url-safe                 not applicable
	// url-no-login             not applicable
	// url-accept-unfinished    not applicable
	// failed: false
	// completed: 0
}

// A server that echoes what it was sent cannot make the checker print the
// tokens or the URL's password: every error and report goes through
// Config.Redact.
func ExampleConfig_Redact() {
	cfg := check.Config{URL: "http://ci:hunter22@127.0.0.1:3000/mcp", Token: "alice-token", OtherToken: "bob-token"}
	fmt.Println(cfg.Redact("tools/list: server error -32000: bad token Bearer alice-token (bob-token)"))
	fmt.Println(cfg.Redact("cannot reach " + cfg.URL))
	// Output:
	// tools/list: server error -32000: bad token Bearer <token> (<other-token>)
	// cannot reach http://ci:xxxxx@127.0.0.1:3000/mcp
}

// Config.HasUserinfo finds credentials in the endpoint URL, even in one
// that does not parse, and Config.Redact masks them there too.
func ExampleConfig_HasUserinfo() {
	for _, u := range []string{"http://127.0.0.1:3000/mcp", "http://ci:hunter22@127.0.0.1:3000/mcp", "http://ci:hunter 22@127.0.0.1:3000/mcp"} {
		cfg := check.Config{URL: u}
		fmt.Println(cfg.HasUserinfo(), cfg.Redact(u))
	}
	// Output:
	// false http://127.0.0.1:3000/mcp
	// true http://ci:xxxxx@127.0.0.1:3000/mcp
	// true http://ci:xxxxx@127.0.0.1:3000/mcp
}

// A server that refuses the token stops the check before any case runs:
// Run returns a *StartError saying so, and no report.
func ExampleStartError() {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer ts.Close()

	_, err := check.Run(context.Background(), check.Config{URL: ts.URL, Tool: "greet", Token: "expired"})
	var se *check.StartError
	if errors.As(err, &se) {
		fmt.Println(se.Kind)
		fmt.Println(se.Message)
	}
	// Output:
	// token-refused
	// the server refused the token: HTTP 401 on server/discover (WWW-Authenticate: Bearer error="invalid_token")
}
