package jwtauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key set refresh limits. A token naming a key id the cache lacks causes a
// fetch of the JWKS (the issuer may have rotated its keys), but at most
// once per keyRefreshInterval after a successful fetch, or
// keyRetryInterval after a failed one: forged tokens with made-up key ids
// must not turn this server into a load generator against the issuer. A
// token whose key id is known but whose signature does not verify never
// causes a fetch. The price: right after such a fetch, tokens signed with
// a key the issuer has only just published are refused for up to a minute.
const (
	keyRefreshInterval = time.Minute
	keyRetryInterval   = 5 * time.Second
	maxJWKSBytes       = 1 << 20
)

// keySet is the issuer's JWKS, fetched on first use and cached; it
// implements go-oidc's KeySet (signature only: the verifier checks the
// claims and the algorithm). Safe for concurrent use; verifications wait
// while a fetch is in progress.
type keySet struct {
	url    string
	client *http.Client
	algs   []jose.SignatureAlgorithm
	now    func() time.Time

	mu        sync.RWMutex
	keys      []jose.JSONWebKey
	nextFetch time.Time // zero: never fetched
	lastErr   error     // of the last fetch; nil after a success
}

// fetchFailure receives, through the context of one verification, why the
// keys it needed could not be fetched: go-oidc flattens the key set's
// error into a string, and an outage must not be answered as a bad token.
type fetchFailure struct{ err error }

type fetchFailureKey struct{}

func reportFetchFailure(ctx context.Context, err error) {
	if ff, ok := ctx.Value(fetchFailureKey{}).(*fetchFailure); ok {
		ff.err = err
	}
}

// VerifySignature returns the payload of jwt once its signature verifies
// with a cached (or, for an unknown key id, freshly fetched) key.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(jwt, k.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := k.keysFor(ctx, kid)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if kid == "" || keys[i].KeyID == kid {
			if payload, err := jws.Verify(&keys[i]); err == nil {
				return payload, nil
			}
		}
	}
	if kid != "" && !hasKey(keys, kid) {
		return nil, errors.New("no issuer key with the token's key id")
	}
	return nil, errors.New("signature does not verify with the issuer's keys")
}

func hasKey(keys []jose.JSONWebKey, kid string) bool {
	if kid == "" {
		return len(keys) > 0
	}
	return slices.ContainsFunc(keys, func(k jose.JSONWebKey) bool { return k.KeyID == kid })
}

// keysFor returns the keys to try for a token with key id kid, fetching
// the JWKS first when kid is unknown and the refresh limits allow it.
func (k *keySet) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.RLock()
	keys := k.keys
	k.mu.RUnlock()
	if hasKey(keys, kid) {
		return keys, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if hasKey(k.keys, kid) {
		return k.keys, nil // fetched meanwhile
	}
	if !k.nextFetch.IsZero() && k.now().Before(k.nextFetch) {
		if k.lastErr != nil { // still failing: the key may well exist
			reportFetchFailure(ctx, k.lastErr)
			return nil, k.lastErr
		}
		return k.keys, nil // too soon to fetch again
	}
	keys, err := k.fetch(ctx)
	if err != nil {
		k.nextFetch, k.lastErr = k.now().Add(keyRetryInterval), fmt.Errorf("fetching the issuer's keys: %w", err)
		reportFetchFailure(ctx, k.lastErr)
		return nil, k.lastErr
	}
	k.keys, k.nextFetch, k.lastErr = keys, k.now().Add(keyRefreshInterval), nil
	return keys, nil
}

// fetch reads the JWKS (RFC 7517 §5). Keys that do not parse, are not
// public, or are marked for encryption are skipped, so one odd key does
// not take the others down.
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d from %s", resp.StatusCode, k.url)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("JWKS larger than %d bytes", maxJWKSBytes)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("JWKS is not a JSON key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if key.UnmarshalJSON(raw) != nil || !key.Valid() || !key.IsPublic() || key.Use == "enc" {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS has no usable signing key")
	}
	return keys, nil
}
