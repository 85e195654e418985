package consent

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// SafeText makes server-supplied text (a tool result, a description) safe
// to print on a terminal: newlines and tabs are kept; control characters —
// ESC above all, which could rewrite the screen and fake a consent prompt —
// carriage returns, bidi controls, other invisible or format characters
// and bytes that are not UTF-8 are shown as escapes (\x1b, \u202e, \xff).
// It is the sanitizer every print path of this module uses, with the same
// rules for one-line text and for JSON output.
func SafeText(s string) string { return termtext.Block(s) }

// clean makes server-supplied text safe to print on one line of a
// terminal: as SafeText, with newlines and tabs escaped too.
func clean(s string) string { return termtext.Line(s) }

// indent cleans multi-line text and indents every line after the first.
func indent(s, pad string) string {
	s = strings.TrimRight(termtext.Block(s), "\n")
	return strings.ReplaceAll(s, "\n", "\n"+pad)
}

// marker returns the highlighter for the registrable domain: ANSI bold on
// a terminal, square brackets otherwise (SEC-U-C-05).
func marker(ansi bool) func(string) string {
	if ansi {
		return func(s string) string { return "\x1b[1m" + s + "\x1b[0m" }
	}
	return func(s string) string { return "[" + s + "]" }
}

// AskerLines describes who is asking (ELI-C-01) as two lines: the host of
// the endpoint the client connected to, or the local command it launched
// (the only verified part), and the name the server gives itself
// (self-reported, not verified).
func AskerLines(who mcpclient.Asker) (endpoint, name string) {
	endpoint = "(unknown endpoint)"
	if who.Command != "" {
		endpoint = clean(who.Command) + " — the local program this host started"
	} else if u, err := url.Parse(who.Endpoint); err == nil && u.Host != "" {
		endpoint = clean(u.Host)
		if rep, err := InspectURL(who.Endpoint); err == nil {
			endpoint = rep.Host
			if rep.IP && strings.Contains(rep.Host, ":") {
				endpoint = "[" + rep.Host + "]"
			}
			if rep.Port != "" {
				endpoint += ":" + rep.Port
			}
			if rep.Host != rep.ASCIIHost {
				endpoint += " (" + rep.ASCIIHost + ")"
			}
		}
		endpoint += " — the endpoint you connected to"
	}
	name = "(the server gave no name)"
	if s := who.Server; s != nil && (s.Name != "" || s.Title != "") {
		id := strings.TrimSpace(s.Name + " " + s.Version)
		if s.Title != "" {
			name = strconv.Quote(s.Title) + " (" + id + ")"
		} else {
			name = strconv.Quote(id)
		}
		name = clean(name) + " — self-reported, not verified"
	}
	return endpoint, name
}

// writeAsker writes the "who is asking" block that opens every prompt.
func writeAsker(w io.Writer, who mcpclient.Asker, what string) {
	endpoint, name := AskerLines(who)
	fmt.Fprintf(w, "\n%s\n  Server:   %s\n  Name:     %s\n", what, endpoint, name)
}

// RenderURL writes the consent screen of a URL-mode elicitation (before
// any choice is offered): which server asks (ELI-C-01), its message, the
// complete URL with its registrable domain highlighted — ANSI bold when
// ansi is true, [brackets] otherwise — (SEC-U-C-03, SEC-U-C-05,
// ELI-U-C-01), the domain on its own line in both forms, and every
// warning (SEC-U-C-06), plus a warning when the page is not on the site of
// the endpoint that asks. Server text is cleaned of control and bidi
// characters. It returns the first write error.
func RenderURL(w io.Writer, who mcpclient.Asker, message string, rep *URLReport, ansi bool) error {
	ew := &errWriter{w: w}
	writeAsker(ew, who, "The server asks you to open a web page (URL-mode elicitation).")
	fmt.Fprintf(ew, "  Message:  %s\n", indent(message, "            "))
	fmt.Fprintf(ew, "  URL:      %s\n", rep.Highlight(marker(ansi)))
	fmt.Fprintf(ew, "  Domain:   %s\n", domainLine(rep))
	writeWarnings(ew, who, rep, "The page")
	fmt.Fprintf(ew, "  Nothing has been opened or fetched.\n")
	return ew.err
}

func domainLine(rep *URLReport) string {
	switch {
	case rep.RegistrableDomain != "" && rep.UnicodeRegistrableDomain != rep.RegistrableDomain:
		return rep.UnicodeRegistrableDomain + " = " + rep.RegistrableDomain + " (punycode)"
	case rep.RegistrableDomain != "":
		return rep.RegistrableDomain
	case rep.IP && rep.Loopback:
		return rep.Host + " (an IP address: this computer)"
	case rep.IP:
		return rep.Host + " (an IP address, no domain name)"
	case rep.Loopback:
		return rep.Host + " (this computer)"
	}
	return rep.Host + " (no registrable domain)"
}

// writeWarnings writes the warnings of rep, after one when what (e.g.
// "The page") is on another site than the endpoint.
func writeWarnings(w io.Writer, who mcpclient.Asker, rep *URLReport, what string) {
	warnings := rep.Warnings
	if o, ok := otherSite(who, rep, what); ok {
		warnings = append([]Warning{o}, warnings...)
	}
	if len(warnings) > 0 {
		fmt.Fprintf(w, "  Warnings:\n")
		for _, o := range warnings {
			fmt.Fprintf(w, "    ! %s\n", o.Message)
		}
	}
}

// otherSite warns when the page is on another site than the endpoint,
// and, on the same site (loopback counts as one: both are this computer),
// when it is on another origin — scheme, host or port — so another server.
func otherSite(who mcpclient.Asker, rep *URLReport, what string) (Warning, bool) {
	ep, err := InspectURL(who.Endpoint)
	switch {
	case err != nil || rep.origin() == ep.origin():
		return Warning{}, false
	case ep.Loopback && rep.Loopback:
		return Warning{Kind: WarnOtherOrigin, Message: fmt.Sprintf(
			"%s is on %s, not on %s, the server you connected to: another server on this computer.", what, rep.origin(), ep.origin())}, true
	case ep.Site() == rep.Site():
		return Warning{Kind: WarnOtherOrigin, Message: fmt.Sprintf(
			"%s is on %s, not on %s, the server you connected to (both are on the site %s).", what, rep.origin(), ep.origin(), ep.Site())}, true
	}
	return Warning{Kind: WarnOtherSite, Message: fmt.Sprintf(
		"%s is on %s, not on %s, the server you connected to.", what, rep.Site(), ep.Site())}, true
}

// origin is the URL's origin as a browser compares it: scheme, ASCII
// host and port, the scheme's default port filled in.
func (r *URLReport) origin() string {
	port := r.Port
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[r.Scheme]
	}
	host := r.ASCIIHost
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return r.Scheme + "://" + host + ":" + port
}

// errWriter keeps the first write error so a screen can be written with
// plain Fprintf calls.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
