// Command twotools serves two MCP tools that need the user: refund asks
// how much to refund in a form built from a Go struct, and
// connect_billing sends the user to this server's own page, where they
// sign in and type their billing API key, which the client never sees
// (URL mode, connect.Step). refund only runs once billing is connected.
//
//	go run ./examples/twotools
//
// then, from a clone of this repository, as the user alice:
//
//	go run ./cmd/elicit call connect_billing --url http://127.0.0.1:8080/mcp --token alice
//	go run ./cmd/elicit call refund --url http://127.0.0.1:8080/mcp --token alice --arg charge=ch_1234
//
// ADDR sets the listen address (default 127.0.0.1:8080), DATA the
// directory of the store, the vault key and the requestState key ring
// (default ./twotools-data), so that connected accounts and questions in
// progress survive a restart.
// Sign-in is the demo kind, on the MCP endpoint (the bearer token is the
// user name) and on the page (it asks a user name only), so the program
// refuses to listen anywhere but on loopback; a real server sets
// streamhttp.Options.Auth and connect.Options.SignIn to an identity
// provider (auth.NewJWT, auth.NewOIDC).
//
// The handler code is the part above main; TestHandlerCode counts it.
package main

import (
	"cmp"
	"context"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/connect/datadir"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// RefundArgs are refund's arguments, chosen by the model.
type RefundArgs struct {
	Charge string `json:"charge" description:"The charge to refund." pattern:"^ch_[A-Za-z0-9]{4,40}$"`
}

// RefundForm is what only the user decides.
type RefundForm struct {
	Amount float64 `json:"amount" title:"Amount to refund (EUR)" minimum:"0.01" maximum:"10000"`
	Reason string  `json:"reason" title:"Reason" enum:"duplicate|fraudulent|requested_by_customer" enumTitles:"Charged twice|Fraud|The customer asked"`
}

// Refunded is refund's structured result.
type Refunded struct {
	Charge string  `json:"charge"`
	Amount float64 `json:"amount"`
	Reason string  `json:"reason"`
}

// Result texts: decline and cancel differ on purpose.
const (
	TextNotConnected = "Billing is not connected: call connect_billing first."
	TextDeclined     = "No refund was made: you declined."
	TextCancelled    = "The refund form was dismissed before it was sent, so no refund was made. Call refund again to start over."
)

type tools struct{ flows *connect.Service }

// refund's output is a *Refunded, so the replies without one return nil.
func (t tools) refund(ctx context.Context, req *mcpserver.Request, in RefundArgs) (mcpserver.Reply, *Refunded, error) {
	if connected, err := t.flows.HasSecret(ctx, req.Principal, "billing_key"); err != nil {
		return nil, nil, err
	} else if !connected {
		return mcpserver.ToolError(TextNotConnected), nil, nil
	}
	switch a := elicit.Decode[RefundForm](req.Elicitation("refund")); a.Outcome {
	case elicit.Accepted:
		// A real server would read the key (t.flows.Secret) and refund here.
		return nil, &Refunded{Charge: in.Charge, Amount: a.Value.Amount, Reason: a.Value.Reason}, nil
	case elicit.Declined:
		return mcpserver.ToolError(TextDeclined), nil, nil
	case elicit.Cancelled:
		return mcpserver.ToolError(TextCancelled), nil, nil
	}
	return mcpserver.Ask().ElicitFormSchema("refund", "Refund charge "+in.Charge+": how much, and why?", elicit.MustFormFor[RefundForm]()), nil, nil
}

// register adds both tools to s.
func register(s *mcpserver.Server, flows *connect.Service) {
	mcpserver.AddTool(s, &mcp.Tool{Name: "refund", Description: "Refunds a charge. Asks the user how much and why."}, tools{flows}.refund)
	billing := &connect.Step{Flows: flows, Purpose: "billing_key", Name: "your billing account"}
	billing.Register(s, &mcp.Tool{Name: "connect_billing", Description: "Connects the user's billing account: the user types the API key on this server's page, never in the client."})
}

func main() {
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	data, err := datadir.Open(cmp.Or(os.Getenv("DATA"), "twotools-data"), connect.Options{BaseURL: base})
	if err != nil {
		log.Fatal(err)
	}
	defer data.Close()
	// data.Sealer keeps requestState's key in DATA: questions in progress survive a restart.
	s := mcpserver.New(mcp.Implementation{Name: "twotools", Version: "1.0.0"}, &mcpserver.Options{Sealer: data.Sealer})
	register(s, data.Flows)
	mux := http.NewServeMux()
	mux.Handle("/ui/", data.Flows.Handler())
	mux.Handle("/mcp", streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "twotools"}}))
	log.Printf("MCP endpoint: %s/mcp", base)
	log.Fatal(http.Serve(ln, mux))
}
