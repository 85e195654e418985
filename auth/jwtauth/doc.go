// Package jwtauth authenticates with an OAuth 2.0 authorization server /
// OpenID provider: JWT verifies the bearer access tokens an MCP client
// sends (RFC 9068 JWTs checked against the issuer's JWKS, with the
// protected resource metadata of RFC 9728), and OIDC signs browsers in
// for the URL-mode pages through the same issuer, so that both name a
// user by the same auth.Principal.
//
// The public surface: JWT, JWTOptions and NewJWT (an auth.Authenticator);
// OIDC, OIDCOptions and NewOIDC (a connect.IdentityProvider);
// DefaultAlgorithms and DefaultLeeway.
//
// It is apart from package auth because it brings go-oidc, go-jose and
// x/oauth2: a server that does not verify tokens (or verifies them some
// other way) imports auth alone and links none of them.
//
// MCP 2026-07-28 basic/authorization: the server is an OAuth 2.0 resource
// server; it refuses a token without the right audience, issuer, signature
// or scope with 401 or 403 and a WWW-Authenticate challenge.
package jwtauth
