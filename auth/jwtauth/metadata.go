package jwtauth

import "github.com/mcp-elicit/elicit/auth"

// Metadata returns the resource's metadata document, naming Issuer as its
// only authorization server.
func (j *JWT) Metadata() auth.ProtectedResourceMetadata {
	return auth.ProtectedResourceMetadata{
		Resource:               j.resource,
		AuthorizationServers:   []string{j.issuer},
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        j.scopes,
	}
}

// MetadataURL is where the metadata is served (the resource_metadata of
// the challenge): auth.MetadataURL(Resource).
func (j *JWT) MetadataURL() string { return j.metaURL }
