package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcp-elicit/elicit/mcp"
)

// HeaderParam is a tool argument mirrored into an Mcp-Param-{Header}
// request header by its "x-mcp-header" annotation (server/tools.mdx
// §x-mcp-header; streamable-http.mdx §Custom Headers).
type HeaderParam struct {
	// Header is the name after "Mcp-Param-", as annotated.
	Header string
	// Path is the chain of property names from the arguments object.
	Path []string
	// Type is "string", "integer" or "boolean".
	Type string
}

// parseHeaderParams collects and checks the x-mcp-header annotations of an
// input schema (HTTP-S-19): names are non-empty RFC 9110 tokens, unique
// case-insensitively, only on string/integer/boolean properties reachable
// through "properties" alone.
func parseHeaderParams(schema json.RawMessage) ([]HeaderParam, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema is not a JSON object: %v", err)
	}
	var typ string
	if err := json.Unmarshal(root["type"], &typ); err != nil || typ != "object" {
		return nil, fmt.Errorf(`inputSchema must have "type": "object"`)
	}
	var out []HeaderParam
	seen := map[string]bool{}
	var walk func(obj map[string]json.RawMessage, path []string) error
	walk = func(obj map[string]json.RawMessage, path []string) error {
		var props map[string]map[string]json.RawMessage
		if raw, ok := obj["properties"]; ok {
			if err := json.Unmarshal(raw, &props); err != nil {
				return fmt.Errorf("properties: %v", err)
			}
		}
		for name, p := range props {
			pp := append(append([]string(nil), path...), name)
			if raw, ok := p["x-mcp-header"]; ok {
				var h string
				if err := json.Unmarshal(raw, &h); err != nil || !mcp.ValidHeaderName(h) {
					return fmt.Errorf("property %q: x-mcp-header must be a non-empty token", strings.Join(pp, "."))
				}
				var t string
				_ = json.Unmarshal(p["type"], &t)
				if t != "string" && t != "integer" && t != "boolean" {
					return fmt.Errorf("property %q: x-mcp-header only on string, integer or boolean", strings.Join(pp, "."))
				}
				if seen[strings.ToLower(h)] {
					return fmt.Errorf("x-mcp-header %q repeated", h)
				}
				seen[strings.ToLower(h)] = true
				out = append(out, HeaderParam{Header: h, Path: pp, Type: t})
			}
			if err := walk(p, pp); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, nil); err != nil {
		return nil, err
	}
	return out, nil
}
