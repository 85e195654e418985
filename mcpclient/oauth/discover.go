package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxMetadataBytes bounds one metadata document.
const maxMetadataBytes = 1 << 20

// maxRedirects bounds the redirects of one metadata request.
const maxRedirects = 5

// errNotFound: a well-known location answered 4xx; the next one is tried.
var errNotFound = errors.New("not found")

// challenge is the Bearer challenge of a refusal (RFC 6750 §3, RFC 9728
// §5.1).
type challenge struct {
	resourceMetadata string
	scope            []string
	errCode          string
}

// parseChallenge reads the first Bearer challenge of a WWW-Authenticate
// value; one that does not parse counts as none (the well-known locations
// are tried then).
func parseChallenge(v string) challenge {
	var c challenge
	if v == "" {
		return c
	}
	cs, err := oauthex.ParseWWWAuthenticate([]string{v})
	if err != nil {
		return c
	}
	for _, ch := range cs {
		if ch.Scheme != "bearer" {
			continue
		}
		c.resourceMetadata = ch.Params["resource_metadata"]
		c.scope = strings.Fields(ch.Params["scope"])
		c.errCode = ch.Params["error"]
		return c
	}
	return c
}

// isLoopback reports whether host (no port) is this computer: localhost,
// a name under .localhost, or a loopback IP literal.
func isLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// checkEndpoint refuses a URL that is not absolute https, or http on
// loopback (basic/authorization/security-considerations.mdx
// §Communication Security), or that carries a fragment or user info.
func checkEndpoint(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil ||
		!(u.Scheme == "https" || (u.Scheme == "http" && isLoopback(u.Hostname()))) {
		return nil, &InsecureEndpointError{Name: name, URL: raw}
	}
	return u, nil
}

// policyClient returns base with a redirect policy: at most maxRedirects
// hops for follow, none otherwise (token and registration requests carry
// secrets, which a redirect must not take elsewhere); every hop must pass
// checkEndpoint, and https never steps down to http.
func policyClient(base *http.Client, follow bool) *http.Client {
	c := *base
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !follow {
			return http.ErrUseLastResponse
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if _, err := checkEndpoint("redirect", req.URL.String()); err != nil {
			return err
		}
		if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return &InsecureEndpointError{Name: "redirect", URL: req.URL.String()}
		}
		return nil
	}
	return &c
}

// getJSON fetches a metadata document into v: 200 with a JSON content
// type, at most maxMetadataBytes. Any 4xx is errNotFound.
func getJSON(ctx context.Context, c *http.Client, raw string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the caller's error already
		}
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return fmt.Errorf("%w (HTTP %d)", errNotFound, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return fmt.Errorf("content type %q, not application/json", clip(resp.Header.Get("Content-Type"), 80))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxMetadataBytes {
		return fmt.Errorf("larger than %d bytes", maxMetadataBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("not a JSON object of the expected shape: %v", err)
	}
	return nil
}

// canonical parses raw as an absolute http(s) URL and returns it with a
// lower-case scheme and host, no default port, no fragment.
func canonical(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", clip(raw, 200))
	}
	c := *u
	c.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (c.Scheme == "https" && port == "443") || (c.Scheme == "http" && port == "80") {
		port = ""
	}
	c.Host = host
	if strings.Contains(host, ":") {
		c.Host = "[" + host + "]"
	}
	if port != "" {
		c.Host += ":" + port
	}
	c.Fragment, c.RawFragment = "", ""
	return &c, nil
}

// CanonicalEndpoint is the form of an MCP endpoint URL used as the store
// key and in messages: lower-case scheme and host, no default port, no
// fragment.
func CanonicalEndpoint(raw string) (string, error) {
	u, err := canonical(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// resourceMatches reports whether the protected resource identifier
// resource covers the MCP endpoint: same origin, and the resource's path
// is the endpoint's or a leading segment run of it (a server may name its
// origin as the resource, RFC 9728 §3.1); a query must be the endpoint's.
func resourceMatches(resource, endpoint string) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" {
		return false
	}
	rc, err1 := canonical(resource)
	ec, err2 := canonical(endpoint)
	if err1 != nil || err2 != nil || rc.Scheme != ec.Scheme || rc.Host != ec.Host {
		return false
	}
	if rc.RawQuery != "" && rc.RawQuery != ec.RawQuery {
		return false
	}
	rp, ep := strings.TrimSuffix(rc.EscapedPath(), "/"), strings.TrimSuffix(ec.EscapedPath(), "/")
	return rp == "" || rp == ep || strings.HasPrefix(ep, rp+"/")
}

// prmLocations are where the protected resource metadata of endpoint may
// be, in order: the challenge's resource_metadata alone when given, else
// the well-known URI with the endpoint's path, then at the root
// (basic/authorization/authorization-server-discovery.mdx §Protected
// Resource Metadata Discovery Requirements).
func prmLocations(endpoint, fromChallenge string) []string {
	if fromChallenge != "" {
		return []string{fromChallenge}
	}
	u, err := canonical(endpoint)
	if err != nil {
		return nil
	}
	const wk = "/.well-known/oauth-protected-resource"
	root := u.Scheme + "://" + u.Host + wk
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		return []string{root + p, root}
	}
	return []string{root}
}

// protectedResource finds and checks the protected resource metadata of
// endpoint (RFC 9728): its resource must cover the endpoint, and it must
// name at least one authorization server, an https (or loopback) issuer.
func protectedResource(ctx context.Context, c *http.Client, endpoint, fromChallenge string) (*oauthex.ProtectedResourceMetadata, string, error) {
	const what = "protected resource metadata"
	for _, loc := range prmLocations(endpoint, fromChallenge) {
		if _, err := checkEndpoint("resource_metadata", loc); err != nil {
			return nil, loc, err
		}
		var prm oauthex.ProtectedResourceMetadata
		err := getJSON(ctx, c, loc, &prm)
		if errors.Is(err, errNotFound) && fromChallenge == "" {
			continue
		}
		if err != nil {
			return nil, loc, &DiscoveryError{What: what, URL: loc, Err: err}
		}
		if !resourceMatches(prm.Resource, endpoint) {
			return nil, loc, &ResourceMismatchError{Endpoint: endpoint, Resource: prm.Resource, MetadataURL: loc}
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, loc, &DiscoveryError{What: what, URL: loc, Err: errors.New("it names no authorization server")}
		}
		for _, as := range prm.AuthorizationServers {
			if err := checkIssuer(as); err != nil {
				return nil, loc, &DiscoveryError{What: what, URL: loc, Err: err}
			}
		}
		return &prm, loc, nil
	}
	return nil, "", fmt.Errorf("%w (tried %s)", ErrNoMetadata, strings.Join(prmLocations(endpoint, ""), " and "))
}

// checkIssuer refuses an issuer identifier that is not https (loopback
// http allowed) or has a query or fragment (RFC 8414 §2).
func checkIssuer(issuer string) error {
	u, err := checkEndpoint("issuer", issuer)
	if err != nil {
		return err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return &InsecureEndpointError{Name: "issuer", URL: issuer}
	}
	return nil
}

// asmLocations are the metadata URLs of issuer in the order MCP asks for
// (basic/authorization/authorization-server-discovery.mdx §Authorization
// Server Metadata Discovery): with a path, RFC 8414 path insertion, then
// OpenID Connect path insertion, then OpenID Connect path appending;
// without, the two well-known URIs at the root.
func asmLocations(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// authorizationServer fetches and checks issuer's metadata: its issuer
// must be identical to the one the URL was built from (a mismatch stops
// discovery: the document must not be used), its endpoints https (or
// loopback), and PKCE with S256 supported (security-considerations.mdx
// §Authorization Code Protection). needAuthz requires an
// authorization_endpoint (the authorization code grant).
func authorizationServer(ctx context.Context, c *http.Client, issuer string, needAuthz bool) (*oauthex.AuthServerMeta, error) {
	const what = "authorization server metadata"
	for _, loc := range asmLocations(issuer) {
		var m oauthex.AuthServerMeta
		err := getJSON(ctx, c, loc, &m)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, &DiscoveryError{What: what, URL: loc, Err: err}
		}
		if m.Issuer != issuer {
			return nil, &DiscoveryError{What: what, URL: loc, Err: &IssuerMismatchError{Where: "metadata", Expected: issuer, Got: m.Issuer}}
		}
		if err := checkASM(&m, needAuthz); err != nil {
			return nil, &DiscoveryError{What: what, URL: loc, Err: err}
		}
		return &m, nil
	}
	return nil, &DiscoveryError{What: what, URL: issuer, Err: fmt.Errorf("none found (tried %s)", strings.Join(asmLocations(issuer), ", "))}
}

// checkASM checks the endpoints and PKCE support of a metadata document.
func checkASM(m *oauthex.AuthServerMeta, needAuthz bool) error {
	if m.TokenEndpoint == "" {
		return errors.New("no token_endpoint")
	}
	if needAuthz && m.AuthorizationEndpoint == "" {
		return errors.New("no authorization_endpoint")
	}
	for _, e := range []struct{ name, v string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint},
	} {
		if e.v == "" {
			continue
		}
		if _, err := checkEndpoint(e.name, e.v); err != nil {
			return err
		}
	}
	if needAuthz && !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("it does not list S256 in code_challenge_methods_supported (%s): PKCE is required", clip(strings.Join(m.CodeChallengeMethodsSupported, ", "), 100))
	}
	if needAuthz && len(m.ResponseTypesSupported) > 0 && !slices.Contains(m.ResponseTypesSupported, "code") {
		return errors.New(`its response_types_supported lacks "code"`)
	}
	return nil
}

// loopbackRedirect reports whether a redirect URI is an http URI on a
// loopback IP literal or localhost, whose port an authorization server
// must let vary (RFC 8252 §7.3).
func loopbackRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	return isLoopback(u.Hostname())
}

// sameRedirect reports whether a and b are the same redirect URI, the
// port aside when both are loopback ones.
func sameRedirect(a, b string) bool {
	if a == b {
		return true
	}
	if !loopbackRedirect(a) || !loopbackRedirect(b) {
		return false
	}
	ua, _ := url.Parse(a)
	ub, _ := url.Parse(b)
	return ua.Hostname() == ub.Hostname() && ua.EscapedPath() == ub.EscapedPath() && ua.RawQuery == ub.RawQuery
}
