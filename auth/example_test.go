package auth_test

import (
	"fmt"

	"github.com/mcp-elicit/elicit/auth"
)

func ExamplePrincipal_ID() {
	p := auth.Principal{Issuer: "https://login.example.com", Subject: "248289761001"}
	fmt.Println(p.ID())
	fmt.Println(auth.Principal{Subject: "alice"}.ID()) // demo user

	back, err := auth.ParseID(p.ID())
	fmt.Println(back == p, err)
	// Output:
	// https://login.example.com#248289761001
	// alice
	// true <nil>
}

func ExampleMetadataURL() {
	// Where RFC 9728 puts the metadata of the MCP endpoint, and the path to
	// mount auth.MetadataHandler at.
	fmt.Println(auth.MetadataURL("https://mcp.example.com/mcp"))
	fmt.Println(auth.MetadataPath("https://mcp.example.com/mcp"))
	// Output:
	// https://mcp.example.com/.well-known/oauth-protected-resource/mcp
	// /.well-known/oauth-protected-resource/mcp
}
