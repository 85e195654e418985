// Package elicit builds and checks elicitation requests and reads their
// answers (MCP 2026-07-28 client/elicitation.mdx): URL-mode requests with
// safety checks, flat form schemas, validation of form answers against the
// schema that was asked, and typed outcomes.
package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
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
	// Content is the validated form content of an accepted form answer.
	Content map[string]any
	// Problem says why an answer is Invalid (safe to log; holds no values).
	Problem string
}

// ErrUnsafeURL is returned by CheckURL for a URL that must not be sent.
var ErrUnsafeURL = errors.New("elicit: unsafe elicitation URL")

// CheckURL applies the server-side rules for a URL-mode elicitation URL
// (ELI-U-S-01, SEC-U-S-01, SEC-U-S-02, SEC-U-S-04): it must be an absolute
// URL with a host, https (http only for loopback hosts, for development),
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

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// secretName matches property names and titles that look like secrets,
// which form mode must never ask for (ELI-S-01).
var secretName = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|api[ _-]?key|access[ _-]?key|token|credential|private[ _-]?key|card[ _-]?(number|no)|credit[ _-]?card|cvv|cvc|iban|pin\b|ssn)`)

// ErrBadSchema is returned by CheckSchema for a schema form mode may not use.
var ErrBadSchema = errors.New("elicit: invalid form schema")

// Schema is a parsed flat form schema (ELI-S-06).
type Schema struct {
	Properties map[string]*Property
	Order      []string
	Required   []string
}

// Property is one primitive property of a form schema.
type Property struct {
	Type      string // string, number, integer, boolean, array
	Format    string
	Enum      []string // string enums (enum or oneOf const) and multi-select items
	MinLength *int
	MaxLength *int
	Minimum   *float64
	Maximum   *float64
	MinItems  *int
	MaxItems  *int
	Title     string
}

type rawProp struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	Enum        []string        `json:"enum"`
	OneOf       []constTitle    `json:"oneOf"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Items       *rawItems       `json:"items"`
	Properties  json.RawMessage `json:"properties"`
	Extra       map[string]any  `json:"-"`
}

type constTitle struct {
	Const *string `json:"const"`
	Title string  `json:"title"`
}

type rawItems struct {
	Type  string       `json:"type"`
	Enum  []string     `json:"enum"`
	AnyOf []constTitle `json:"anyOf"`
}

// ParseSchema parses and checks a form-mode requestedSchema: an object whose
// properties are primitives (string with optional format email|uri|date|
// date-time, number, integer, boolean, single- or multi-select string
// enums), no nesting (ELI-S-06), required names that exist, and no property
// that looks like a secret (ELI-S-01: secrets go through URL mode).
func ParseSchema(raw json.RawMessage) (*Schema, error) {
	var top struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	if top.Type != "object" {
		return nil, fmt.Errorf("%w: type must be \"object\"", ErrBadSchema)
	}
	props := map[string]json.RawMessage{}
	if len(top.Properties) == 0 {
		return nil, fmt.Errorf("%w: properties are required", ErrBadSchema)
	}
	if err := json.Unmarshal(top.Properties, &props); err != nil {
		return nil, fmt.Errorf("%w: properties: %v", ErrBadSchema, err)
	}
	s := &Schema{Properties: make(map[string]*Property, len(props)), Required: top.Required}
	order, _ := objectKeys(top.Properties)
	s.Order = order
	for _, name := range order {
		var rp rawProp
		if err := json.Unmarshal(props[name], &rp); err != nil {
			return nil, fmt.Errorf("%w: property %q: %v", ErrBadSchema, name, err)
		}
		if secretName.MatchString(name) || secretName.MatchString(rp.Title) {
			return nil, fmt.Errorf("%w: property %q looks like a secret; use URL mode (ELI-S-01)", ErrBadSchema, name)
		}
		p := &Property{Type: rp.Type, Format: rp.Format, MinLength: rp.MinLength, MaxLength: rp.MaxLength,
			Minimum: rp.Minimum, Maximum: rp.Maximum, MinItems: rp.MinItems, MaxItems: rp.MaxItems, Title: rp.Title}
		if rp.Properties != nil {
			return nil, fmt.Errorf("%w: property %q: nested objects are not allowed", ErrBadSchema, name)
		}
		switch rp.Type {
		case "string":
			switch rp.Format {
			case "", "email", "uri", "date", "date-time":
			default:
				return nil, fmt.Errorf("%w: property %q: format %q", ErrBadSchema, name, rp.Format)
			}
			p.Enum = rp.Enum
			for _, o := range rp.OneOf {
				if o.Const == nil {
					return nil, fmt.Errorf("%w: property %q: oneOf entries need const", ErrBadSchema, name)
				}
				p.Enum = append(p.Enum, *o.Const)
			}
		case "number", "integer", "boolean":
		case "array":
			if rp.Items == nil {
				return nil, fmt.Errorf("%w: property %q: array needs items", ErrBadSchema, name)
			}
			p.Enum = rp.Items.Enum
			for _, o := range rp.Items.AnyOf {
				if o.Const == nil {
					return nil, fmt.Errorf("%w: property %q: anyOf entries need const", ErrBadSchema, name)
				}
				p.Enum = append(p.Enum, *o.Const)
			}
			if len(p.Enum) == 0 {
				return nil, fmt.Errorf("%w: property %q: arrays must be multi-select string enums", ErrBadSchema, name)
			}
		default:
			return nil, fmt.Errorf("%w: property %q: type %q is not a primitive", ErrBadSchema, name, rp.Type)
		}
		s.Properties[name] = p
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return nil, fmt.Errorf("%w: required %q is not a property", ErrBadSchema, r)
		}
	}
	return s, nil
}

func objectKeys(obj json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

var emailRe = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// Validate checks form content against the schema (ELI-S-07): every
// required property present, no unknown property, each value of its type
// and within its limits. The error names the property, never its value.
func (s *Schema) Validate(content map[string]any) error {
	for _, r := range s.Required {
		if _, ok := content[r]; !ok {
			return fmt.Errorf("missing required %q", r)
		}
	}
	for name, v := range content {
		p, ok := s.Properties[name]
		if !ok {
			return fmt.Errorf("unknown property %q", name)
		}
		if err := p.check(v); err != nil {
			return fmt.Errorf("property %q: %v", name, err)
		}
	}
	return nil
}

func (p *Property) check(v any) error {
	switch p.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return errors.New("not a string")
		}
		n := len([]rune(s))
		if p.MinLength != nil && n < *p.MinLength {
			return errors.New("too short")
		}
		if p.MaxLength != nil && n > *p.MaxLength {
			return errors.New("too long")
		}
		if len(p.Enum) > 0 && !contains(p.Enum, s) {
			return errors.New("not one of the choices")
		}
		switch p.Format {
		case "email":
			if !emailRe.MatchString(s) {
				return errors.New("not an email address")
			}
		case "uri":
			if u, err := url.Parse(s); err != nil || !u.IsAbs() {
				return errors.New("not an absolute URI")
			}
		case "date":
			if _, err := time.Parse(time.DateOnly, s); err != nil {
				return errors.New("not a date (YYYY-MM-DD)")
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				return errors.New("not an RFC 3339 date-time")
			}
		}
	case "number", "integer":
		f, ok := toFloat(v)
		if !ok {
			return errors.New("not a number")
		}
		if p.Type == "integer" && f != math.Trunc(f) {
			return errors.New("not an integer")
		}
		if p.Minimum != nil && f < *p.Minimum {
			return errors.New("below minimum")
		}
		if p.Maximum != nil && f > *p.Maximum {
			return errors.New("above maximum")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return errors.New("not a boolean")
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return errors.New("not an array")
		}
		if p.MinItems != nil && len(items) < *p.MinItems {
			return errors.New("too few choices")
		}
		if p.MaxItems != nil && len(items) > *p.MaxItems {
			return errors.New("too many choices")
		}
		seen := map[string]bool{}
		for _, it := range items {
			s, ok := it.(string)
			if !ok || !contains(p.Enum, s) {
				return errors.New("not one of the choices")
			}
			if seen[s] {
				return errors.New("repeated choice")
			}
			seen[s] = true
		}
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// DecodeAnswer reads one raw InputResponses entry as an ElicitResult. For a
// form request (schema non-nil), accepted content is validated against the
// schema; for a URL request, accept carries no content and any content sent
// is ignored. A malformed entry (not an object, unknown action) is Invalid.
func DecodeAnswer(raw json.RawMessage, schema *Schema) Answer {
	if len(raw) == 0 || string(raw) == "null" {
		return Answer{Outcome: Missing}
	}
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Answer{Outcome: Invalid, Problem: "answer is not an ElicitResult object"}
	}
	switch r.Action {
	case "accept":
		if schema == nil {
			return Answer{Outcome: Accepted}
		}
		if r.Content == nil {
			r.Content = map[string]any{}
		}
		if err := schema.Validate(r.Content); err != nil {
			return Answer{Outcome: Invalid, Problem: err.Error()}
		}
		return Answer{Outcome: Accepted, Content: r.Content}
	case "decline":
		return Answer{Outcome: Declined}
	case "cancel":
		return Answer{Outcome: Cancelled}
	}
	return Answer{Outcome: Invalid, Problem: "unknown action"}
}
