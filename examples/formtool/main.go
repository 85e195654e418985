// Command formtool serves book_table, a tool that asks the details of a
// restaurant booking in one form-mode question built from a Go struct:
//
//	go run ./examples/formtool
//
// then call book_table from an MCP client that declares form-mode
// elicitation, at the endpoint the program logs (ADDR sets the listen
// address; the default is 127.0.0.1:8080).
//
// What the library does here, and the handler does not: it infers the
// tool's input and output schemas from BookArgs and Booked, refuses bad
// arguments with -32602 before the handler runs, builds the form from
// Details (and would refuse a field that looks like a secret), refuses
// clients without form mode (-32021), seals the state between the two
// rounds, checks the answer against the form and asks again with the
// reason when it does not fit, and keeps decline and cancel apart.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// BookArgs are book_table's arguments, chosen by the model.
type BookArgs struct {
	Restaurant string `json:"restaurant" description:"The restaurant to book." enum:"luigi|sakura|bistro"`
	Date       string `json:"date" description:"The day, as YYYY-MM-DD." format:"date"`
}

// Details is the form the user fills: the parts of a booking only the
// user should decide.
type Details struct {
	Party int      `json:"party" title:"Party size" description:"How many people, you included." minimum:"1" maximum:"12" default:"2"`
	Time  string   `json:"time" title:"Time" enum:"18:00|19:30|21:00" enumTitles:"Early (18:00)|Evening (19:30)|Late (21:00)"`
	Needs []string `json:"needs,omitempty" title:"Dietary needs" enum:"vegetarian|vegan|gluten_free|nut_allergy" enumTitles:"Vegetarian|Vegan|Gluten-free|Nut allergy"`
	Email string   `json:"email" title:"Email for the confirmation" format:"email" maxLength:"254"`
	Notes string   `json:"notes,omitempty" title:"Notes for the restaurant" maxLength:"200"`
}

// Booked is book_table's structured result.
type Booked struct {
	Reference  string   `json:"reference"`
	Restaurant string   `json:"restaurant"`
	Date       string   `json:"date"`
	Time       string   `json:"time"`
	Party      int      `json:"party"`
	Needs      []string `json:"needs"`
}

// Result texts: decline and cancel differ on purpose.
const (
	TextDeclined  = "No table was booked: you declined to give the booking details."
	TextCancelled = "The booking form was dismissed before it was filled, so nothing was booked. Call book_table again to start over."
)

var detailsForm = elicit.MustFormFor[Details]()

func bookTable(ctx context.Context, req *mcpserver.Request, in BookArgs) (mcpserver.Reply, Booked, error) {
	switch a := elicit.Decode[Details](req.Elicitation("details")); a.Outcome {
	case elicit.Accepted:
		d := a.Value
		b := Booked{Reference: "BK-" + strings.ToUpper(rand.Text()[:8]), Restaurant: in.Restaurant, Date: in.Date,
			Time: d.Time, Party: d.Party, Needs: d.Needs}
		// A real server would book here, and send the confirmation to d.Email.
		return nil, b, nil
	case elicit.Declined:
		return mcpserver.ToolError(TextDeclined), Booked{}, nil
	case elicit.Cancelled:
		return mcpserver.ToolError(TextCancelled), Booked{}, nil
	}
	// First call, or no usable answer yet: ask. An invalid answer is asked
	// again with what was wrong, at most mcpserver.MaxReasks times.
	msg := fmt.Sprintf("Book a table at %s on %s: how many people, when, and where should the confirmation go?", in.Restaurant, in.Date)
	return mcpserver.Ask().ElicitFormSchema("details", msg, detailsForm), Booked{}, nil
}

func newServer() *mcpserver.Server {
	s := mcpserver.New(mcp.Implementation{Name: "formtool", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "book_table", Title: "Book a table",
		Description: "Books a restaurant table. Asks the user, in a form, for the party size, time, dietary needs and an email address."},
		bookTable)
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
