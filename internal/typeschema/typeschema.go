// Package typeschema holds what the typed tool inputs of mcpserver and the
// typed forms of elicit share: which struct fields become JSON members,
// the struct tags that refine their schema, and the string formats both
// check. It knows nothing of MCP.
package typeschema

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Field is one JSON member of a struct type, in encoding/json's terms: an
// exported field not tagged json:"-", with the fields of embedded structs
// promoted.
type Field struct {
	reflect.StructField
	// Name is the member name: the json tag's name, else the Go name.
	Name string
	// Optional is set by the json tag options omitempty or omitzero.
	Optional bool
}

// Fields returns the JSON members of the struct type t in field order.
// It follows the rules github.com/google/jsonschema-go uses when it infers
// a schema, so that the tags of a Field land on the property inferred for
// it.
func Fields(t reflect.Type) []Field {
	var out []Field
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, opts, found := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && !found {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := false
		for _, o := range strings.Split(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		out = append(out, Field{StructField: f, Name: name, Optional: optional})
	}
	return out
}

// Tags are the schema refinements read from a field's struct tags. Each
// tag is named after the JSON Schema keyword it sets:
//
//	title:"Label"              description:"What it is for."
//	enum:"summary|detailed"    enumTitles:"Summary|Detailed report"
//	minimum:"1" maximum:"10"   minLength:"1" maxLength:"80"
//	minItems:"1" maxItems:"3"  pattern:"^[a-z]+$"   format:"email"
//	default:"summary"          header:"Region" (x-mcp-header)
//	notSecret:"counts model tokens, not a credential"
//
// Lists (enum, enumTitles, a default for a list) are separated by "|".
// The jsonschema tag that github.com/google/jsonschema-go reads is a
// description too; a field may not carry both.
type Tags struct {
	Title, Description string
	Enum, EnumTitles   []string
	Pattern, Format    string
	// Default is the raw default text; HasDefault tells "" from absent.
	Default    string
	HasDefault bool
	Minimum    *float64
	Maximum    *float64
	MinLength  *int
	MaxLength  *int
	MinItems   *int
	MaxItems   *int
	// Header is the x-mcp-header name (tool inputs only).
	Header string
	// NotSecret is the reason a form field that looks like a secret is
	// not one (forms only).
	NotSecret string
}

// Formats both typed tools and typed forms check.
var formats = map[string]bool{"email": true, "uri": true, "date": true, "date-time": true}

// ParseTags reads the schema tags of f. It fails on a malformed number,
// an unknown format, a pattern that does not compile, an empty list entry,
// or two descriptions.
func ParseTags(f reflect.StructField) (Tags, error) {
	var t Tags
	tag := f.Tag
	t.Title = tag.Get("title")
	t.Description = tag.Get("description")
	if _, ok := tag.Lookup("jsonschema"); ok && t.Description != "" {
		return t, fmt.Errorf("both a description and a jsonschema tag")
	}
	if err := t.parseEnum(tag); err != nil {
		return t, err
	}
	t.Pattern = tag.Get("pattern")
	if t.Pattern != "" {
		if _, err := regexp.Compile(t.Pattern); err != nil {
			return t, fmt.Errorf("pattern: %v", err)
		}
	}
	t.Format = tag.Get("format")
	if t.Format != "" && !formats[t.Format] {
		return t, fmt.Errorf("format %q is not one of email, uri, date, date-time", t.Format)
	}
	t.Default, t.HasDefault = tag.Lookup("default")
	t.Header = tag.Get("header")
	t.NotSecret = tag.Get("notSecret")
	return t, t.parseBounds(tag)
}

// parseEnum reads enum and enumTitles: "|"-separated, no empty entry, a
// title for each value.
func (t *Tags) parseEnum(tag reflect.StructTag) error {
	if v, ok := tag.Lookup("enum"); ok {
		t.Enum = strings.Split(v, "|")
	}
	if v, ok := tag.Lookup("enumTitles"); ok {
		t.EnumTitles = strings.Split(v, "|")
		if t.Enum == nil || len(t.EnumTitles) != len(t.Enum) {
			return fmt.Errorf("enumTitles needs an enum of the same length")
		}
	}
	if slices.Contains(t.Enum, "") || slices.Contains(t.EnumTitles, "") {
		return fmt.Errorf("enum and enumTitles entries must not be empty")
	}
	return nil
}

// parseBounds reads the numeric bounds and the counts; the error names
// the last one that does not parse.
func (t *Tags) parseBounds(tag reflect.StructTag) error {
	var err error
	for _, n := range []struct {
		name string
		dst  **float64
	}{{"minimum", &t.Minimum}, {"maximum", &t.Maximum}} {
		if v, ok := tag.Lookup(n.name); ok {
			x, perr := strconv.ParseFloat(v, 64)
			if perr != nil {
				err = fmt.Errorf("%s %q is not a number", n.name, v)
			}
			*n.dst = &x
		}
	}
	for _, n := range []struct {
		name string
		dst  **int
	}{{"minLength", &t.MinLength}, {"maxLength", &t.MaxLength}, {"minItems", &t.MinItems}, {"maxItems", &t.MaxItems}} {
		if v, ok := tag.Lookup(n.name); ok {
			x, perr := strconv.Atoi(v)
			if perr != nil || x < 0 {
				err = fmt.Errorf("%s %q is not a count", n.name, v)
			}
			*n.dst = &x
		}
	}
	return err
}

// Scalar parses s as a value of the scalar kind k (string, bool, integer
// or float kinds), for enum entries and defaults: a string, bool or
// float64.
func Scalar(k reflect.Kind, s string) (any, error) {
	switch k {
	case reflect.String:
		return s, nil
	case reflect.Bool:
		return strconv.ParseBool(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i, err := strconv.ParseInt(s, 10, 64)
		return float64(i), err
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(s, 64)
	}
	return nil, fmt.Errorf("a %s has no text form", k)
}

var emailRe = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s.]+$`)

// CheckFormat returns why s is not of format ("email", "uri" absolute,
// "date" YYYY-MM-DD, "date-time" RFC 3339), in words fit for the user, or
// "" when it is (or the format is not one of these).
func CheckFormat(format, s string) string {
	switch format {
	case "email":
		if !emailRe.MatchString(s) || strings.IndexFunc(s, notGraphic) >= 0 {
			return "must be an email address"
		}
	case "uri":
		u, err := url.Parse(s)
		if err != nil || !u.IsAbs() || strings.ContainsAny(s, " \t\r\n") {
			return "must be an absolute URI"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a date (YYYY-MM-DD)"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "must be a date and time (RFC 3339, e.g. 2026-07-28T09:30:00Z)"
		}
	}
	return ""
}

// notGraphic reports runes no address holds: controls, format characters
// (bidi overrides, zero-width), separators and spaces of every kind.
func notGraphic(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }
