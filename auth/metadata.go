package auth

import (
	"encoding/json"
	"net/http"
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

// Metadata returns the resource's metadata document, naming Issuer as its
// only authorization server.
func (j *JWT) Metadata() ProtectedResourceMetadata {
	return ProtectedResourceMetadata{
		Resource:               j.resource,
		AuthorizationServers:   []string{j.issuer},
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        j.scopes,
	}
}

// MetadataURL is where the metadata is served (the resource_metadata of
// the challenge): MetadataURL(Resource).
func (j *JWT) MetadataURL() string { return j.metaURL }

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
