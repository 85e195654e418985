package check

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
)

// answerKind is how the checker answers an elicitation.
type answerKind int

const (
	answerGood    answerKind = iota // accept, with valid content in form mode
	answerDecline                   // decline
	answerCancel                    // cancel
)

func (k answerKind) String() string {
	switch k {
	case answerDecline:
		return "decline"
	case answerCancel:
		return "cancel"
	}
	return "accept"
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are marshalled here
	}
	return b
}

// answer returns the answer of kind k to r. Sampling and roots requests,
// which cannot be declined, always get a plain answer.
func answer(r inputReq, k answerKind) json.RawMessage {
	switch r.method {
	case mcp.MethodSamplingCreate:
		return mustJSON(map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "ok"}, "model": "elicit-check"})
	case mcp.MethodRootsList:
		return json.RawMessage(`{"roots":[]}`)
	}
	switch k {
	case answerDecline:
		return json.RawMessage(`{"action":"decline"}`)
	case answerCancel:
		return json.RawMessage(`{"action":"cancel"}`)
	}
	if r.mode() == mcp.ElicitationModeURL || r.elicit == nil {
		return json.RawMessage(`{"action":"accept"}`)
	}
	s, err := elicit.ParseSchemaForAnswers(r.elicit.RequestedSchema)
	if err != nil {
		return json.RawMessage(`{"action":"accept","content":{}}`)
	}
	return acceptWith(validContent(s))
}

func acceptWith(content map[string]any) json.RawMessage {
	return mustJSON(map[string]any{"action": "accept", "content": content})
}

// answers answers every request of o with kind k.
func answers(o *outcome, k answerKind) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(o.requests))
	for key, r := range o.requests {
		m[key] = answer(r, k)
	}
	return m
}

// validContent fills every property of s with a value that fits it.
func validContent(s *elicit.Schema) map[string]any {
	c := make(map[string]any, len(s.Order))
	for _, name := range s.Order {
		c[name] = validValue(s.Properties[name])
	}
	return c
}

func validValue(p *elicit.Property) any {
	if p.Default != nil {
		return p.Default
	}
	switch p.Type {
	case "boolean":
		return true
	case "number", "integer":
		v := 1.0
		switch {
		case p.Minimum != nil:
			v = math.Ceil(*p.Minimum)
		case p.Maximum != nil:
			v = math.Floor(*p.Maximum)
		}
		return v
	case "array":
		n := 1
		if p.MinItems != nil && *p.MinItems > n {
			n = *p.MinItems
		}
		return append([]string(nil), p.Enum[:min(n, len(p.Enum))]...)
	}
	if len(p.Enum) > 0 {
		return p.Enum[0]
	}
	switch p.Format {
	case "email":
		return "check@example.com"
	case "uri":
		return "https://example.com/"
	case "date":
		return "2026-01-02"
	case "date-time":
		return "2026-01-02T03:04:05Z"
	}
	v := "check"
	if p.MinLength != nil && len(v) < *p.MinLength {
		v += strings.Repeat("x", *p.MinLength-len(v))
	}
	if p.MaxLength != nil && len(v) > *p.MaxLength {
		v = v[:max(*p.MaxLength, 0)]
	}
	return v
}

// invalidAnswer is one form answer that breaks the schema.
type invalidAnswer struct {
	what    string // e.g. `"seats" above its maximum`
	content map[string]any
}

// invalidAnswers returns answers to s that each break one rule: a wrong
// type, a bound, a format, an enum, a required property, an integer.
func invalidAnswers(s *elicit.Schema) []invalidAnswer {
	var out []invalidAnswer
	with := func(name string, v any, what string) {
		c := validContent(s)
		c[name] = v
		out = append(out, invalidAnswer{what: `"` + name + `" ` + what, content: c})
	}
	for _, name := range s.Order {
		p := s.Properties[name]
		switch p.Type {
		case "boolean":
			with(name, "yes", "a string where a boolean is asked")
		case "number", "integer":
			with(name, "many", "a string where a number is asked")
			if p.Maximum != nil {
				with(name, *p.Maximum+1, "above its maximum")
			}
			if p.Minimum != nil {
				with(name, *p.Minimum-1, "below its minimum")
			}
			if p.Type == "integer" {
				v := 1.5
				if p.Minimum != nil {
					v = math.Ceil(*p.Minimum) + 0.5
				}
				with(name, v, "a fraction where an integer is asked")
			}
		case "array":
			with(name, []string{"not-one-of-the-choices"}, "a choice not in its enum")
		case "string":
			with(name, 12345, "a number where a string is asked")
			switch {
			case len(p.Enum) > 0:
				with(name, "not-one-of-the-choices", "a value not in its enum")
			case p.Format == "email":
				with(name, "not-an-email", "not an email address")
			case p.Format == "date":
				with(name, "2026-13-45", "not a date")
			case p.Format == "date-time":
				with(name, "yesterday", "not a date-time")
			case p.Format == "uri":
				with(name, "not a uri", "not a URI")
			}
			if p.MaxLength != nil {
				with(name, strings.Repeat("x", *p.MaxLength+1), "longer than its maxLength")
			}
			if p.MinLength != nil && *p.MinLength > 0 {
				with(name, strings.Repeat("x", *p.MinLength-1), "shorter than its minLength")
			}
		}
	}
	for _, name := range s.Required {
		c := validContent(s)
		delete(c, name)
		out = append(out, invalidAnswer{what: `required "` + name + `" missing`, content: c})
	}
	return out
}
