package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrBadSchema is wrapped by every error about a form schema that form mode
// may not use (ParseSchema, ParseSchemaForAnswers, FormSchema). Test with
// errors.Is.
var ErrBadSchema = errors.New("elicit: invalid form schema")

// ErrSecretField is wrapped, together with ErrBadSchema, when a property
// looks like it asks for a password, API key, token, secret, card data or
// another secret (LooksSecretProperty: its words in many languages,
// writeOnly, format "password", a card number as default). Form mode must
// not ask for those (ELI-S-01); ask through URL mode on the server's own
// page instead (ELI-S-02).
var ErrSecretField = errors.New("form mode must not ask for secrets (passwords, API keys, tokens, card data): use URL mode")

// Schema is a parsed flat form schema, the requestedSchema of a form-mode
// elicitation (docs/protocol.md §Form requests, ELI-S-06). Build one with FormSchema or
// ParseSchema; a Schema is read-only after that and safe for concurrent use.
type Schema struct {
	// Properties holds each property by name.
	Properties map[string]*Property
	// Order lists property names as they appear in the schema.
	Order []string
	// Required lists the names of required properties.
	Required []string

	raw json.RawMessage // compact requestedSchema JSON
}

// JSON returns the requestedSchema as it goes on the wire (compact JSON).
// It is nil for a nil Schema.
func (s *Schema) JSON() json.RawMessage {
	if s == nil {
		return nil
	}
	return append(json.RawMessage(nil), s.raw...)
}

// MarshalJSON implements json.Marshaler with the wire form (JSON).
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return s.JSON(), nil
}

func (s *Schema) isRequired(name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

// Property is one primitive property of a form schema (one
// PrimitiveSchemaDefinition, docs/protocol.md §Form schema primitives).
type Property struct {
	// Type is "string", "number", "integer", "boolean" or "array" (the
	// multi-select enums).
	Type        string
	Title       string
	Description string
	// Format is "", "email", "uri", "date" or "date-time" (strings only).
	Format string
	// Enum lists the allowed values of a single-select string (enum, or the
	// consts of oneOf) or of the items of a multi-select (items.enum or the
	// consts of items.anyOf).
	Enum []string
	// EnumTitles are the display titles, parallel to Enum, of a titled enum
	// (oneOf, items.anyOf or the legacy enumNames); nil when untitled.
	EnumTitles []string
	// MinLength and MaxLength bound a string, in Unicode code points.
	MinLength, MaxLength *int
	// Minimum and Maximum bound a number or integer (inclusive).
	Minimum, Maximum *float64
	// MinItems and MaxItems bound the number of choices of a multi-select.
	MinItems, MaxItems *int
	// Default is the value clients pre-fill (ELI-C-05): a string, float64,
	// bool or []string; nil when absent.
	Default any
}

// label names the property in messages: its title, else its name.
func (p *Property) label(name string) string {
	if p.Title != "" {
		return p.Title
	}
	return name
}

// field names a property in a message: its title and, when that differs,
// its name in brackets ("Label (label)"), so both the user and the
// client's developer know which one.
func (p *Property) field(name string) string {
	if p.Title != "" && p.Title != name {
		return p.Title + " (" + name + ")"
	}
	return name
}

// ParseSchema parses and checks a requestedSchema this server is about to
// send (ELI-S-06): a JSON object with "type":"object", "properties" whose
// values are flat primitives (string with optional minLength, maxLength
// and format email|uri|date|date-time; number and integer with minimum and
// maximum; boolean; single-select enums untitled, titled with oneOf, or
// legacy with enumNames; multi-select string arrays untitled or titled
// with items.anyOf), an optional "required" naming existing properties,
// and defaults that fit. Nested objects, arrays of objects, $ref and the
// other composition keywords are refused, as are keywords that do not apply
// to a property's type. Unknown annotation keywords are ignored.
//
// A property that looks like it asks for a secret (LooksSecretProperty)
// is refused with ErrSecretField (ELI-S-01), before its keywords are
// checked; FormSchema has an override for false positives, raw schemas
// have none.
//
// Errors wrap ErrBadSchema and name the property, never a value.
func ParseSchema(raw json.RawMessage) (*Schema, error) {
	return cachedParse(raw, modeSend)
}

// ParseSchemaForAnswers parses a requestedSchema in order to validate the
// answers to it (ELI-S-07): one this server already asked (mcpserver reads
// it back from the sealed requestState), or one received from elsewhere,
// e.g. by a gateway. The structural rules are ParseSchema's, but the
// secret guard is not applied (the question was already asked) and oneOf
// and anyOf entries may lack titles. Legacy enumNames schemas are read.
func ParseSchemaForAnswers(raw json.RawMessage) (*Schema, error) {
	return cachedParse(raw, modeAnswers)
}

// Parsed schemas are kept by content: a server asks the same few forms
// again and again, and reads each one back on every retry. The cache is
// bounded in entries and in the size of what it keeps, so schemas that
// arrive from elsewhere cannot grow it without limit.
const (
	schemaCacheEntries = 1024
	schemaCacheMaxRaw  = 4 << 10
)

var schemaCache struct {
	m sync.Map // string(mode byte + raw) → *Schema
	n atomic.Int64
}

func cachedParse(raw json.RawMessage, mode parseMode) (*Schema, error) {
	if len(raw) > schemaCacheMaxRaw {
		return parse(raw, mode, nil)
	}
	key := string(append([]byte{byte(mode)}, raw...))
	if v, ok := schemaCache.m.Load(key); ok {
		return v.(*Schema), nil
	}
	s, err := parse(raw, mode, nil)
	if err != nil {
		return nil, err
	}
	if schemaCache.n.Load() < schemaCacheEntries {
		if _, loaded := schemaCache.m.LoadOrStore(key, s); !loaded {
			schemaCache.n.Add(1)
		}
	}
	return s, nil
}

type parseMode int

const (
	modeSend    parseMode = iota // a schema about to be sent
	modeAnswers                  // a schema whose answers are being read
)

// Keywords that would make a form non-flat, or carry semantics a form
// cannot honour (ELI-S-06).
var deniedKeywords = map[string]bool{
	"$ref": true, "$defs": true, "definitions": true, "$dynamicRef": true,
	"properties": true, "additionalProperties": true, "patternProperties": true,
	"allOf": true, "anyOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentSchemas": true, "dependentRequired": true, "prefixItems": true, "contains": true,
	"pattern": true, "const": true,
}

// Keywords of the primitive definitions and the types they apply to.
var keywordTypes = map[string]string{
	"type": "*", "title": "*", "description": "*", "default": "*",
	"minLength": "string", "maxLength": "string", "format": "string",
	"enum": "string", "enumNames": "string", "oneOf": "string",
	"minimum": "number integer", "maximum": "number integer",
	"items": "array", "minItems": "array", "maxItems": "array",
}

var formats = map[string]bool{"": true, "email": true, "uri": true, "date": true, "date-time": true}

type rawProp struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []constTitle    `json:"oneOf"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Items       json.RawMessage `json:"items"`
	Default     json.RawMessage `json:"default"`
}

type constTitle struct {
	Const *string `json:"const"`
	Title *string `json:"title"`
}

type rawItems struct {
	Type  string       `json:"type"`
	Enum  []string     `json:"enum"`
	AnyOf []constTitle `json:"anyOf"`
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadSchema}, args...)...)
}

// parse implements ParseSchema and ParseSchemaForAnswers; notSecret names
// properties whose secret check the caller overrode (FormSchema).
func parse(raw json.RawMessage, mode parseMode, notSecret map[string]bool) (*Schema, error) {
	propsRaw, required, err := parseTop(raw)
	if err != nil {
		return nil, err
	}
	order, err := objectKeys(propsRaw)
	if err != nil {
		return nil, badf("properties: malformed JSON")
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(propsRaw, &props); err != nil {
		return nil, badf("properties: malformed JSON")
	}
	s := &Schema{Properties: make(map[string]*Property, len(order)), Order: order, Required: required}
	for _, name := range order {
		if _, dup := s.Properties[name]; dup {
			return nil, badf("property %q appears twice", name)
		}
		// The secret guard reads the raw property first: format
		// "password" or writeOnly is a secret before it is a bad keyword.
		if mode == modeSend && !notSecret[name] {
			if err := checkNotSecret(name, props[name]); err != nil {
				return nil, err
			}
		}
		if s.Properties[name], err = parseProperty(name, props[name], mode); err != nil {
			return nil, err
		}
	}
	if err := checkRequired(s); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, badf("malformed JSON")
	}
	s.raw = buf.Bytes()
	return s, nil
}

// parseTop checks the schema object itself: only flat keywords, "type":
// "object", a properties object; it returns properties and required.
func parseTop(raw json.RawMessage) (props json.RawMessage, required []string, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, nil, badf("requestedSchema must be a JSON object")
	}
	for k := range top {
		if deniedKeywords[k] && k != "properties" && k != "additionalProperties" {
			return nil, nil, badf("keyword %q is not allowed in a form schema (flat primitives only, ELI-S-06)", k)
		}
	}
	var typ string
	if err := json.Unmarshal(top["type"], &typ); err != nil || typ != "object" {
		return nil, nil, badf(`type must be "object"`)
	}
	props, ok := top["properties"]
	if !ok || len(props) == 0 || props[0] != '{' {
		return nil, nil, badf("properties must be an object")
	}
	if r, ok := top["required"]; ok && string(r) != "null" {
		if err := json.Unmarshal(r, &required); err != nil {
			return nil, nil, badf("required must be an array of property names")
		}
	}
	return props, required, nil
}

// checkRequired: every required name is a property, listed once.
func checkRequired(s *Schema) error {
	seen := map[string]bool{}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return badf("required %q is not a property", r)
		}
		if seen[r] {
			return badf("required %q is listed twice", r)
		}
		seen[r] = true
	}
	return nil
}

// parseProperty reads one property: one of the primitive definitions of
// the spec (string, number or integer, boolean, enum, multi-select),
// with only the keywords that apply to its type, and a default that fits.
func parseProperty(name string, raw json.RawMessage, mode parseMode) (*Property, error) {
	rp, err := decodeProperty(name, raw)
	if err != nil {
		return nil, err
	}
	p := &Property{Type: rp.Type, Title: rp.Title, Description: rp.Description, Format: rp.Format,
		MinLength: rp.MinLength, MaxLength: rp.MaxLength, Minimum: rp.Minimum, Maximum: rp.Maximum,
		MinItems: rp.MinItems, MaxItems: rp.MaxItems}
	switch rp.Type {
	case "string":
		err = parseString(name, rp, p, mode)
	case "number", "integer":
		if rp.Minimum != nil && rp.Maximum != nil && *rp.Minimum > *rp.Maximum {
			err = badf("property %q: minimum is above maximum", name)
		}
	case "boolean":
	case "array":
		err = parseMultiSelect(name, rp, p, mode)
	case "":
		err = badf("property %q: type is missing", name)
	default:
		err = badf("property %q: type %q is not a form primitive (string, number, integer, boolean, or array for multi-select)", name, rp.Type)
	}
	if err != nil {
		return nil, err
	}
	if len(rp.Default) > 0 && string(rp.Default) != "null" {
		def, err := decodeDefault(rp.Default)
		if err != nil {
			return nil, badf("property %q: default is not a string, number, boolean or list of strings", name)
		}
		if pr := p.check(name, def); pr != nil {
			return nil, badf("property %q: default does not fit: %s", name, pr.Message)
		}
		p.Default = normalize(p, def)
	}
	return p, nil
}

// decodeProperty decodes a property object, refusing keywords that would
// make the form non-flat and keywords that do not apply to its type.
func decodeProperty(name string, raw json.RawMessage) (*rawProp, error) {
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kw); err != nil || kw == nil {
		return nil, badf("property %q must be an object", name)
	}
	for k := range kw {
		if deniedKeywords[k] {
			return nil, badf("property %q: keyword %q is not allowed (flat primitives only, ELI-S-06)", name, k)
		}
	}
	var rp rawProp
	if err := json.Unmarshal(raw, &rp); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badf("property %q: %s has the wrong type", name, te.Field)
		}
		return nil, badf("property %q: malformed JSON", name)
	}
	for k := range kw {
		if types, known := keywordTypes[k]; known && types != "*" && !strings.Contains(" "+types+" ", " "+rp.Type+" ") {
			return nil, badf("property %q: keyword %q does not apply to type %q", name, k, rp.Type)
		}
	}
	return &rp, nil
}

// parseString reads a string property: a known format, sane length
// bounds, and choices from enum (with legacy enumNames) or titled oneOf.
func parseString(name string, rp *rawProp, p *Property, mode parseMode) error {
	if !formats[rp.Format] {
		return badf("property %q: format %q is not one of email, uri, date, date-time", name, rp.Format)
	}
	if err := checkBounds(name, "minLength", "maxLength", rp.MinLength, rp.MaxLength); err != nil {
		return err
	}
	var err error
	switch {
	case rp.Enum != nil && rp.OneOf != nil:
		return badf("property %q: enum and oneOf together", name)
	case rp.EnumNames != nil && rp.Enum == nil:
		return badf("property %q: enumNames without enum", name)
	case rp.EnumNames != nil && len(rp.EnumNames) != len(rp.Enum):
		return badf("property %q: enumNames and enum differ in length", name)
	case rp.Enum != nil:
		p.Enum, p.EnumTitles = rp.Enum, rp.EnumNames
	case rp.OneOf != nil:
		p.Enum, p.EnumTitles, err = choices(name, "oneOf", rp.OneOf, mode)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	return checkChoices(name, p.Enum)
}

// parseMultiSelect reads an array property, which a form allows only as a
// multi-select of strings: items with an enum or a titled anyOf.
func parseMultiSelect(name string, rp *rawProp, p *Property, mode parseMode) error {
	it, err := decodeItems(name, rp.Items)
	if err != nil {
		return err
	}
	switch {
	case it.Enum != nil && it.AnyOf != nil:
		return badf("property %q: items hold enum and anyOf together", name)
	case it.Enum != nil && it.Type != "string":
		return badf(`property %q: untitled multi-select items need "type":"string"`, name)
	case it.Enum != nil:
		p.Enum = it.Enum
	case it.AnyOf != nil:
		if p.Enum, p.EnumTitles, err = choices(name, "items.anyOf", it.AnyOf, mode); err != nil {
			return err
		}
	default:
		return badf("property %q: arrays must be multi-select string enums", name)
	}
	if err := checkChoices(name, p.Enum); err != nil {
		return err
	}
	return checkBounds(name, "minItems", "maxItems", rp.MinItems, rp.MaxItems)
}

// decodeItems decodes a multi-select's items: an object of strings that
// holds only type, enum or anyOf.
func decodeItems(name string, raw json.RawMessage) (*rawItems, error) {
	if len(raw) == 0 {
		return nil, badf("property %q: a multi-select needs items", name)
	}
	var ikw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ikw); err != nil || ikw == nil {
		return nil, badf("property %q: items must be an object", name)
	}
	for k := range ikw {
		if k != "type" && k != "enum" && k != "anyOf" {
			return nil, badf("property %q: items may only hold type, enum or anyOf (arrays are multi-select string enums), not %q", name, k)
		}
	}
	var it rawItems
	if err := json.Unmarshal(raw, &it); err != nil {
		return nil, badf("property %q: items are malformed", name)
	}
	if it.Type != "" && it.Type != "string" {
		return nil, badf("property %q: items must be strings (no arrays of %s)", name, it.Type)
	}
	return &it, nil
}

func choices(name, where string, list []constTitle, mode parseMode) (values, titles []string, err error) {
	for _, c := range list {
		if c.Const == nil {
			return nil, nil, badf("property %q: every %s entry needs a string const", name, where)
		}
		t := ""
		if c.Title != nil {
			t = *c.Title
		}
		if mode == modeSend && t == "" {
			return nil, nil, badf("property %q: every %s entry needs a title", name, where)
		}
		values = append(values, *c.Const)
		titles = append(titles, t)
	}
	if values == nil {
		values, titles = []string{}, []string{}
	}
	return values, titles, nil
}

func checkChoices(name string, values []string) error {
	if len(values) == 0 {
		return badf("property %q: an enum needs at least one choice", name)
	}
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		if seen[v] {
			return badf("property %q: choice %q is listed twice", name, v)
		}
		seen[v] = true
	}
	return nil
}

func checkBounds(name, lo, hi string, min, max *int) error {
	if (min != nil && *min < 0) || (max != nil && *max < 0) {
		return badf("property %q: %s and %s must not be negative", name, lo, hi)
	}
	if min != nil && max != nil && *min > *max {
		return badf("property %q: %s is above %s", name, lo, hi)
	}
	return nil
}

func decodeDefault(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string, float64, bool:
		return x, nil
	case []any:
		return x, nil
	}
	return nil, errors.New("unsupported default")
}

// objectKeys returns the member names of a JSON object in document order.
func objectKeys(obj json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	keys := []string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
