// Command multiround serves create_project, a tool that asks the user
// several questions in turn, each chosen by the answers before it:
//
//	go run ./examples/multiround
//
// then call create_project from an MCP client that declares form-mode
// elicitation, at the endpoint the program logs (ADDR sets the listen
// address; the default is 127.0.0.1:8080).
//
// Each round is one tools/call. Nothing is kept in server memory between
// them: what the earlier answers decided travels in the requestState,
// which the library seals (encrypts, and binds to this user, tool,
// arguments and expiry) so the client can neither read nor change it, and
// any server instance can serve the next round.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Args are create_project's arguments.
type Args struct {
	Name string `json:"name" description:"The project's name: lower case letters, digits and dashes." pattern:"^[a-z][a-z0-9-]{0,39}$"`
}

// The questions, one form each.
type (
	KindForm struct {
		Kind string `json:"kind" title:"Kind of project" enum:"web|cli|lib" enumTitles:"Web service|Command-line tool|Library"`
	}
	WebForm struct {
		Port   int  `json:"port" title:"Port" description:"The port the service listens on." minimum:"1024" maximum:"65535" default:"8080"`
		SignIn bool `json:"sign_in" title:"Users sign in" description:"Add sign-in to the service."`
	}
	LanguageForm struct {
		Language string `json:"language" title:"Language" enum:"go|rust|python" enumTitles:"Go|Rust|Python"`
	}
	ConfirmForm struct {
		Create bool `json:"create" title:"Create it now"`
	}
)

// Created is create_project's structured result.
type Created struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Language string `json:"language"`
	Port     int    `json:"port,omitempty"`
	SignIn   bool   `json:"sign_in,omitempty"`
}

// Result texts: decline and cancel differ on purpose.
const (
	TextDeclined     = "Nothing was created: you declined a question."
	TextCancelled    = "Nothing was created: a question was dismissed before it was answered. Call create_project again to start over."
	TextNotConfirmed = "Nothing was created: the last question was submitted without ticking \"Create it now\"."
)

// plan is what the answers so far decided; it is the sealed state.
type plan struct {
	Asked   string  `json:"asked"` // the key asked in the previous round
	Project Created `json:"project"`
}

func createProject(ctx context.Context, req *mcpserver.Request, in Args) (mcpserver.Reply, Created, error) {
	p := plan{Project: Created{Name: in.Name}}
	if req.State != nil {
		if err := json.Unmarshal(req.State, &p); err != nil {
			return nil, Created{}, fmt.Errorf("multiround: state: %w", err)
		}
	}
	// Read the answer to the previous round's question. Missing and
	// invalid answers leave the plan as it was: that question is asked
	// again below (with the reason, for an invalid one).
	var outcome elicit.Outcome
	confirmed := false
	switch p.Asked {
	case "kind":
		a := elicit.Decode[KindForm](req.Elicitation("kind"))
		outcome, p.Project.Kind = a.Outcome, a.Value.Kind
		if a.Value.Kind == "web" {
			p.Project.Language = "go" // our web services are Go
		}
	case "web":
		a := elicit.Decode[WebForm](req.Elicitation("web"))
		outcome, p.Project.Port, p.Project.SignIn = a.Outcome, a.Value.Port, a.Value.SignIn
	case "language":
		a := elicit.Decode[LanguageForm](req.Elicitation("language"))
		outcome, p.Project.Language = a.Outcome, a.Value.Language
	case "confirm":
		a := elicit.Decode[ConfirmForm](req.Elicitation("confirm"))
		outcome, confirmed = a.Outcome, a.Value.Create
		if a.Outcome == elicit.Accepted && !confirmed {
			return mcpserver.ToolError(TextNotConfirmed), Created{}, nil
		}
	}
	switch outcome {
	case elicit.Declined:
		return mcpserver.ToolError(TextDeclined), Created{}, nil
	case elicit.Cancelled:
		return mcpserver.ToolError(TextCancelled), Created{}, nil
	}

	// Ask the first question that has no answer yet.
	pr := &p.Project
	switch {
	case pr.Kind == "":
		return ask(p, "kind", "What kind of project is "+in.Name+"?", elicit.MustFormFor[KindForm]())
	case pr.Kind == "web" && pr.Port == 0:
		return ask(p, "web", "How should the web service "+in.Name+" run?", elicit.MustFormFor[WebForm]())
	case pr.Language == "":
		return ask(p, "language", "Which language for "+in.Name+"?", elicit.MustFormFor[LanguageForm]())
	case !confirmed:
		return ask(p, "confirm", fmt.Sprintf("Create %s, a %s project in %s?", in.Name, pr.Kind, pr.Language), elicit.MustFormFor[ConfirmForm]())
	}
	// A real server would create the project here.
	return nil, *pr, nil
}

// ask sends the question under key and seals the plan with it.
func ask(p plan, key, message string, form *elicit.Schema) (mcpserver.Reply, Created, error) {
	p.Asked = key
	state, err := json.Marshal(p)
	if err != nil {
		return nil, Created{}, err
	}
	return mcpserver.Ask().ElicitFormSchema(key, message, form).WithState(state), Created{}, nil
}

func newServer() *mcpserver.Server {
	s := mcpserver.New(mcp.Implementation{Name: "multiround", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "create_project", Title: "Create a project",
		Description: "Creates a project skeleton. Asks the user, one question at a time, what kind of project it is and how to set it up, then asks for confirmation."},
		createProject)
	return s
}

func main() {
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("MCP endpoint: http://%s/mcp", ln.Addr())
	log.Fatal(http.Serve(ln, streamhttp.NewHandler(newServer(), nil)))
}
