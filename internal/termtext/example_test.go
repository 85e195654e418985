package termtext_test

import (
	"fmt"
	"os"

	"github.com/mcp-elicit/elicit/internal/termtext"
)

// A server's text, cleaned for one line, for several lines, and as JSON.
func Example() {
	s := "Plan\x1b]0;owned\x07 \u202eesrever\nnext line"
	fmt.Println(termtext.Line(s))
	fmt.Println(termtext.Block(s))
	_ = termtext.WriteJSON(os.Stdout, map[string]string{"title": s})
	// Output:
	// Plan\x1b]0;owned\a \u202eesrever\nnext line
	// Plan\x1b]0;owned\a \u202eesrever
	// next line
	// {
	//   "title": "Plan\u001b]0;owned\u0007 \u202eesrever\nnext line"
	// }
}
