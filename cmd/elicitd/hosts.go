package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-elicit/elicit/streamhttp"
)

// applyAllowedHosts sets --allowed-hosts.
func applyAllowedHosts(c *config, v string) error {
	hosts, err := splitList(v)
	if err != nil {
		return err
	}
	for i, h := range hosts {
		if hosts[i], err = hostName(h); err != nil {
			return err
		}
	}
	c.allowedHosts = hosts
	return nil
}

// hostName checks one --allowed-hosts entry, a host name or IP address
// without scheme or port (or "*"), and returns it in lower case.
func hostName(h string) (string, error) {
	if h == "*" {
		return h, nil
	}
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
		return ip.String(), nil
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", fmt.Errorf("%q is not a host name (no scheme, port or path: e.g. mcp.example.com)", h)
		}
	}
	return strings.ToLower(h), nil
}

// allowedHosts returns the Host names a listener on listenAddr accepts:
// the loopback names, the public URL's host, listenAddr's own host unless
// it is a wildcard (or listenAddr is empty), and --allowed-hosts.
func allowedHosts(cfg *config, listenAddr string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if u, err := url.Parse(cfg.publicURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	if h, _, err := net.SplitHostPort(listenAddr); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	return append(hosts, cfg.allowedHosts...)
}

// opsPaths are the operations endpoints, which may also be asked by IP
// address (guardHosts).
var opsPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// guardHosts protects every route of a listener against DNS rebinding
// (HTTP-S-02): a request whose Host, or Origin when sent, names a host
// not in hosts gets 403 before next sees it, whatever its path
// (streamhttp.AllowHosts). Two exceptions:
//   - /mcp checks the same hosts itself and refuses in JSON-RPC
//     (streamhttp.Options.AllowedHosts), so it passes through here;
//   - the operations endpoints (opsPaths) also accept an IP-literal Host
//     when no Origin is sent: load balancers, Kubernetes probes and
//     Prometheus address an instance by IP, and a rebinding page cannot
//     send one (its requests carry its own host name).
func guardHosts(hosts []string, next http.Handler) http.Handler {
	strict := streamhttp.AllowHosts(hosts, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/mcp":
			next.ServeHTTP(w, r)
		case opsPaths[r.URL.Path] && ipHost(r.Host) && len(r.Header.Values("Origin")) == 0:
			next.ServeHTTP(w, r)
		default:
			strict.ServeHTTP(w, r)
		}
	})
}

// ipHost reports whether a Host header names an IP address.
func ipHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil
}
