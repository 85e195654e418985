package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcp-elicit/elicit/internal/jsonerr"
	"github.com/mcp-elicit/elicit/internal/typeschema"
)

// node is a compiled schema of a typed tool: the keywords AddTool infers
// or reads from tags, with patterns compiled once. Its problems name the
// member and the rule, never the value, so they are safe to send and log
// (github.com/google/jsonschema-go's own errors quote values).
type node struct {
	types              []string // allowed JSON types; nil means any
	props              map[string]*node
	order              []string
	required           []string
	closed             bool  // additionalProperties: false
	values             *node // additionalProperties as a schema (maps)
	items              *node
	enum               []any
	pattern            *regexp.Regexp
	format             string
	minLen, maxLen     *int
	minItems, maxItems *int
	min, max           *float64
	def                any
	hasDef             bool
}

func compileSchema(s *jsonschema.Schema) (*node, error) {
	if s == nil {
		return nil, nil
	}
	n := &node{enum: s.Enum, format: s.Format, minLen: s.MinLength, maxLen: s.MaxLength,
		minItems: s.MinItems, maxItems: s.MaxItems, min: s.Minimum, max: s.Maximum, required: s.Required}
	switch {
	case s.Type != "":
		n.types = []string{s.Type}
	case s.Types != nil:
		n.types = s.Types
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pattern: %v", err)
		}
		n.pattern = re
	}
	var err error
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		n.order = append([]string(nil), s.PropertyOrder...)
		for name, ps := range s.Properties {
			if n.props[name], err = compileSchema(ps); err != nil {
				return nil, err
			}
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		if ap.Not != nil && reflect.ValueOf(*ap.Not).IsZero() {
			n.closed = true
		} else if n.values, err = compileSchema(ap); err != nil {
			return nil, err
		}
	}
	if n.items, err = compileSchema(s.Items); err != nil {
		return nil, err
	}
	if len(s.Default) > 0 {
		if err := json.Unmarshal(s.Default, &n.def); err != nil {
			return nil, fmt.Errorf("default: %v", err)
		}
		n.hasDef = true
		if probs := n.validate(n.def, "", nil); len(probs) > 0 {
			return nil, fmt.Errorf("default does not fit: %s", joinProblems(probs))
		}
	}
	return n, nil
}

// problem is one reason a value does not fit, in words for the client:
// the member's path and the rule, never the value.
type problem string

// maxProblems bounds what one error lists.
const maxProblems = 5

func joinProblems(ps []problem) string {
	msgs := make([]string, 0, len(ps))
	for i, p := range ps {
		if i == maxProblems {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(ps)-i))
			break
		}
		msgs = append(msgs, string(p))
	}
	return strings.Join(msgs, "; ")
}

func member(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

var typeWords = map[string]string{"string": "a string", "integer": "a whole number", "number": "a number",
	"boolean": "true or false", "array": "a list", "object": "an object", "null": "null"}

// validate checks v, a JSON value decoded into any, and returns its
// problems. Absent members with a default get it when filled is not nil,
// which is then set.
func (n *node) validate(v any, path string, filled *bool) []problem {
	if n == nil {
		return nil
	}
	if msg := n.typeProblem(v); msg != "" {
		return []problem{at(path, msg)}
	}
	if n.enum != nil && !slices.Contains(n.enum, v) {
		return []problem{at(path, "must be one of "+enumList(n.enum))}
	}
	var msg string
	switch x := v.(type) {
	case string:
		msg = n.stringProblem(x)
	case float64:
		msg = n.numberProblem(x)
	case []any:
		return n.validateItems(x, path, filled)
	case map[string]any:
		return n.validateMembers(x, path, filled)
	}
	if msg != "" {
		return []problem{at(path, msg)}
	}
	return nil
}

// at words msg about the member at path ("arguments" for the whole value).
func at(path, msg string) problem {
	if path == "" {
		path = "arguments"
	}
	return problem(strconv.Quote(path) + " " + msg)
}

// typeProblem checks the JSON type; an integer is a number too.
func (n *node) typeProblem(v any) string {
	if n.types == nil {
		return ""
	}
	got := jsonType(v)
	for _, t := range n.types {
		if t == got || (t == "number" && got == "integer") {
			return ""
		}
	}
	var want []string
	for _, t := range n.types {
		if t != "null" {
			want = append(want, typeWords[t])
		}
	}
	return "must be " + strings.Join(want, " or ")
}

// stringProblem checks length in characters, pattern and format.
func (n *node) stringProblem(x string) string {
	count := utf8.RuneCountInString(x)
	switch {
	case n.minLen != nil && count < *n.minLen:
		return "must be at least " + plural(*n.minLen, "character")
	case n.maxLen != nil && count > *n.maxLen:
		return "must be at most " + plural(*n.maxLen, "character")
	case n.pattern != nil && !n.pattern.MatchString(x):
		return "must match the pattern " + n.pattern.String()
	}
	return typeschema.CheckFormat(n.format, x)
}

// numberProblem checks the inclusive bounds.
func (n *node) numberProblem(x float64) string {
	switch {
	case n.min != nil && x < *n.min:
		return "must be at least " + strconv.FormatFloat(*n.min, 'f', -1, 64)
	case n.max != nil && x > *n.max:
		return "must be at most " + strconv.FormatFloat(*n.max, 'f', -1, 64)
	}
	return ""
}

// validateItems checks the item count, then each item.
func (n *node) validateItems(x []any, path string, filled *bool) []problem {
	switch {
	case n.minItems != nil && len(x) < *n.minItems:
		return []problem{at(path, "must have at least "+plural(*n.minItems, "item"))}
	case n.maxItems != nil && len(x) > *n.maxItems:
		return []problem{at(path, "must have at most "+plural(*n.maxItems, "item"))}
	}
	var probs []problem
	for i, it := range x {
		probs = append(probs, n.items.validate(it, fmt.Sprintf("%s[%d]", path, i), filled)...)
	}
	return probs
}

// validateMembers fills defaults, then checks required members and each
// member present, in name order so that messages are deterministic: a
// known one against its schema, an unknown one refused when the object is
// closed or checked against additionalProperties.
func (n *node) validateMembers(x map[string]any, path string, filled *bool) []problem {
	for _, name := range n.order {
		p := n.props[name]
		if _, ok := x[name]; !ok && p != nil && p.hasDef && filled != nil {
			x[name] = p.def
			*filled = true
		}
	}
	var probs []problem
	for _, name := range n.required {
		if _, ok := x[name]; !ok {
			probs = append(probs, problem(strconv.Quote(member(path, name))+" is required"))
		}
	}
	for _, name := range sortedKeys(x) {
		if p, ok := n.props[name]; ok {
			probs = append(probs, p.validate(x[name], member(path, name), filled)...)
		} else if n.closed {
			probs = append(probs, problem(strconv.Quote(member(path, name))+" is not a known argument"))
		} else if n.values != nil {
			probs = append(probs, n.values.validate(x[name], member(path, name), filled)...)
		}
	}
	return probs
}

func enumList(values []any) string {
	parts := make([]string, 0, len(values))
	for i, v := range values {
		if i == 10 {
			parts = append(parts, "…")
			break
		}
		b, _ := json.Marshal(v)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic messages
	return keys
}

// argumentProblem names, for the client, where decoding the arguments
// failed: the member (as a path like "filter.tags[2]") and what was wrong,
// never the value.
func argumentProblem(err error) string {
	var se *jsonv2.SemanticError
	var ye *jsontext.SyntacticError
	switch {
	case errors.As(err, &se) && errors.Is(err, jsonv2.ErrUnknownName):
		return strconv.Quote(pointerPath(string(se.JSONPointer))) + " is not a known argument"
	case errors.As(err, &ye) && errors.Is(err, jsontext.ErrDuplicateName):
		return strconv.Quote(pointerPath(string(ye.JSONPointer))) + " appears twice"
	case errors.As(err, &se) && se.JSONPointer != "":
		// What it must be and the kind found (jsonError), never the value.
		ptr, problem := jsonerr.Locate(err)
		return strconv.Quote(pointerPath(ptr)) + " " + problem
	}
	return "arguments are not a valid JSON object"
}

// pointerPath turns a JSON Pointer ("/filter/tags/2") into the path form
// of argument problems ("filter.tags[2]").
func pointerPath(ptr string) string {
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		if _, err := strconv.Atoi(seg); err == nil && b.Len() > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}
