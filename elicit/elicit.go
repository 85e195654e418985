// Package elicit builds the questions an MCP 2026-07-28 server asks the
// user through elicitation, and reads the answers
// (client/elicitation.mdx).
//
// # Typed forms
//
// FormFor builds a form-mode requestedSchema from a struct type, one
// property per field, and Decode reads an answer as that type, with its
// outcome:
//
//	type Options struct {
//		Detail string `json:"detail" title:"Detail level" enum:"summary|detailed" enumTitles:"Summary|Detailed"`
//		Label  string `json:"label" title:"Label" minLength:"1" maxLength:"80"`
//	}
//
//	// In an mcpserver handler:
//	switch a := elicit.Decode[Options](req.Elicitation("options")); a.Outcome {
//	case elicit.Accepted:
//		// use a.Value.Detail and a.Value.Label
//	case elicit.Declined, elicit.Cancelled:
//		// the user said no, or dismissed the question: distinct outcomes
//	default:
//		return mcpserver.Ask().ElicitFormSchema("options", "Choose the report options.", elicit.MustFormFor[Options]()), nil, nil
//	}
//
// Form mode carries flat primitives only (ELI-S-06) and never secrets
// (ELI-S-01): FormFor refuses nested structs, maps, lists of objects and
// fields that look like passwords, API keys, tokens or card data when the
// form is built. Secrets go through URL mode, on the server's own page
// (ELI-S-02).
//
// # Building blocks
//
//   - FormSchema with String, Number, Integer, Boolean, Enum, TitledEnum,
//     MultiEnum and TitledMultiEnum builds a form field by field, and
//     ParseSchema checks a raw requestedSchema, with the same rules;
//   - Schema.ValidateContent checks an accepted answer against the schema
//     that was asked (ELI-S-07), dropping keys the schema does not name;
//   - DecodeAnswer reads one raw answer as a typed Answer: accepted,
//     declined, cancelled, missing or invalid (ELI-S-08);
//   - CheckURL applies the rules for a URL-mode elicitation URL.
//
// # The secret guard
//
// Form mode must not ask for passwords, API keys, tokens, payment data or
// other secrets (ELI-S-01). LooksSecret reads a property's name, title or
// description for them, in English, German, French, Spanish, Italian,
// Portuguese, Dutch, Russian, Chinese, Japanese and Korean, after
// normalising the text: Unicode NFKC (full-width and circled letters),
// format characters such as zero-width spaces dropped, words split at
// snake_case, kebab-case, dots, camelCase and letter–digit boundaries,
// letters spelt one by one joined, lower case with ß as ss and the
// diacritics of Latin, Greek and Cyrillic letters removed, leetspeak read
// inside words (0→o, 1→i or l, 3→e, 4→a, 5→s, 7→t, @→a, $→s), and
// Cyrillic or Greek look-alikes inside Latin words read as Latin. Model
// tokens ("max tokens", "token count", "token budget") are not
// credentials. LooksSecretProperty adds what the schema says besides
// words: writeOnly: true, format "password", and a default, examples or
// pattern that look like a card number (Luhn-valid, 13 to 19 digits), an
// IBAN (mod 97), a PEM private key, a JWT or a well-known API key format.
// FormSchema and ParseSchema refuse such properties (ErrSecretField);
// package consent warns the user and package check fails the server.
//
// What it cannot catch: a secret named in words it does not know (other
// languages, slang, misspellings beyond leetspeak, "the three digits on
// the back"), a neutral name ("code", "value", "field1"), a secret split
// over several fields or asked for in the elicitation message instead of
// the schema, and homoglyphs outside its small look-alike table. It guards
// against mistakes and careless servers, not against a server that means
// to phish: the user's judgement, and URL mode for real secrets, remain
// the protection. It errs towards refusing: a "PIN" that pins a note is
// refused too (Field.DeclareNotSecret overrides it in FormSchema).
// Passport and national ID numbers are personal data, not secrets, and are
// not matched. docs/secret-guard.md has the details.
//
// # Public surface
//
// Building forms: FormFor, MustFormFor, FormSchema and Field with its
// constructors (String, Number, Integer, Boolean, Enum, TitledEnum,
// MultiEnum, TitledMultiEnum, Choice, Format). Reading schemas: Schema,
// Property, ParseSchema (a server's own questions, secret guard on),
// ParseSchemaForAnswers (a question already asked). Reading answers:
// DecodeAnswer, Answer, Outcome, Decode and AnswerOf, ValidationError,
// Problem. Safety checks: CheckURL, LooksSecret, LooksSecretProperty,
// SecretHint, and the errors ErrBadSchema, ErrSecretField, ErrUnsafeURL.
package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"net"
	"net/url"
	"strings"
)

// Outcome is the typed result of one elicitation as the server reads it
// on the retry. accept, decline and cancel are distinct (ELI-S-08).
type Outcome int

// Outcomes.
const (
	// Missing: no answer under the key (or the retry was not bound to the
	// request that asked). The server should ask again (MRTR-S-14).
	Missing Outcome = iota
	// Accepted: the user submitted (form, with content) or consented (URL:
	// consent only, not completion).
	Accepted
	// Declined: the user explicitly refused.
	Declined
	// Cancelled: the user dismissed the request without choosing.
	Cancelled
	// Invalid: an answer was present but malformed or did not fit the schema.
	Invalid
)

// String returns the outcome's name: "missing", "accepted", "declined",
// "cancelled" or "invalid" (also the metric and log label).
func (o Outcome) String() string {
	switch o {
	case Accepted:
		return "accepted"
	case Declined:
		return "declined"
	case Cancelled:
		return "cancelled"
	case Invalid:
		return "invalid"
	}
	return "missing"
}

// Answer is one elicitation answer.
type Answer struct {
	Outcome Outcome
	// Content is the validated form content of an accepted form answer:
	// only the schema's properties, with string, float64, bool or []string
	// values. Nil otherwise.
	Content map[string]any
	// Problem says why an answer is Invalid, in words fit for the user
	// (it names properties and rules, never values, so it is also safe to
	// log). Empty otherwise.
	Problem string
}

// ErrUnsafeURL is returned by CheckURL for a URL that must not be sent.
var ErrUnsafeURL = errors.New("elicit: unsafe elicitation URL")

// CheckURL applies the server-side rules for a URL-mode elicitation URL
// (ELI-U-S-01, SEC-U-S-01, SEC-U-S-02, SEC-U-S-04): it must be an absolute
// URL with a host, https (http only for loopback hosts — localhost,
// *.localhost, 127.0.0.0/8, ::1 — for development),
// and carry no user info or fragment. It cannot know whether the query holds
// personal data; callers put only an opaque flow id there.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%w: not an absolute URL", ErrUnsafeURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: user info in URL", ErrUnsafeURL)
	}
	if u.Fragment != "" {
		return fmt.Errorf("%w: fragment in URL", ErrUnsafeURL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return fmt.Errorf("%w: http is only allowed for loopback hosts", ErrUnsafeURL)
		}
	default:
		return fmt.Errorf("%w: scheme %q", ErrUnsafeURL, u.Scheme)
	}
	return nil
}

// isLoopbackHost reports hosts browsers resolve to this computer and
// treat as a secure context: localhost and names under .localhost (RFC
// 6761), and loopback IP addresses.
func isLoopbackHost(h string) bool {
	if h = strings.ToLower(strings.TrimSuffix(h, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// DecodeAnswer reads one raw InputResponses entry as an ElicitResult
// (docs/protocol.md §Answers). For a form request (schema non-nil) an accepted answer's
// content is validated with Schema.ValidateContent (ELI-S-07): Content is
// the clean copy, or the answer is Invalid with Problem saying what was
// wrong. For a URL request (schema nil) accept carries no content, and any
// content sent is ignored. Decline and cancel are never validated: their
// content, if any, is ignored (ELI-RA-01). An entry that is not an object
// or has no known action is Invalid; null or absent is Missing.
func DecodeAnswer(raw json.RawMessage, schema *Schema) Answer {
	if len(raw) == 0 || string(raw) == "null" {
		return Answer{Outcome: Missing}
	}
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	// json v2: member names match exactly and duplicates are refused, so
	// {"action":"accept","Action":"decline"} cannot mean two things.
	if err := jsonv2.Unmarshal(raw, &r); err != nil {
		return Answer{Outcome: Invalid, Problem: problemNotResult}
	}
	switch r.Action {
	case "accept":
		if schema == nil {
			return Answer{Outcome: Accepted}
		}
		var content map[string]any
		if len(r.Content) > 0 && string(r.Content) != "null" {
			if err := jsonv2.Unmarshal(r.Content, &content); err != nil {
				return Answer{Outcome: Invalid, Problem: problemNotObject}
			}
		}
		clean, err := schema.ValidateContent(content)
		if err != nil {
			return Answer{Outcome: Invalid, Problem: err.Error()}
		}
		return Answer{Outcome: Accepted, Content: clean}
	case "decline":
		return Answer{Outcome: Declined}
	case "cancel":
		return Answer{Outcome: Cancelled}
	}
	return Answer{Outcome: Invalid, Problem: problemBadAction}
}
