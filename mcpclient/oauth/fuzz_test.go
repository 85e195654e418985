package oauth

import (
	"testing"
)

// Decoders of server input never panic: the challenge, a token's claims,
// resource identifiers.
func FuzzDecoders(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://a/x", scope="a b", error="insufficient_scope"`, "a.b.c", "https://a/mcp")
	f.Add(`Basic realm="x", Bearer`, jwt(`{"alg":"RS256"}`, `{"aud":["x"]}`), "HTTP://A:80/")
	f.Add(`Bearer error=`, "..", "%zz")
	f.Fuzz(func(t *testing.T, header, token, resource string) {
		_ = parseChallenge(header)
		if aud, ok := jwtAudience(token); ok && len(aud) == 0 {
			t.Fatal("ok without an audience")
		}
		if resourceMatches(resource, resource) {
			if _, err := CanonicalEndpoint(resource); err != nil {
				t.Fatalf("%q matches itself but has no canonical form", resource)
			}
		}
		_ = sameRedirect(resource, token)
		_ = asmLocations(resource)
		_ = prmLocations(resource, "")
	})
}
