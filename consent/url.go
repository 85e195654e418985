package consent

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/lookalike"
	"github.com/mcp-elicit/elicit/internal/textclass"
)

// ErrRefusedURL is wrapped by every InspectURL error: the URL must not be
// offered to the user at all (not http or https, no host, a host no browser
// would accept, a user name or password before the host, control
// characters). Test with errors.Is.
var ErrRefusedURL = errors.New("consent: URL refused")

// WarningKind names one reason to be careful with a URL. The values are
// stable and may be used as labels.
type WarningKind string

// Warning kinds reported by InspectURL (SEC-U-C-06) and by RenderURL.
const (
	// WarnIDN: the host is an internationalized domain name (it holds
	// non-ASCII letters, or is written in punycode "xn--"); both forms are
	// named in the message.
	WarnIDN WarningKind = "idn"
	// WarnMixedScript: one label of the host mixes writing systems, e.g.
	// a Cyrillic "а" among Latin letters: the classic homograph.
	WarnMixedScript WarningKind = "mixed-script"
	// WarnConfusable: a label is written entirely in another script with
	// letters that look Latin (all-Cyrillic "раураӏ" for "paypal").
	WarnConfusable WarningKind = "confusable"
	// WarnNormalizedHost: the host was written in an unusual way
	// (full-width letters, ideographic dots) and means another, plainer host.
	WarnNormalizedHost WarningKind = "normalized-host"
	// WarnNotHTTPS: plain http to a host that is not this computer.
	WarnNotHTTPS WarningKind = "not-https"
	// WarnIPLiteral: the host is an IP address, not a name; also for
	// numeric hosts in the unusual forms browsers read as IPv4 (0x7f.1).
	WarnIPLiteral WarningKind = "ip-literal"
	// WarnNoRegistrableDomain: no registrable domain can be derived (the
	// host is itself a public suffix, or a single label that is not this
	// computer), so there is no owner to show.
	WarnNoRegistrableDomain WarningKind = "no-registrable-domain"
	// WarnInvisible: the URL holds invisible or direction-changing
	// characters (zero-width, bidi controls, non-ASCII spaces); they are
	// percent-encoded in URL.
	WarnInvisible WarningKind = "invisible-characters"
	// WarnOtherSite: the page is not on the site of the MCP endpoint that
	// asks (added by RenderURL, which knows the endpoint).
	WarnOtherSite WarningKind = "other-site"
	// WarnOtherOrigin: the page is on the endpoint's site (or, for
	// loopback, on this computer) but not on its origin: another scheme,
	// host or port, so another server (added by RenderURL).
	WarnOtherOrigin WarningKind = "other-origin"
	// WarnCredential: the URL carries what looks like a credential (a
	// query parameter named like a token, password or code, or a JWT),
	// which an elicitation URL must never hold (elicit.SecretsInURL, the
	// rule elicit check's url-safe case applies).
	WarnCredential WarningKind = "credential"
)

// Warning is one reason to be careful, with a sentence for the user.
type Warning struct {
	Kind    WarningKind
	Message string
}

// URLReport is what a user needs to judge a URL-mode elicitation URL
// before consenting (SEC-U-C-03, SEC-U-C-05, SEC-U-C-06, ELI-U-C-01).
// Nothing in it was fetched: InspectURL looks at the string only
// (SEC-U-C-01).
type URLReport struct {
	// Raw is the URL exactly as received.
	Raw string
	// URL is the complete URL to show and, on consent, to open: scheme and
	// host in lower case, the host in ASCII (punycode) form, and every
	// non-ASCII or invisible character percent-encoded, so what is shown
	// is what is opened.
	URL string
	// UnicodeURL is URL with the host in Unicode form; equal to URL when
	// the host is plain ASCII.
	UnicodeURL string
	// Scheme is "http" or "https".
	Scheme string
	// Host is the host name in Unicode form, lower case, without port or
	// IPv6 brackets; for an IP address, its canonical text.
	Host string
	// ASCIIHost is the host in ASCII form (punycode "xn--" labels for
	// non-ASCII ones); equal to Host for ASCII hosts and IP addresses.
	ASCIIHost string
	// Port is the port as written, "" when absent.
	Port string
	// RegistrableDomain is the public suffix plus one label (eTLD+1,
	// e.g. "example.co.uk" for a.b.example.co.uk), in ASCII form: the part
	// of the host that says who owns the site. Empty for IP addresses,
	// localhost and hosts that are themselves public suffixes.
	RegistrableDomain string
	// UnicodeRegistrableDomain is RegistrableDomain in Unicode form.
	UnicodeRegistrableDomain string
	// PublicSuffix is the host's public suffix ("co.uk", "github.io"),
	// empty for IP addresses.
	PublicSuffix string
	// IP is true when the host is an IP address (v4, v6, or a numeric form
	// browsers read as IPv4).
	IP bool
	// Loopback is true when the host is this computer: localhost,
	// *.localhost, 127.0.0.0/8 or ::1.
	Loopback bool
	// Warnings lists the reasons to be careful, most serious first; empty
	// for a plain https URL on an ordinary domain.
	Warnings []Warning

	prefix string // URL up to the host, e.g. "https://"
	hostIn string // the host as written in URL (brackets for IPv6)
	suffix string // URL after the host: ":port/path?query#fragment"
}

// Highlight returns URL with the registrable domain (or, when there is
// none, the whole host name) passed through mark, e.g. to make it bold or
// to bracket it (SEC-U-C-05): "https://login.bank.example.[evil.co.uk]/".
// An IP address has no domain to mark and is left as it is (brackets
// around it would read as IPv6 syntax).
func (r *URLReport) Highlight(mark func(string) string) string {
	h := r.hostIn
	if r.IP {
		return r.URL
	}
	if d := r.RegistrableDomain; d != "" && strings.HasSuffix(strings.TrimSuffix(h, "."), d) {
		i := strings.LastIndex(h, d)
		return r.prefix + h[:i] + mark(d) + h[i+len(d):] + r.suffix
	}
	return r.prefix + mark(h) + r.suffix
}

// Warned reports whether the report holds a warning of kind k.
func (r *URLReport) Warned(k WarningKind) bool {
	return slices.ContainsFunc(r.Warnings, func(w Warning) bool { return w.Kind == k })
}

// Site is what identifies the owner of the URL's host, for comparing two
// URLs: the registrable domain, or the host itself when there is none.
func (r *URLReport) Site() string {
	if r.RegistrableDomain != "" {
		return r.RegistrableDomain
	}
	return r.ASCIIHost
}

// hostProfile converts hosts as browsers do (UTS #46 non-transitional
// processing, WHATWG URL: no STD3 rules, no hyphen checks), so the ASCII
// form is the one a browser would look up.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.CheckJoiners(true),
)

// InspectURL examines the URL of a URL-mode elicitation without fetching
// anything (SEC-U-C-01) and reports what to show the user before asking
// for consent: the complete URL (SEC-U-C-03), its host in Unicode and
// punycode forms, its registrable domain for highlighting (SEC-U-C-05),
// and warnings (SEC-U-C-06) for IDN/punycode hosts, mixed-script and
// look-alike labels, plain http to a host other than this computer, user
// info before the host, IP-address hosts, hosts with no registrable domain
// and invisible characters.
//
// Only absolute http and https URLs with a host are inspected; anything
// else (javascript:, data:, file:, vbscript:, custom app schemes, a URL
// with spaces or control characters, a host no browser would accept) is
// refused with an error wrapping ErrRefusedURL.
func InspectURL(raw string) (*URLReport, error) {
	u, err := parseWebURL(raw)
	if err != nil {
		return nil, err
	}
	r := &URLReport{Raw: raw, Scheme: u.Scheme, Port: u.Port()}
	if err := r.inspectHost(u.Hostname()); err != nil {
		return nil, err
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: it has %q before the host, a user name that makes it look like another site; the page is on %s",
			ErrRefusedURL, clean(u.User.Username()), r.Host)
	}
	r.warnAboutSite()
	if secrets := elicit.SecretsInURL(raw); len(secrets) > 0 {
		var what []string
		for _, s := range secrets {
			if s.Param == "" {
				what = append(what, "a JSON Web Token")
				continue
			}
			what = append(what, "the parameter "+strconv.Quote(clean(s.Param)))
		}
		r.warn(WarnCredential, "The URL carries what looks like a credential ("+strings.Join(what, ", ")+
			"): a server's own page needs none in its link; it may sign you in to someone else's account or pass your code on.")
	}
	if hasInvisible(raw) {
		r.warn(WarnInvisible, "The URL holds invisible or direction-changing characters; they are shown percent-encoded.")
	}
	// Most serious first: a homograph matters more than the fact of IDN.
	slices.SortStableFunc(r.Warnings, func(a, b Warning) int { return severity(a.Kind) - severity(b.Kind) })
	r.rebuild(u)
	return r, nil
}

// parseWebURL accepts only an absolute http or https URL with a host and
// no spaces or control characters.
func parseWebURL(raw string) (*url.URL, error) {
	for _, c := range raw {
		if c < 0x20 || c == 0x7f || c == ' ' || (c >= 0x80 && c < 0xa0) {
			return nil, fmt.Errorf("%w: it contains spaces or control characters", ErrRefusedURL)
		}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: not a valid URL", ErrRefusedURL)
	case u.Scheme == "":
		return nil, fmt.Errorf("%w: not an absolute URL (no scheme)", ErrRefusedURL)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: scheme %q is not http or https", ErrRefusedURL, clean(u.Scheme))
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: the URL has no host", ErrRefusedURL)
	}
	return u, nil
}

// warnAboutSite warns when nothing names who runs the page (an IP
// address, no registrable domain) and when it is plain http to another
// computer.
func (r *URLReport) warnAboutSite() {
	switch {
	case r.IP && !r.Loopback:
		r.warn(WarnIPLiteral, "The host is the IP address "+r.Host+", not a domain name: nothing names who runs it.")
	case r.IP:
		r.warn(WarnIPLiteral, "The host is the IP address "+r.Host+" (this computer), not a domain name.")
	}
	if r.Scheme == "http" && !r.Loopback {
		r.warn(WarnNotHTTPS, "The page is plain http, not https: what you type there can be read and changed on the way.")
	}
	if r.RegistrableDomain == "" && !r.IP && !r.Loopback {
		r.warn(WarnNoRegistrableDomain, "No registrable domain can be derived from "+r.Host+": nothing names who owns it.")
	}
}

// rebuild sets URL and UnicodeURL from the parts, so that what is shown
// is exactly what would be opened: ASCII host, everything else ASCII-only.
func (r *URLReport) rebuild(u *url.URL) {
	r.prefix = r.Scheme + "://"
	r.hostIn = r.ASCIIHost
	uniHost := r.Host
	if addr, err := netip.ParseAddr(r.ASCIIHost); err == nil && addr.Is6() {
		r.hostIn = "[" + r.ASCIIHost + "]"
		uniHost = r.hostIn
	}
	if r.Port != "" {
		r.suffix = ":" + r.Port
	}
	r.suffix += asciiOnly(u.EscapedPath())
	if u.ForceQuery || u.RawQuery != "" {
		r.suffix += "?" + asciiOnly(u.RawQuery)
	}
	if u.Fragment != "" {
		r.suffix += "#" + asciiOnly(u.EscapedFragment())
	}
	r.URL = r.prefix + r.hostIn + r.suffix
	r.UnicodeURL = r.prefix + uniHost + r.suffix
}

func (r *URLReport) warn(k WarningKind, msg string) {
	r.Warnings = append(r.Warnings, Warning{Kind: k, Message: msg})
}

// inspectHost fills the host fields and the host-name warnings.
func (r *URLReport) inspectHost(written string) error {
	if addr, err := netip.ParseAddr(written); err == nil {
		r.IP, r.Loopback = true, addr.Unmap().IsLoopback()
		r.Host, r.ASCIIHost = addr.String(), addr.String()
		return nil
	}
	ascii, err := hostProfile.ToASCII(written)
	if err != nil || ascii == "" || strings.ContainsAny(ascii, forbiddenHostChars) {
		return fmt.Errorf("%w: the host %q is not a valid domain name", ErrRefusedURL, clean(written))
	}
	ascii = strings.ToLower(ascii)
	// WHATWG URL: a host whose last label is a number is an IPv4 address,
	// in whatever base it is written (http://0x7f.1/ is 127.0.0.1).
	if endsInNumber(ascii) {
		return r.inspectIPv4(written, ascii)
	}
	uni, err := hostProfile.ToUnicode(ascii)
	if err != nil {
		return fmt.Errorf("%w: the host %q is not a valid domain name", ErrRefusedURL, clean(written))
	}
	r.Host, r.ASCIIHost = uni, ascii
	bare := strings.TrimSuffix(ascii, ".")
	r.Loopback = bare == "localhost" || strings.HasSuffix(bare, ".localhost")
	if !r.Loopback {
		r.PublicSuffix, _ = publicsuffix.PublicSuffix(bare)
		if d, err := publicsuffix.EffectiveTLDPlusOne(bare); err == nil {
			r.RegistrableDomain = d
			r.UnicodeRegistrableDomain, _ = hostProfile.ToUnicode(d)
		}
	}
	if lw := strings.ToLower(written); lw != ascii && lw != uni {
		r.warn(WarnNormalizedHost, fmt.Sprintf("The host is written as %q, which browsers read as %s.", clean(written), ascii))
	}
	if uni != ascii {
		r.warn(WarnIDN, fmt.Sprintf("The host is an internationalized domain name: %s is really %s (punycode).", clean(uni), ascii))
	}
	r.warnScripts(uni, ascii)
	return nil
}

// inspectIPv4 reads a host that browsers take for an IPv4 address.
func (r *URLReport) inspectIPv4(written, ascii string) error {
	addr, ok := parseWHATWGIPv4(ascii)
	if !ok {
		return fmt.Errorf("%w: the host %q is not a valid IPv4 address", ErrRefusedURL, clean(written))
	}
	r.IP, r.Loopback = true, addr.IsLoopback()
	r.Host, r.ASCIIHost = addr.String(), addr.String()
	if ascii != addr.String() {
		r.warn(WarnNormalizedHost, fmt.Sprintf("The host %q is an IP address written in an unusual form: browsers read it as %s.", clean(written), addr))
	}
	return nil
}

// warnScripts warns about labels that mix writing systems, and about
// labels in one other script that look like Latin letters.
func (r *URLReport) warnScripts(uni, ascii string) {
	var mixed, confusable []string
	for _, label := range strings.Split(uni, ".") {
		scripts := labelScripts(label)
		switch {
		case len(scripts) > 1 && !allowedMix(scripts):
			mixed = append(mixed, fmt.Sprintf("%q mixes %s", clean(label), strings.Join(scripts, " and ")))
		case len(scripts) == 1 && scripts[0] != "Latin" && looksLatin(label):
			confusable = append(confusable, fmt.Sprintf("%q is written in %s", clean(label), scripts[0]))
		}
	}
	if len(mixed) > 0 {
		r.warn(WarnMixedScript, fmt.Sprintf("Mixed writing systems in the host: %s; it may imitate %q but it is %s.",
			strings.Join(mixed, ", "), lookalike.Skeleton(uni), ascii))
	}
	if len(confusable) > 0 {
		r.warn(WarnConfusable, fmt.Sprintf("Look-alike letters in the host: %s; it may imitate %q but it is %s.",
			strings.Join(confusable, ", "), lookalike.Skeleton(uni), ascii))
	}
}

// WHATWG URL forbidden host code points that idna leaves alone when STD3
// rules are off.
const forbiddenHostChars = " #%/:<>?@[\\]^|"

func severity(k WarningKind) int {
	switch k {
	case WarnMixedScript, WarnConfusable:
		return 0
	case WarnNormalizedHost:
		return 2
	case WarnIDN:
		return 3
	case WarnCredential:
		return 1
	case WarnNotHTTPS:
		return 4
	}
	return 5
}

// labelScripts returns the scripts of the letters of label, sorted;
// Common and Inherited (digits, hyphen, combining marks) are ignored.
func labelScripts(label string) []string {
	var out []string
	for _, c := range label {
		if c < utf8.RuneSelf {
			if unicode.IsLetter(c) && !slices.Contains(out, "Latin") {
				out = append(out, "Latin")
			}
			continue
		}
		for _, name := range scriptNames {
			if unicode.Is(unicode.Scripts[name], c) {
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// scriptNames lists unicode.Scripts keys except Common and Inherited, the
// likeliest first.
var scriptNames = func() []string {
	first := []string{"Latin", "Cyrillic", "Greek", "Armenian", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew"}
	var rest []string
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && !slices.Contains(first, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(first, rest...)
}()

// allowedMix is UTS #39's "highly restrictive" rule: Latin may only be
// combined with the scripts of Japanese, Chinese or Korean writing.
func allowedMix(scripts []string) bool {
	for _, set := range [][]string{
		{"Han", "Hiragana", "Katakana", "Latin"},
		{"Bopomofo", "Han", "Latin"},
		{"Han", "Hangul", "Latin"},
	} {
		if !slices.ContainsFunc(scripts, func(s string) bool { return !slices.Contains(set, s) }) {
			return true
		}
	}
	return false
}

// looksLatin reports whether every letter of label has a Latin look-alike.
func looksLatin(label string) bool {
	letters := 0
	for _, c := range label {
		if unicode.IsLetter(c) {
			letters++
			if _, ok := lookalike.Latin(c); !ok {
				return false
			}
		}
	}
	return letters > 0
}

// endsInNumber is the WHATWG URL "ends in a number" test: the last label
// (ignoring one trailing dot) is decimal digits or 0x-prefixed hex.
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	if labels[len(labels)-1] == "" && len(labels) > 1 {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return false
}

// parseWHATWGIPv4 parses host as browsers do: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last filling the remaining
// bytes.
func parseWHATWGIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		if p == "" {
			if base == 10 {
				return netip.Addr{}, false
			}
			p = "0" // "0x" alone is zero
		}
		n, err := strconv.ParseUint(p, base, 64)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// hasInvisible reports characters that render as nothing or reorder text
// (textclass.Hidden: format characters such as zero-width and bidi
// controls, Hangul fillers, the blank Braille pattern) and non-ASCII
// spaces.
func hasInvisible(s string) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf && (textclass.Hidden(c) || unicode.IsSpace(c) || unicode.Is(unicode.Zs, c)) {
			return true
		}
	}
	return false
}

// asciiOnly percent-encodes every byte outside printable ASCII, so a URL
// shown on a terminal cannot hide or reorder characters.
func asciiOnly(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
