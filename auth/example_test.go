package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
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

func ExampleNewJWT() {
	idp, err := fakeidp.New() // stands in for the real issuer
	if err != nil {
		panic(err)
	}
	defer idp.Close()
	const resource = "https://mcp.example.com/mcp"
	j, err := auth.NewJWT(context.Background(), auth.JWTOptions{Issuer: idp.URL, Resource: resource})
	if err != nil {
		panic(err)
	}
	// streamhttp.Options{Auth: j} does this for each request.
	try := func(token string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		p, err := j.Authenticate(r)
		var ae *auth.Error
		if errors.As(err, &ae) {
			fmt.Println(ae.Status, ae.Challenge)
			return
		}
		fmt.Println("accepted:", p.Subject, p.Issuer == idp.URL)
	}
	try(idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "alice", Audience: []string{resource}}))
	try(idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "alice", Audience: []string{"https://other.example.com/mcp"}}))
	try(idp.Sign(fakeidp.None, fakeidp.Claims{Subject: "alice", Audience: []string{resource}}))
	// Output:
	// accepted: alice true
	// 401 Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 401 Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}
