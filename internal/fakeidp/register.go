package fakeidp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// register is dynamic client registration (RFC 7591): one redirect URI,
// a public client (token_endpoint_auth_method none) unless the request
// asks for client_secret_basic or client_secret_post, which get a secret.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) != 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata", "error_description": "one redirect URI"})
		return
	}
	if u, err := url.Parse(m.RedirectURIs[0]); err != nil || !(u.Scheme == "https" || isLoopback(u.Hostname())) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri"})
		return
	}
	c := Client{ID: "dyn-" + b64(randomBytes(9)), RedirectURL: m.RedirectURIs[0]}
	method := "none"
	if m.AuthMethod == "client_secret_basic" || m.AuthMethod == "client_secret_post" {
		method, c.Secret = m.AuthMethod, b64(randomBytes(18))
	}
	s.mu.Lock()
	s.clients[c.ID] = c
	s.registered++
	if c.Secret != "" {
		s.issued = append(s.issued, c.Secret)
	}
	s.mu.Unlock()
	resp := map[string]any{"client_id": c.ID, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": method}
	if c.Secret != "" {
		resp["client_secret"] = c.Secret
	}
	writeJSON(w, http.StatusCreated, resp)
}

// redirectMatches compares a redirect URI with the registered one:
// exactly, or, for an http loopback IP literal, with any port (RFC 8252
// §7.3).
func redirectMatches(registered, got string) bool {
	if got == registered {
		return true
	}
	a, err1 := url.Parse(registered)
	b, err2 := url.Parse(got)
	if err1 != nil || err2 != nil || a.Scheme != "http" || b.Scheme != "http" {
		return false
	}
	return a.Hostname() == b.Hostname() && (a.Hostname() == "127.0.0.1" || a.Hostname() == "::1") &&
		a.EscapedPath() == b.EscapedPath() && a.RawQuery == b.RawQuery
}

func isLoopback(host string) bool {
	return slices.Contains([]string{"127.0.0.1", "::1", "localhost"}, strings.ToLower(host))
}

// Issued returns every authorization code, access token and client
// secret handed out so far, for tests that look for them where they must
// not be (logs, output).
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Registrations returns how many clients registered dynamically.
func (s *Server) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered
}
