package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Extensions (basic/versioning.mdx §Extension Negotiation, SEP-2133): a
// server lists the extensions it implements in ServerCapabilities.
// Extensions and a client in the ClientCapabilities of each request's
// _meta, each under its identifier with an object of settings ({} for
// none). An extension's methods and result types are used only on a
// request whose _meta declares it (VER-SC-01).

// ExtensionTasks is the identifier of the tasks extension (SEP-2663): a
// tools/call may answer with a task (resultType "task"), polled with
// tasks/get, answered with tasks/update and ended with tasks/cancel.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// ValidExtensionID reports whether id is an extension identifier: a
// mandatory prefix of dot-separated labels (letters, digits, hyphens;
// each starting and ending with a letter or digit), a "/", then a name
// that starts and ends with a letter or digit and holds letters, digits,
// "-", "_" and "." (the _meta key rules, basic/index.mdx §_meta).
func ValidExtensionID(id string) bool {
	prefix, name, ok := strings.Cut(id, "/")
	if !ok || prefix == "" || name == "" || len(id) > 255 {
		return false
	}
	for _, label := range strings.Split(prefix, ".") {
		if label == "" || !alnum(label[0]) || !alnum(label[len(label)-1]) {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !alnum(c) && c != '-' {
				return false
			}
		}
	}
	if !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// CheckExtension checks one declaration of an extension: id must be an
// extension identifier (ValidExtensionID) and settings a JSON object. It
// returns the settings to send, a copy, with nil meaning {}.
func CheckExtension(id string, settings json.RawMessage) (json.RawMessage, error) {
	if !ValidExtensionID(id) {
		return nil, fmt.Errorf("invalid extension identifier %q", id)
	}
	if settings == nil {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(settings, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("extension %q: settings must be a JSON object", id)
	}
	return append(json.RawMessage(nil), settings...), nil
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// HasExtension reports whether the client declared the extension id with
// an object of settings (a non-object value does not count).
func (c *ClientCapabilities) HasExtension(id string) bool {
	return c != nil && isObject(c.Extensions[id])
}

// HasExtension reports whether the server advertised the extension id.
func (c *ServerCapabilities) HasExtension(id string) bool {
	return c != nil && isObject(c.Extensions[id])
}

func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}
