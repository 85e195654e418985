package mcpserver_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// A bridge that sends elicitation/create itself checks the client's
// answer as the server checks inputResponses, and words the refusal for
// its own client.
func ExampleValidInputResponse() {
	for _, answer := range []string{`{"action":"accept","content":{"name":"a"}}`, `{"action":"decline"}`, `{"action":"yolo"}`} {
		fmt.Println(answer, mcpserver.ValidInputResponse(mcp.MethodElicitationCreate, json.RawMessage(answer)))
	}
	// Output:
	// {"action":"accept","content":{"name":"a"}} true
	// {"action":"decline"} true
	// {"action":"yolo"} false
}
