package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// --public-url is kept as browsers serialize the origin (no default port,
// decimal port, lower case), and a form post carrying that Origin passes
// the pages' same-origin check, while another origin is refused.
func TestPublicURLCanonicalOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://localhost:80", "http://localhost"},
		{"https://mcp.example.com:443/", "https://mcp.example.com"},
		{"http://127.0.0.1:03751", "http://127.0.0.1:3751"},
		{"HTTPS://Host.Example:8443", "https://host.example:8443"},
		{"http://[::1]:80", "http://[::1]"},
		{"http://[::1]:0080", "http://[::1]"},
		{"https://host.example:80", "https://host.example:80"},
		{"http://localhost:3000", "http://localhost:3000"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			cfg, err := loadConfig([]string{"--public-url", tt.in, "--insecure-demo-auth", "--data", t.TempDir(), "--demo-oauth-addr", "off"},
				func(string) string { return "" }, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.publicURL != tt.want {
				t.Fatalf("publicURL = %q, want %q", cfg.publicURL, tt.want)
			}
			cfg.auditOut = io.Discard
			a, err := newApp(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			u, _ := url.Parse(tt.want)
			post := func(origin string) (int, string) {
				req := httptest.NewRequest("POST", tt.want+"/ui/login", strings.NewReader("username=alice"))
				req.Host = u.Host
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", origin)
				rec := httptest.NewRecorder()
				a.ServeHTTP(rec, req)
				return rec.Code, rec.Body.String()
			}
			// Without a csrf field the sign-in form is refused too, but
			// as expired, not as cross-site.
			if _, body := post(tt.want); strings.Contains(body, "did not come from this site") || strings.Contains(body, "Origin not allowed") {
				t.Fatalf("a post with Origin %s was refused as cross-site:\n%s", tt.want, body)
			}
			if code, body := post("http://evil.example"); code != http.StatusForbidden {
				t.Fatalf("a post from another origin: %d\n%s", code, body)
			}
		})
	}
}

// An unknown tool named with a bidi override reaches the audit record and
// the error message escaped, so neither can be made to read differently.
func TestUnknownToolNameEscaped(t *testing.T) {
	audit := &syncBuffer{}
	e := newEnvWith(t, func(c *config) { c.auditOut = audit })
	name := "\u202eevil\n"
	quoted, _ := json.Marshal(name)
	r := e.mcp("alice", "tools/call", "=?base64?"+base64.StdEncoding.EncodeToString([]byte(name))+"?=",
		callBody(1, strings.Trim(string(quoted), `"`), "", metaURL))
	if r.Error == nil || r.Error.Message != `Unknown tool: \u202eevil\u000a` {
		t.Fatalf("unknown tool: %d %.300s", r.Status, r.Raw)
	}
	lines := auditLines(t, audit.String())
	if got := lines[len(lines)-1].Name; got != `\u202eevil\u000a` {
		t.Fatalf("audit name = %q", got)
	}
	if strings.ContainsRune(audit.String(), '\u202e') {
		t.Fatal("the audit log holds U+202E")
	}
}
