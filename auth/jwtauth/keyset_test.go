package jwtauth_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

// clockedJWT returns a JWT for idp whose clock the test moves.
func clockedJWT(t *testing.T, idp *fakeidp.Server) (*jwtauth.JWT, *atomic.Int64) {
	t.Helper()
	clock := new(atomic.Int64)
	clock.Store(time.Now().UnixNano())
	j, err := jwtauth.NewJWT(context.Background(), jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource,
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	return j, clock
}

// TestKeySetRefresh: the JWKS is fetched on first use and again for an
// unknown key id (a rotation), but forged tokens, whether with a known or
// a made-up key id, cause at most one fetch a minute.
func TestKeySetRefresh(t *testing.T) {
	idp := fakeidp.Start(t)
	j, clock := clockedJWT(t, idp)
	claims := fakeidp.Claims{Subject: "alice", Audience: []string{resource}, Expiry: time.Now().Add(24 * time.Hour)}
	check := func(step string, alg fakeidp.Alg, accept bool, fetches int) {
		t.Helper()
		_, err := authenticate(j, "Bearer "+idp.Sign(alg, claims))
		if accept != (err == nil) {
			t.Fatalf("%s: accepted=%v, err %v", step, err == nil, err)
		}
		if n := idp.JWKSRequests(); n != fetches {
			t.Fatalf("%s: %d JWKS fetches, want %d", step, n, fetches)
		}
	}
	if n := idp.JWKSRequests(); n != 0 {
		t.Fatalf("JWKS fetched %d times before any token", n)
	}
	check("first token", fakeidp.RS256, true, 1)
	check("cached", fakeidp.ES256, true, 1)
	for range 20 {
		check("known kid, wrong key", fakeidp.RS256OtherKey, false, 1)
	}
	clock.Add(int64(2 * time.Minute))
	check("unknown kid after the interval", fakeidp.RS256UnknownKid, false, 2)
	for range 20 {
		check("unknown kid within the interval", fakeidp.RS256UnknownKid, false, 2)
	}
	if err := idp.RotateRSAKey(); err != nil {
		t.Fatal(err)
	}
	check("rotated key within the interval", fakeidp.RS256, false, 2)
	clock.Add(int64(61 * time.Second))
	check("rotated key after the interval", fakeidp.RS256, true, 3)
	check("rotated key cached", fakeidp.RS256, true, 3)
}

// TestKeySetOutage: while the issuer's JWKS cannot be fetched, a token is
// answered 503 (ErrIssuerUnavailable, no challenge), not invalid_token;
// fetches are retried at most every 5 seconds, and the token is accepted
// once the issuer is back.
func TestKeySetOutage(t *testing.T) {
	idp := fakeidp.Start(t)
	j, clock := clockedJWT(t, idp)
	tok := "Bearer " + idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "alice", Audience: []string{resource}, Expiry: time.Now().Add(time.Hour)})
	idp.SetJWKSDown(true)
	for i, fetches := range []int{1, 1} {
		_, err := authenticate(j, tok)
		var ae *auth.Error
		if !errors.As(err, &ae) || ae.Status != 503 || ae.Challenge != "" || !errors.Is(err, auth.ErrIssuerUnavailable) {
			t.Fatalf("try %d during the outage: %v", i, err)
		}
		if n := idp.JWKSRequests(); n != fetches {
			t.Fatalf("try %d: %d fetches, want %d", i, n, fetches)
		}
	}
	idp.SetJWKSDown(false)
	clock.Add(int64(6 * time.Second))
	if p, err := authenticate(j, tok); err != nil || p.Subject != "alice" {
		t.Fatalf("after the outage: %+v, %v", p, err)
	}
}
