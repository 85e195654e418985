package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-elicit/elicit/mcp"
)

// parseHeaderParams checks a tool's inputSchema at registration: a JSON
// object with "type": "object" whose x-mcp-header annotations keep the
// rules of mcp.ToolHeaderParams (HTTP-S-19), the same function a client
// uses to decide whether to drop the tool (HTTP-C-12).
func parseHeaderParams(schema json.RawMessage) ([]mcp.HeaderParam, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema is not a JSON object: %v", err)
	}
	var typ string
	if err := json.Unmarshal(root["type"], &typ); err != nil || typ != "object" {
		return nil, fmt.Errorf(`inputSchema must have "type": "object"`)
	}
	return mcp.ToolHeaderParams(schema)
}
