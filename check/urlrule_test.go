package check

import (
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/consent"
)

// url-safe and the elicit command's consent screen flag the same links as
// carrying a credential: both apply elicit.SecretsInURL, so a link the
// check fails for it is one the user is warned about, and no other.
func TestCredentialRuleShared(t *testing.T) {
	for _, raw := range []string{
		"https://evil.example/cb?access_token=abc&code=xyz",
		"https://mcp.example.com/ui/set_api_key?flow=0123",
		"https://mcp.example.com/cb?sig=1",
		"https://mcp.example.com/cb?SIG=1",
		"https://mcp.example.com/x?Passwort=1",
		"https://mcp.example.com/x?api_key=1",
		"https://mcp.example.com/x?token_type=bearer",
		"https://mcp.example.com/x/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig",
		"https://mcp.example.com/x?q=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig",
		"https://mcp.example.com/x?codec=h264",
		"https://mcp.example.com/x?name=report",
	} {
		var checkFlags bool
		for _, p := range urlProblems(raw, nil) {
			checkFlags = checkFlags || strings.Contains(p, "looks like a credential") || strings.Contains(p, "JWT")
		}
		rep, err := consent.InspectURL(raw)
		if err != nil {
			t.Fatalf("InspectURL(%q): %v", raw, err)
		}
		if warned := rep.Warned(consent.WarnCredential); warned != checkFlags {
			t.Errorf("%s: url-safe flags a credential: %v; the consent screen warns: %v", raw, checkFlags, warned)
		}
	}
}
