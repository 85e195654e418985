package mcp

import "strings"

// ValidHeaderName reports whether name may follow "Mcp-Param-" in an
// "x-mcp-header" annotation: a non-empty RFC 9110 token, so no space,
// colon, control or non-ASCII character (server/tools.mdx §x-mcp-header,
// HTTP-S-19). Uniqueness and the property type are the caller's checks.
func ValidHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
