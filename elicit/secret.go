package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/mcp-elicit/elicit/internal/lookalike"
	"github.com/mcp-elicit/elicit/internal/textclass"
)

// secretTerms finds a secret word in a reading (secretReadings); neutral
// marks the phrases read as not secret first. The package documentation
// describes the guard and what it cannot catch.
var (
	secretTerms = regexp.MustCompile(`(?:^| )(` + foldedAlternation(secretWordTerms) + `)(?: |$)|(` + foldedAlternation(secretPartTerms) + `)`)
	neutral     = regexp.MustCompile(`(?:^| )(?:` + foldedAlternation(neutralPhrases) + `)(?: |$)`)
)

func foldedAlternation(terms []string) string {
	folded := make([]string, len(terms))
	for i, t := range terms {
		// Inner groups do not capture: LooksSecret reads the outer two.
		folded[i] = strings.ReplaceAll(fold(t), "(", "(?:")
	}
	return strings.Join(folded, "|")
}

// fold lower-cases s, writes ß as ss and removes the diacritics of Latin,
// Greek and Cyrillic letters (not the marks of other scripts, such as the
// Japanese voicing marks, which change the letter).
func fold(s string) string {
	s = strings.ReplaceAll(strings.ToLower(s), "ß", "ss")
	d := norm.NFD.String(s)
	var b strings.Builder
	strip := false
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			if strip {
				continue
			}
		} else {
			strip = unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic)
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

// Leetspeak variants: '1' stands for i or l.
const (
	plainText = iota
	leetI
	leetL
)

var leetCommon = map[rune]rune{'0': 'o', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's'}

// secretReadings returns the normalised readings of text that the terms
// are looked for in: words separated by single spaces.
func secretReadings(text string) []string {
	text = strings.Map(func(r rune) rune {
		if textclass.Hidden(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, norm.NFKC.String(text))
	tokens := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) && r != '@' && r != '$'
	})
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, variant := range []int{plainText, leetI, leetL} {
		var words []string
		for _, tok := range tokens {
			if variant != plainText && hasLetter(tok) {
				tok = unleet(tok, variant)
			}
			words = append(words, splitWord(tok)...)
		}
		s := neutral.ReplaceAllString(strings.Join(words, " "), " ~ ")
		add(s)
		add(joinSpelled(s))
		add(lookalike.Skeleton(s))
	}
	return out
}

func hasLetter(s string) bool { return strings.IndexFunc(s, unicode.IsLetter) >= 0 }

// unleet reads the leetspeak of one token, in upper case when the token
// has no lower-case letter ("P4SSW0RD"), so camelCase splitting still
// sees one word.
func unleet(s string, variant int) string {
	upper := strings.IndexFunc(s, unicode.IsLower) < 0
	return strings.Map(func(r rune) rune {
		l, ok := leetCommon[r]
		switch {
		case r == '1' && variant == leetI:
			l, ok = 'i', true
		case r == '1':
			l, ok = 'l', true
		}
		if !ok {
			return r
		}
		if upper {
			return unicode.ToUpper(l)
		}
		return l
	}, s)
}

// splitWord splits one token at camelCase and letter–digit boundaries and
// at '@' and '$', and folds each word.
func splitWord(tok string) []string {
	var words []string
	rs := []rune(tok)
	start := 0
	flush := func(end int) {
		if end > start {
			words = append(words, fold(string(rs[start:end])))
		}
		start = end
	}
	for i, r := range rs {
		if r == '@' || r == '$' {
			flush(i)
			start = i + 1
			continue
		}
		if i == start {
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsDigit(r) != unicode.IsDigit(prev) && !unicode.Is(unicode.Mn, r):
			flush(i)
		case unicode.IsUpper(r) && (unicode.IsLower(prev) ||
			(unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]))):
			flush(i)
		}
	}
	flush(len(rs))
	return words
}

// joinSpelled joins runs of three or more one-letter words: "p a s s w o
// r d" → "password".
func joinSpelled(s string) string {
	var out, run []string
	end := func() {
		if len(run) >= 3 {
			out = append(out, strings.Join(run, ""))
		} else {
			out = append(out, run...)
		}
		run = run[:0]
	}
	for _, w := range strings.Split(s, " ") {
		if utf8.RuneCountInString(w) == 1 {
			run = append(run, w)
			continue
		}
		end()
		out = append(out, w)
	}
	end()
	return strings.Join(out, " ")
}

// LooksSecret reports whether text (a property's name, title or
// description) asks for a password, secret, token, API or private key,
// PIN, card number or security code, IBAN, one-time code, seed or
// recovery phrase or credentials, in English, German, French, Spanish,
// Italian, Portuguese, Dutch, Russian, Chinese, Japanese or Korean, and
// the word that did, normalised (lower case, without diacritics, e.g.
// "api key", "mot de passe", "パスワード"). The normalisation and its limits
// are described in the package documentation. FormSchema and ParseSchema
// refuse such properties in form mode (ELI-S-01); package consent warns
// the user.
func LooksSecret(text string) (word string, ok bool) {
	for _, r := range secretReadings(text) {
		if m := secretTerms.FindStringSubmatch(r); m != nil {
			return m[1] + m[2], true
		}
	}
	return "", false
}

// SecretHint says why a form property looks like it asks for a secret.
type SecretHint struct {
	// Where is the part of the property that gave it away: "name",
	// "title", "description", "writeOnly", "format", "default", "examples"
	// or "pattern".
	Where string
	// Match is what was found there: the word (as LooksSecret returns it)
	// for name, title and description; "true" for writeOnly; the format;
	// for values, the kind of value, such as "a card number" (never the
	// value itself).
	Match string
}

// String says it in words, for an error message: `its name mentions
// "password"`, `it is marked writeOnly`, `its format is "password"`, `its
// default looks like a card number`.
func (h SecretHint) String() string {
	switch h.Where {
	case "name", "title", "description":
		return fmt.Sprintf("its %s mentions %q", h.Where, h.Match)
	case "writeOnly":
		return "it is marked writeOnly"
	case "format":
		return fmt.Sprintf("its format is %q", h.Match)
	}
	return fmt.Sprintf("its %s looks like %s", h.Where, h.Match)
}

// LooksSecretProperty reports whether one property of a requestedSchema,
// given by its name and its JSON, looks like it asks for a secret
// (ELI-S-01), and why: LooksSecret on its name, title and description;
// writeOnly: true; format "password"; a default, examples or pattern that
// look like a card number, an IBAN, a private key, a JWT or an API key.
// Malformed JSON is read as far as it goes; nothing panics.
func LooksSecretProperty(name string, prop json.RawMessage) (SecretHint, bool) {
	if w, ok := LooksSecret(name); ok {
		return SecretHint{"name", w}, true
	}
	var kw map[string]json.RawMessage
	_ = json.Unmarshal(prop, &kw)
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(kw[k], &s)
		return s
	}
	for _, k := range []string{"title", "description"} {
		if w, ok := LooksSecret(str(k)); ok {
			return SecretHint{k, w}, true
		}
	}
	var writeOnly bool
	if json.Unmarshal(kw["writeOnly"], &writeOnly) == nil && writeOnly {
		return SecretHint{"writeOnly", "true"}, true
	}
	if f := str("format"); strings.EqualFold(f, "password") {
		return SecretHint{"format", f}, true
	}
	for _, k := range []string{"default", "examples"} {
		for _, v := range scalarStrings(kw[k]) {
			if what, ok := secretValue(v); ok {
				return SecretHint{k, what}, true
			}
		}
	}
	if p := str("pattern"); p != "" {
		if what, ok := secretValue(p); ok {
			return SecretHint{"pattern", what}, true
		}
		if n := minDigits(p); n >= 13 && n <= 19 {
			return SecretHint{"pattern", "a card number"}, true
		}
	}
	return SecretHint{}, false
}

// scalarStrings returns the strings and numbers (as written) in raw: the
// value itself, or the members of an array.
func scalarStrings(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	var out []string
	for _, x := range list {
		switch s := x.(type) {
		case string:
			out = append(out, s)
		case json.Number:
			out = append(out, s.String())
		}
	}
	return out
}

var (
	jwtValue = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*$`)
	apiKey   = regexp.MustCompile(`^(?:[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})$`)
	ibanForm = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$`)
)

// secretValue reports whether v, a value a form offers, is a secret
// itself, and of which kind.
func secretValue(v string) (string, bool) {
	t := strings.TrimSpace(v)
	compact := strings.NewReplacer(" ", "", "-", "").Replace(t)
	switch {
	case luhnCard(compact):
		return "a card number", true
	case validIBAN(strings.ToUpper(compact)):
		return "an IBAN", true
	case strings.Contains(t, "-----BEGIN") && strings.Contains(t, "PRIVATE KEY"):
		return "a private key", true
	case jwtValue.MatchString(t):
		return "a token (JWT)", true
	case apiKey.MatchString(t):
		return "an API key", true
	}
	return "", false
}

// luhnCard reports whether s is 13 to 19 digits, starting as payment card
// numbers do (2 to 6), that pass the Luhn check.
func luhnCard(s string) bool {
	if len(s) < 13 || len(s) > 19 || s[0] < '2' || s[0] > '6' {
		return false
	}
	sum := 0
	for i := 0; i < len(s); i++ {
		c := s[len(s)-1-i]
		if c < '0' || c > '9' {
			return false
		}
		d := int(c - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// validIBAN reports whether s (upper case, no spaces) is an IBAN whose
// check digits are right (ISO 13616 mod 97).
func validIBAN(s string) bool {
	if !ibanForm.MatchString(s) {
		return false
	}
	var digits strings.Builder
	for _, c := range s[4:] + s[:4] {
		if c >= 'A' {
			digits.WriteString(strconv.Itoa(int(c-'A') + 10))
		} else {
			digits.WriteRune(c)
		}
	}
	n, ok := new(big.Int).SetString(digits.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// minDigits is the least number of digits a string matching pattern (a
// regular expression) must hold, counting \d, [0-9] and literal digits
// with their quantifiers, groups included; other parts count nothing.
// Alternatives are not told apart, so it is an estimate, capped at 1000.
func minDigits(pattern string) int {
	stack := []int{0}
	i := 0
	// quantifier reads a quantifier at i and returns its minimum (1 when
	// there is none).
	quantifier := func() int {
		if i >= len(pattern) {
			return 1
		}
		switch pattern[i] {
		case '?', '*':
			i++
			return 0
		case '+':
			i++
			return 1
		case '{':
			end := strings.IndexByte(pattern[i:], '}')
			if end < 0 {
				return 1
			}
			lo, _, _ := strings.Cut(pattern[i+1:i+end], ",")
			i += end + 1
			n, err := strconv.Atoi(lo)
			if err != nil || n < 0 {
				return 1
			}
			return min(n, 1000)
		}
		return 1
	}
	add := func(unit int) {
		top := &stack[len(stack)-1]
		*top = min(*top+unit*quantifier(), 1000)
	}
	for i < len(pattern) {
		c := pattern[i]
		switch {
		case c == '(':
			stack = append(stack, 0)
			i++
		case c == ')':
			i++
			if len(stack) > 1 {
				n := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				add(n)
			}
		case strings.HasPrefix(pattern[i:], `\d`):
			i += 2
			add(1)
		case strings.HasPrefix(pattern[i:], "[0-9]"):
			i += 5
			add(1)
		case c == '\\':
			i += 2
			add(0)
		case c == '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return stack[0]
			}
			i += end + 2
			add(0)
		case c >= '0' && c <= '9':
			i++
			add(1)
		default:
			i++
		}
	}
	return stack[0]
}

func checkNotSecret(name string, raw json.RawMessage) error {
	if h, ok := LooksSecretProperty(name, raw); ok {
		return fmt.Errorf("%w: %w: property %q: %s; ask for it in URL mode on the server's own page (ELI-S-01, ELI-S-02)",
			ErrBadSchema, ErrSecretField, name, h)
	}
	return nil
}

// URLSecret is one part of a URL that looks like a credential: a query
// parameter named like one, or a JSON Web Token.
type URLSecret struct {
	// Param is the query parameter's name as decoded; "" for a JWT.
	Param string
	// Word is what matched: the term LooksSecret found in the name
	// ("token", "password"), the name itself for "code" and "sig", or
	// "JWT".
	Word string
}

// jwtLike matches a JSON Web Token: three base64url segments, the first a
// JSON object ("eyJ" is `{"`).
var jwtLike = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)

// SecretsInURL lists what in the URL raw looks like a credential, which an
// elicitation URL must not carry (SEC-U-S-01, SEC-U-S-02): each query
// parameter whose name LooksSecret or is "code" or "sig" (an OAuth
// authorization code, a signature), in the order of their names, then a
// JWT anywhere in the URL. Values are never returned. nil when there is
// none or raw does not parse. A server checks its own links with it
// (elicit check's url-safe case); package consent warns the user.
func SecretsInURL(raw string) []URLSecret {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	q := u.Query()
	names := slices.Sorted(maps.Keys(q))
	var out []URLSecret
	for _, name := range names {
		if w, ok := LooksSecret(name); ok {
			out = append(out, URLSecret{Param: name, Word: w})
		} else if strings.EqualFold(name, "code") || strings.EqualFold(name, "sig") {
			out = append(out, URLSecret{Param: name, Word: name})
		}
	}
	if jwtLike.MatchString(raw) {
		out = append(out, URLSecret{Word: "JWT"})
	}
	return out
}
