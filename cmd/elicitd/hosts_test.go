package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// routePath turns a ServeMux pattern into a request method and path.
func routePath(pattern string) (method, path string) {
	method = http.MethodGet
	if m, p, ok := strings.Cut(pattern, " "); ok {
		method, pattern = m, p
	}
	if pattern == "/mcp" {
		method = http.MethodPost
	}
	return method, strings.ReplaceAll(pattern, "{$}", "")
}

// TestHostCheckOnEveryRoute walks every route of both listeners: a
// request whose Host or Origin names another host (a DNS-rebinding page)
// gets 403 everywhere, ops endpoints included; the same request naming
// this host is not refused.
func TestHostCheckOnEveryRoute(t *testing.T) {
	demo := newEnvWith(t, func(c *config) { c.metricsAddr = "" })
	split := newEnvWith(t, func(c *config) { c.metricsAddr = "127.0.0.1:0" })
	jwt, _ := newJWTEnv(t)
	listeners := []struct {
		name     string
		handler  http.Handler
		patterns []string
	}{
		{"--addr (demo auth, /metrics here)", demo.app, demo.app.routes.patterns},
		{"--addr (/metrics moved)", split.app, split.app.routes.patterns},
		{"--addr (jwt auth)", jwt.app, jwt.app.routes.patterns},
		{"--metrics-addr", split.app.opsMux(), split.app.opsRoutes().patterns},
	}
	seen := map[string]bool{}
	for _, l := range listeners {
		for _, pattern := range l.patterns {
			method, path := routePath(pattern)
			seen[path] = true
			t.Run(l.name+" "+pattern, func(t *testing.T) {
				var doMethod func(method, host, origin string) *httptest.ResponseRecorder
				do := func(host, origin string) *httptest.ResponseRecorder {
					return doMethod(method, host, origin)
				}
				doMethod = func(method, host, origin string) *httptest.ResponseRecorder {
					req := httptest.NewRequest(method, "http://"+host+path, strings.NewReader("{}"))
					req.Header.Set("Content-Type", "application/json")
					if origin != "" {
						req.Header.Set("Origin", origin)
					}
					rec := httptest.NewRecorder()
					l.handler.ServeHTTP(rec, req)
					return rec
				}
				for _, bad := range []struct{ host, origin string }{
					{"evil.example", ""},
					{"evil.example:3000", ""},
					{"127.0.0.1", "http://evil.example"},
					{"10.0.0.7", "http://evil.example"}, // an IP Host with a foreign Origin
				} {
					// Whatever the method: the Host is checked first.
					for _, m := range []string{method, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions} {
						if rec := doMethod(m, bad.host, bad.origin); rec.Code != http.StatusForbidden {
							t.Errorf("%s Host %s Origin %q: %d %.100q", m, bad.host, bad.origin, rec.Code, rec.Body.String())
						}
					}
				}
				if rec := do("127.0.0.1", ""); rec.Code == http.StatusForbidden {
					t.Errorf("Host 127.0.0.1: %d %.100q", rec.Code, rec.Body.String())
				}
				// Probes address an instance by IP: accepted on the ops
				// endpoints only.
				rec := do("10.0.0.7:9090", "")
				if ops := opsPaths[path]; ops != (rec.Code != http.StatusForbidden) {
					t.Errorf("Host 10.0.0.7:9090 (ops endpoint %v): %d", ops, rec.Code)
				}
			})
		}
	}
	// The walk covered what it should: pages, MCP, ops and metadata.
	for _, p := range []string{"/", "/mcp", "/ui/", "/connect/", "/healthz", "/readyz", "/metrics", "/.well-known/oauth-protected-resource"} {
		if !seen[p] {
			t.Errorf("no route %s was walked (have %v)", p, seen)
		}
	}
	// Paths no route serves are refused the same way, before the 404.
	rec := httptest.NewRecorder()
	demo.app.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://evil.example/nothing-here", nil))
	if rec.Code != http.StatusForbidden {
		t.Errorf("unknown path with Host evil.example: %d", rec.Code)
	}
}

// --allowed-hosts adds names to both listeners; entries are host names or
// IP addresses, nothing else.
func TestAllowedHosts(t *testing.T) {
	e := newEnvWith(t, func(c *config) {
		c.metricsAddr = "127.0.0.1:0"
		if err := applyAllowedHosts(c, "Prom.Internal, lb.example.com"); err != nil {
			t.Fatal(err)
		}
	})
	for _, h := range []http.Handler{e.app, e.app.opsMux()} {
		for host, want := range map[string]int{"prom.internal:9090": 200, "lb.example.com": 200, "evil.example": 403} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://"+host+"/healthz", nil))
			if rec.Code != want {
				t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
			}
		}
	}
	for _, bad := range []string{"https://lb.example.com", "lb.example.com:80", "lb/x", ",", "a@b"} {
		if err := applyAllowedHosts(&config{}, bad); err == nil {
			t.Errorf("--allowed-hosts %q accepted", bad)
		}
	}
	c := &config{}
	if err := applyAllowedHosts(c, "*, [::1], 10.0.0.1"); err != nil || strings.Join(c.allowedHosts, " ") != "* ::1 10.0.0.1" {
		t.Errorf("--allowed-hosts: %v %v", c.allowedHosts, err)
	}
}
