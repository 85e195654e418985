package consent

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func kinds(r *URLReport) []WarningKind {
	var ks []WarningKind
	for _, w := range r.Warnings {
		ks = append(ks, w.Kind)
	}
	return ks
}

func TestInspectURL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		raw       string
		url       string // want URL
		host      string
		ascii     string
		domain    string // RegistrableDomain
		ip        bool
		loopback  bool
		warnings  []WarningKind // exactly, in order
		inMessage string        // a warning message contains this
	}{
		{name: "plain https", raw: "https://mcp.example.com/ui/set_api_key?flow=ab12",
			url: "https://mcp.example.com/ui/set_api_key?flow=ab12", host: "mcp.example.com", ascii: "mcp.example.com", domain: "example.com"},
		{name: "registrable domain under a two-label suffix", raw: "https://a.b.example.co.uk/p?q=1#f",
			url: "https://a.b.example.co.uk/p?q=1#f", host: "a.b.example.co.uk", ascii: "a.b.example.co.uk", domain: "example.co.uk"},
		{name: "private suffix names the owner", raw: "https://alice.github.io/",
			url: "https://alice.github.io/", host: "alice.github.io", ascii: "alice.github.io", domain: "alice.github.io"},
		{name: "Cyrillic a homograph of apple.com", raw: "https://\u0430pple.com/login",
			url: "https://xn--pple-43d.com/login", host: "\u0430pple.com", ascii: "xn--pple-43d.com", domain: "xn--pple-43d.com",
			warnings: []WarningKind{WarnMixedScript, WarnIDN}, inMessage: `may imitate "apple.com" but it is xn--pple-43d.com`},
		{name: "the same homograph written in punycode", raw: "https://xn--pple-43d.com/",
			url: "https://xn--pple-43d.com/", host: "\u0430pple.com", ascii: "xn--pple-43d.com", domain: "xn--pple-43d.com",
			warnings: []WarningKind{WarnMixedScript, WarnIDN}, inMessage: "\u0430pple.com is really xn--pple-43d.com"},
		{name: "whole-script Cyrillic look-alike", raw: "https://xn--80ak6aa92e.com/",
			url: "https://xn--80ak6aa92e.com/", host: "\u0430\u0440\u0440\u04cf\u0435.com", ascii: "xn--80ak6aa92e.com", domain: "xn--80ak6aa92e.com",
			warnings: []WarningKind{WarnConfusable, WarnIDN}, inMessage: `imitate "apple.com"`},
		{name: "honest IDN only says IDN", raw: "https://münchen.de/",
			url: "https://xn--mnchen-3ya.de/", host: "münchen.de", ascii: "xn--mnchen-3ya.de", domain: "xn--mnchen-3ya.de",
			warnings: []WarningKind{WarnIDN}},
		{name: "Japanese mixes Han and Hiragana legitimately", raw: "https://例え.jp/",
			url: "https://xn--r8jz45g.jp/", host: "例え.jp", ascii: "xn--r8jz45g.jp", domain: "xn--r8jz45g.jp",
			warnings: []WarningKind{WarnIDN}},
		{name: "full-width letters", raw: "https://ＡＰＰＬＥ.com/",
			url: "https://apple.com/", host: "apple.com", ascii: "apple.com", domain: "apple.com",
			warnings: []WarningKind{WarnNormalizedHost}},
		{name: "IPv4 literal", raw: "https://203.0.113.7/x",
			url: "https://203.0.113.7/x", host: "203.0.113.7", ascii: "203.0.113.7", ip: true,
			warnings: []WarningKind{WarnIPLiteral}},
		{name: "IPv6 literal over http", raw: "http://[2001:db8::1]:8080/x",
			url: "http://[2001:db8::1]:8080/x", host: "2001:db8::1", ascii: "2001:db8::1", ip: true,
			warnings: []WarningKind{WarnNotHTTPS, WarnIPLiteral}},
		{name: "IPv6 loopback", raw: "http://[::1]:3000/",
			url: "http://[::1]:3000/", host: "::1", ascii: "::1", ip: true, loopback: true,
			warnings: []WarningKind{WarnIPLiteral}},
		{name: "hex IPv4 browsers accept", raw: "http://0x7f.1/",
			url: "http://127.0.0.1/", host: "127.0.0.1", ascii: "127.0.0.1", ip: true, loopback: true,
			warnings: []WarningKind{WarnNormalizedHost, WarnIPLiteral}, inMessage: "browsers read it as 127.0.0.1"},
		{name: "http to another host", raw: "http://example.com/",
			url: "http://example.com/", host: "example.com", ascii: "example.com", domain: "example.com",
			warnings: []WarningKind{WarnNotHTTPS}},
		{name: "http to loopback by address", raw: "http://127.0.0.1:3000/ui/set_api_key?flow=1",
			url: "http://127.0.0.1:3000/ui/set_api_key?flow=1", host: "127.0.0.1", ascii: "127.0.0.1", ip: true, loopback: true,
			warnings: []WarningKind{WarnIPLiteral}},
		{name: "http to localhost", raw: "http://localhost:3000/x",
			url: "http://localhost:3000/x", host: "localhost", ascii: "localhost", loopback: true},
		{name: "a public suffix alone", raw: "https://co.uk/",
			url: "https://co.uk/", host: "co.uk", ascii: "co.uk", warnings: []WarningKind{WarnNoRegistrableDomain}},
		{name: "bidi override in the query is encoded", raw: "https://example.com/?q=\u202eabc",
			url: "https://example.com/?q=%E2%80%AEabc", host: "example.com", ascii: "example.com", domain: "example.com",
			warnings: []WarningKind{WarnInvisible}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := InspectURL(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if r.URL != tc.url || r.Host != tc.host || r.ASCIIHost != tc.ascii || r.RegistrableDomain != tc.domain || r.IP != tc.ip || r.Loopback != tc.loopback {
				t.Errorf("got URL=%q host=%q ascii=%q domain=%q ip=%v loopback=%v", r.URL, r.Host, r.ASCIIHost, r.RegistrableDomain, r.IP, r.Loopback)
			}
			if got := kinds(r); !slices.Equal(got, tc.warnings) {
				t.Errorf("warnings = %v, want %v (%+v)", got, tc.warnings, r.Warnings)
			}
			if tc.inMessage != "" && !slices.ContainsFunc(r.Warnings, func(w Warning) bool { return strings.Contains(w.Message, tc.inMessage) }) {
				t.Errorf("no warning says %q: %+v", tc.inMessage, r.Warnings)
			}
			if r.Raw != tc.raw {
				t.Errorf("Raw = %q", r.Raw)
			}
		})
	}
}

func TestInspectURLRefuses(t *testing.T) {
	for _, raw := range []string{
		"javascript:alert(document.cookie)",
		"JavaScript:alert(1)",
		"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
		"file:///etc/passwd",
		"vbscript:msgbox(1)",
		"ftp://example.com/x",
		"myapp://callback",
		"https:example.com",
		"//example.com/x",
		"/ui/set_api_key",
		"https://",
		"https://exa mple.com/",
		"https://example.com/\x1b[2J",
		" https://example.com/",
		"https://256.1.1.1/",
		"https://1.2.3.4.5/",
		"https://apple.com@evil.example/",
		"https://user:pass@example.com/",
		"https://@example.com/",
		"http://user@127.0.0.1:3000/ui",
	} {
		t.Run(raw, func(t *testing.T) {
			r, err := InspectURL(raw)
			if !errors.Is(err, ErrRefusedURL) {
				t.Fatalf("InspectURL(%q) = %+v, %v; want ErrRefusedURL", raw, r, err)
			}
		})
	}
}

func TestHighlight(t *testing.T) {
	br := func(s string) string { return "[" + s + "]" }
	for raw, want := range map[string]string{
		"https://login.bank.example.evil.co.uk/x?y=1": "https://login.bank.example.[evil.co.uk]/x?y=1",
		"https://\u0430pple.com/":                     "https://[xn--pple-43d.com]/",
		"https://evil.example:8443/":                  "https://[evil.example]:8443/",
		"http://127.0.0.1:3000/ui":                    "http://127.0.0.1:3000/ui",
		"http://[::1]/":                               "http://[::1]/",
		"http://localhost:3000/ui":                    "http://[localhost]:3000/ui",
		"https://example.com./":                       "https://[example.com]./",
	} {
		r, err := InspectURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Highlight(br); got != want {
			t.Errorf("Highlight(%q) = %q, want %q", raw, got, want)
		}
	}
}

func FuzzInspectURL(f *testing.F) {
	for _, s := range []string{"https://a.b.example.co.uk/p", "http://0x7f.1/", "https://\u0430pple.com/", "javascript:x", "http://[::1]:1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := InspectURL(raw)
		if err != nil {
			if !errors.Is(err, ErrRefusedURL) {
				t.Fatalf("error does not wrap ErrRefusedURL: %v", err)
			}
			return
		}
		// What is shown is ASCII, starts with the scheme, and highlighting
		// only adds marks.
		for i := 0; i < len(r.URL); i++ {
			if r.URL[i] <= 0x20 || r.URL[i] >= 0x7f {
				t.Fatalf("URL %q has byte %#x", r.URL, r.URL[i])
			}
		}
		if !strings.HasPrefix(r.URL, r.Scheme+"://") || (r.Scheme != "http" && r.Scheme != "https") {
			t.Fatalf("URL %q scheme %q", r.URL, r.Scheme)
		}
		if got := r.Highlight(func(s string) string { return s }); got != r.URL {
			t.Fatalf("Highlight changed the URL: %q vs %q", got, r.URL)
		}
	})
}
