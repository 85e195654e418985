package jwtauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

func ExampleNewJWT() {
	idp, err := fakeidp.New() // stands in for the real issuer
	if err != nil {
		panic(err)
	}
	defer idp.Close()
	const resource = "https://mcp.example.com/mcp"
	j, err := jwtauth.NewJWT(context.Background(), jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource})
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
