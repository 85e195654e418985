package elicit

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// secretWords matches, in text normalised by words (lower case, words
// separated by single spaces), the things form mode must never ask for
// (ELI-S-01): passwords, API keys, tokens, secrets, credentials and card
// data. Word boundaries keep "passenger" or "secretary" out.
var secretWords = regexp.MustCompile(`\b(` +
	`pass ?words?|passwd|pass ?phrases?|pass ?codes?|pwd|` +
	`secrets?|` +
	`api ?keys?|access ?keys?|private ?keys?|secret ?keys?|signing ?keys?|` +
	`tokens?|bearer|credentials?|otp|` +
	`card ?(numbers?|no|data|details)|credit ?cards?|debit ?cards?|cvv2?|cvc2?|security ?codes?|` +
	`iban|pin|ssn|social ?security` +
	`)\b`)

// words rewrites s as lower-case words separated by single spaces,
// splitting snake_case, kebab-case, dotted names and camelCase
// ("clientSecret", "APIKey", "card_number" → "client secret", "api key",
// "card number").
func words(s string) string {
	var b strings.Builder
	rs := []rune(s)
	space := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), " ") {
			b.WriteByte(' ')
		}
	}
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && i > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					space()
				}
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			space()
		}
	}
	return strings.TrimSpace(b.String())
}

// LooksSecret reports whether text (a property name, title or
// description) mentions a password, API key, token, secret, credential or
// card data, and which word did. FormSchema and ParseSchema refuse such
// properties in form mode (ELI-S-01).
func LooksSecret(text string) (word string, ok bool) {
	m := secretWords.FindString(words(text))
	return m, m != ""
}

func checkNotSecret(name string, p *Property) error {
	for _, f := range []struct{ where, text string }{{"name", name}, {"title", p.Title}, {"description", p.Description}} {
		if w, ok := LooksSecret(f.text); ok {
			return fmt.Errorf("%w: %w: property %q: its %s mentions %q; ask for it in URL mode on the server's own page (ELI-S-01, ELI-S-02)",
				ErrBadSchema, ErrSecretField, name, f.where, w)
		}
	}
	return nil
}
