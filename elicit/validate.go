package elicit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/internal/textclass"
	"github.com/mcp-elicit/elicit/internal/typeschema"
)

// Problem is one reason form content does not fit its schema. Message
// names the property (its title and name) and the rule, and for a wrong
// type the kind of value found, never the value itself, so it is safe to
// log and to show in a re-ask.
type Problem struct {
	// Property is the property name.
	Property string
	// Rule is the broken rule: "required", "type", "integer", "minLength",
	// "maxLength", "characters", "format", "minimum", "maximum", "enum",
	// "minItems", "maxItems" or "uniqueItems".
	Rule string
	// Message is a short human sentence, e.g. `Label (label): must be at
	// most 80 characters` or `Label (label): missing; it is required`.
	Message string
}

// ValidationError lists every Problem of one form answer, in schema order.
type ValidationError struct {
	Problems []Problem
}

// Error joins the messages with "; ".
func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

// Validate checks form content against the schema (ELI-S-07); it is
// ValidateContent without the cleaned copy. The error is a
// *ValidationError.
func (s *Schema) Validate(content map[string]any) error {
	_, err := s.ValidateContent(content)
	return err
}

// ValidateContent checks the content of an accepted form answer against
// the schema that was asked (ELI-S-07) and returns a clean copy:
//
//   - every required property is present; null reads as absent, and a
//     required multi-select must hold at least one choice;
//   - each value has its property's type: string, number (95.5 is a
//     number: docs/protocol.md §Answers), integer (a whole number, 3.0 included),
//     boolean, or a list of strings;
//   - strings meet minLength/maxLength (in Unicode code points), their
//     format (email, absolute uri, date YYYY-MM-DD, RFC 3339 date-time)
//     and enum membership, legacy enumNames schemas included; free text
//     holds no character that changes how text shows instead of being
//     part of it (hiddenOrControl);
//   - numbers meet minimum/maximum;
//   - multi-selects meet minItems/maxItems, hold only listed choices, and
//     repeat none;
//   - keys that are not properties are dropped, not refused.
//
// The copy holds string, float64, bool or []string values. The error, if
// any, is a *ValidationError listing every problem; it never quotes a value.
func (s *Schema) ValidateContent(content map[string]any) (map[string]any, error) {
	if s == nil {
		return nil, badf("no schema to validate against")
	}
	out := make(map[string]any, len(s.Properties))
	var probs []Problem
	for _, name := range s.Order {
		p := s.Properties[name]
		v, present := content[name]
		if v == nil {
			present = false
		}
		required := s.isRequired(name)
		if !present {
			if required {
				probs = append(probs, Problem{name, "required", p.field(name) + ": missing; it is required"})
			}
			continue
		}
		if pr := p.check(name, v); pr != nil {
			probs = append(probs, *pr)
			continue
		}
		nv := normalize(p, v)
		if list, ok := nv.([]string); ok && required && len(list) == 0 {
			probs = append(probs, Problem{name, "required", p.field(name) + ": none chosen; choose at least one"})
			continue
		}
		out[name] = nv
	}
	if len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	return out, nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// check returns the problem of v against p, or nil.
func (p *Property) check(name string, v any) *Problem {
	var rule, msg string
	switch p.Type {
	case "string":
		rule, msg = p.checkString(v)
	case "number", "integer":
		rule, msg = p.checkNumber(v)
	case "boolean":
		if _, ok := v.(bool); !ok {
			rule, msg = wrongType("true or false", v)
		}
	case "array":
		rule, msg = p.checkMultiSelect(v)
	default:
		rule, msg = "type", "has a type forms do not support"
	}
	if rule == "" {
		return nil
	}
	return &Problem{Property: name, Rule: rule, Message: p.field(name) + ": " + msg}
}

// A check below returns the rule v breaks and why, in words for the user
// that never quote v; "" when v fits.

func wrongType(want string, v any) (rule, msg string) {
	return "type", "must be " + want + ", not " + kindOf(v)
}

// checkString: one of the choices, or the length in characters and the format.
func (p *Property) checkString(v any) (rule, msg string) {
	s, ok := v.(string)
	switch n := utf8.RuneCountInString(s); {
	case !ok:
		return wrongType("text", v)
	case p.Enum != nil && !contains(p.Enum, s):
		return "enum", "must be one of the choices"
	case p.Enum != nil:
		return "", ""
	case strings.IndexFunc(s, hiddenOrControl) >= 0:
		return "characters", "must not contain control characters or invisible formatting characters (such as text-direction overrides)"
	case p.MinLength != nil && n < *p.MinLength:
		return "minLength", "must be at least " + plural(*p.MinLength, "character")
	case p.MaxLength != nil && n > *p.MaxLength:
		return "maxLength", "must be at most " + plural(*p.MaxLength, "character")
	}
	if msg := typeschema.CheckFormat(p.Format, s); msg != "" {
		return "format", msg
	}
	return "", ""
}

// checkNumber: a number, whole for an integer, within the bounds.
func (p *Property) checkNumber(v any) (rule, msg string) {
	f, ok := toFloat(v)
	switch {
	case !ok:
		return wrongType("a number", v)
	case p.Type == "integer" && f != math.Trunc(f):
		return "integer", "must be a whole number"
	case p.Minimum != nil && f < *p.Minimum:
		return "minimum", "must be at least " + fmtNum(*p.Minimum)
	case p.Maximum != nil && f > *p.Maximum:
		return "maximum", "must be at most " + fmtNum(*p.Maximum)
	}
	return "", ""
}

// checkMultiSelect: listed choices, none twice, as many as the bounds allow.
func (p *Property) checkMultiSelect(v any) (rule, msg string) {
	items, ok := toStrings(v)
	if !ok {
		return wrongType("a list of choices", v)
	}
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if !contains(p.Enum, it) {
			return "enum", "must hold only the listed choices"
		}
		if seen[it] {
			return "uniqueItems", "must not repeat a choice"
		}
		seen[it] = true
	}
	switch {
	case p.MinItems != nil && len(items) < *p.MinItems:
		return "minItems", fmt.Sprintf("choose at least %d", *p.MinItems)
	case p.MaxItems != nil && len(items) > *p.MaxItems:
		return "maxItems", fmt.Sprintf("choose at most %d", *p.MaxItems)
	}
	return "", ""
}

// kindOf names the kind of a decoded JSON value, never the value.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "text"
	case bool:
		return "true or false"
	case []any, []string:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if _, ok := toFloat(v); ok {
		return "a number"
	}
	return "another kind of value"
}

// normalize returns v (already checked against p) as string, float64, bool
// or []string.
func normalize(p *Property, v any) any {
	switch p.Type {
	case "number", "integer":
		f, _ := toFloat(v)
		return f
	case "array":
		items, _ := toStrings(v)
		return items
	}
	return v
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}

func toStrings(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return append([]string{}, l...), true
	case []any:
		out := make([]string, 0, len(l))
		for _, it := range l {
			s, ok := it.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Problems returned by DecodeAnswer for answers that are not ElicitResults.
const (
	problemNotResult = "the answer could not be read (not an elicitation result)"
	problemNotObject = "the answer's content is not an object"
	problemBadAction = "the answer has no known action (accept, decline or cancel)"
)

// hiddenOrControl reports runes a text answer must not hold, because
// they act on the text rather than being part of it wherever it is shown
// or echoed (a terminal, a log, another client): textclass.Hidden —
// controls, format characters, separators, fillers and other characters
// that render as nothing, the definition the elicit command's terminal
// escaping shares — except tab and line feed, and the zero-width joiner
// and non-joiner that emoji and several scripts need (textclass.Joiner).
func hiddenOrControl(r rune) bool {
	return r != '\t' && r != '\n' && !textclass.Joiner(r) && textclass.Hidden(r)
}
