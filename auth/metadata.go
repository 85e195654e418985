package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// ProtectedResourceMetadata is the OAuth 2.0 Protected Resource Metadata
// document (RFC 9728 §2) an MCP client reads to find where to get a token
// for this server (MCP basic/authorization).
type ProtectedResourceMetadata struct {
	// Resource is the resource identifier; clients check it equals the MCP
	// endpoint URL they used.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer identifiers that may issue tokens.
	AuthorizationServers []string `json:"authorization_servers"`
	// BearerMethodsSupported is ["header"]: tokens only in Authorization.
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	// ScopesSupported are the scopes a token needs; omitted when none.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// ResourceName is a human-readable name; omitted when empty.
	ResourceName string `json:"resource_name,omitempty"`
}

// MetadataHandler serves m as JSON to GET and HEAD (405 otherwise), with
// "Access-Control-Allow-Origin: *" so browser-based clients can read it,
// and a one-hour cache lifetime. Mount it at MetadataPath(resource) and,
// for clients that only try the root, at
// "/.well-known/oauth-protected-resource".
func MetadataHandler(m ProtectedResourceMetadata) http.Handler {
	body, _ := json.Marshal(m) // strings and string slices only: cannot fail
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	})
}

// MetadataPath is where RFC 9728 §3.1 puts the metadata of resource: the
// well-known prefix "/.well-known/oauth-protected-resource" followed by
// the resource URL's path, e.g. "/.well-known/oauth-protected-resource/mcp"
// for "https://mcp.example.com/mcp". An unparsable resource gives the bare
// prefix.
func MetadataPath(resource string) string {
	const prefix = "/.well-known/oauth-protected-resource"
	u, err := url.Parse(resource)
	if err != nil {
		return prefix
	}
	return prefix + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataURL is the absolute URL of resource's metadata (RFC 9728 §3.1):
// its origin followed by MetadataPath.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath(resource)
}
