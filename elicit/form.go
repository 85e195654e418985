package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Format is a string format a form may ask for (docs/protocol.md §Form schema primitives).
type Format string

// The formats of StringSchema.
const (
	FormatEmail    Format = "email"
	FormatURI      Format = "uri"       // an absolute URI
	FormatDate     Format = "date"      // YYYY-MM-DD
	FormatDateTime Format = "date-time" // RFC 3339
)

// Choice is one option of a titled enum: Value goes on the wire as const
// and comes back in the answer; Title is what the user sees.
type Choice struct {
	Value string
	Title string
}

type fieldKind int

const (
	kindString fieldKind = iota
	kindNumber
	kindInteger
	kindBoolean
	kindEnum
	kindTitledEnum
	kindMultiEnum
	kindTitledMultiEnum
)

var kindNames = map[fieldKind]string{
	kindString: "string", kindNumber: "number", kindInteger: "integer", kindBoolean: "boolean",
	kindEnum: "enum", kindTitledEnum: "titled enum", kindMultiEnum: "multi-select", kindTitledMultiEnum: "titled multi-select",
}

// Field is one property of a form under construction. Make one with
// String, Number, Integer, Boolean, Enum, TitledEnum, MultiEnum or
// TitledMultiEnum, refine it with the chained methods, and pass it to
// FormSchema. A method that does not apply to the field's kind (MinLength
// on a boolean, say) is recorded and reported by FormSchema; nothing
// panics. A Field is not safe for concurrent modification.
type Field struct {
	name      string
	kind      fieldKind
	p         propJSON
	required  bool
	notSecret bool
	errs      []error
}

// propJSON is the wire shape of one property; field order is output order.
type propJSON struct {
	Type        string       `json:"type"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Format      Format       `json:"format,omitempty"`
	MinLength   *int         `json:"minLength,omitempty"`
	MaxLength   *int         `json:"maxLength,omitempty"`
	Minimum     *float64     `json:"minimum,omitempty"`
	Maximum     *float64     `json:"maximum,omitempty"`
	Enum        []string     `json:"enum,omitempty"`
	OneOf       []choiceJSON `json:"oneOf,omitempty"`
	Items       *itemsJSON   `json:"items,omitempty"`
	MinItems    *int         `json:"minItems,omitempty"`
	MaxItems    *int         `json:"maxItems,omitempty"`
	Default     any          `json:"default,omitempty"`
}

type choiceJSON struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

type itemsJSON struct {
	Type  string       `json:"type,omitempty"`
	Enum  []string     `json:"enum,omitempty"`
	AnyOf []choiceJSON `json:"anyOf,omitempty"`
}

func newField(name string, k fieldKind, typ string) *Field {
	return &Field{name: name, kind: k, p: propJSON{Type: typ}}
}

// String is a text field (StringSchema): refine it with MinLength,
// MaxLength and Format.
func String(name string) *Field { return newField(name, kindString, "string") }

// Number is a numeric field that accepts fractions such as 95.5
// (NumberSchema, type "number"): refine it with Minimum and Maximum.
func Number(name string) *Field { return newField(name, kindNumber, "number") }

// Integer is a whole-number field (NumberSchema, type "integer").
func Integer(name string) *Field { return newField(name, kindInteger, "integer") }

// Boolean is a yes/no field (BooleanSchema).
func Boolean(name string) *Field { return newField(name, kindBoolean, "boolean") }

// Enum is a single choice among values shown as they are
// (UntitledSingleSelectEnumSchema: "enum").
func Enum(name string, values ...string) *Field {
	f := newField(name, kindEnum, "string")
	f.p.Enum = append([]string{}, values...)
	return f
}

// TitledEnum is a single choice whose options have display titles
// (TitledSingleSelectEnumSchema: "oneOf" of const and title).
func TitledEnum(name string, choices ...Choice) *Field {
	f := newField(name, kindTitledEnum, "string")
	f.p.OneOf = toChoiceJSON(choices)
	return f
}

// MultiEnum is a multi-select among values shown as they are
// (UntitledMultiSelectEnumSchema: array of "items.enum"); refine it with
// MinItems and MaxItems.
func MultiEnum(name string, values ...string) *Field {
	f := newField(name, kindMultiEnum, "array")
	f.p.Items = &itemsJSON{Type: "string", Enum: append([]string{}, values...)}
	return f
}

// TitledMultiEnum is a multi-select whose options have display titles
// (TitledMultiSelectEnumSchema: "items.anyOf" of const and title).
func TitledMultiEnum(name string, choices ...Choice) *Field {
	f := newField(name, kindTitledMultiEnum, "array")
	f.p.Items = &itemsJSON{AnyOf: toChoiceJSON(choices)}
	return f
}

func toChoiceJSON(cs []Choice) []choiceJSON {
	out := make([]choiceJSON, len(cs))
	for i, c := range cs {
		out[i] = choiceJSON{Const: c.Value, Title: c.Title}
	}
	return out
}

func (f *Field) misuse(method string, kinds ...fieldKind) bool {
	for _, k := range kinds {
		if f.kind == k {
			return false
		}
	}
	f.errs = append(f.errs, fmt.Errorf("%s does not apply to a %s field", method, kindNames[f.kind]))
	return true
}

// Title sets the label the client shows.
func (f *Field) Title(t string) *Field { f.p.Title = t; return f }

// Description sets the help text the client shows.
func (f *Field) Description(d string) *Field { f.p.Description = d; return f }

// Required marks the field as required. A required multi-select needs at
// least one choice.
func (f *Field) Required() *Field { f.required = true; return f }

// MinLength sets the minimum length of a String, in Unicode code points.
func (f *Field) MinLength(n int) *Field {
	if !f.misuse("MinLength", kindString) {
		f.p.MinLength = &n
	}
	return f
}

// MaxLength sets the maximum length of a String, in Unicode code points.
func (f *Field) MaxLength(n int) *Field {
	if !f.misuse("MaxLength", kindString) {
		f.p.MaxLength = &n
	}
	return f
}

// Format sets the format of a String: FormatEmail, FormatURI, FormatDate
// or FormatDateTime.
func (f *Field) Format(format Format) *Field {
	if !f.misuse("Format", kindString) {
		f.p.Format = format
	}
	return f
}

// Minimum sets the inclusive lower bound of a Number or Integer.
func (f *Field) Minimum(x float64) *Field {
	if !f.misuse("Minimum", kindNumber, kindInteger) {
		f.p.Minimum = &x
	}
	return f
}

// Maximum sets the inclusive upper bound of a Number or Integer.
func (f *Field) Maximum(x float64) *Field {
	if !f.misuse("Maximum", kindNumber, kindInteger) {
		f.p.Maximum = &x
	}
	return f
}

// MinItems sets the fewest choices of a multi-select.
func (f *Field) MinItems(n int) *Field {
	if !f.misuse("MinItems", kindMultiEnum, kindTitledMultiEnum) {
		f.p.MinItems = &n
	}
	return f
}

// MaxItems sets the most choices of a multi-select.
func (f *Field) MaxItems(n int) *Field {
	if !f.misuse("MaxItems", kindMultiEnum, kindTitledMultiEnum) {
		f.p.MaxItems = &n
	}
	return f
}

// Default sets the value clients pre-fill (ELI-C-05): a string for String
// and the single-select enums (one of the choices), a number (any Go
// integer or float type) for Number and Integer, a bool for Boolean, and a
// []string for the multi-selects. FormSchema checks that it fits.
func (f *Field) Default(v any) *Field {
	switch x := v.(type) {
	case string, bool:
		f.p.Default = x
	case []string:
		f.p.Default = append([]string{}, x...)
	case int:
		f.p.Default = float64(x)
	case int32:
		f.p.Default = float64(x)
	case int64:
		f.p.Default = float64(x)
	case float32:
		f.p.Default = float64(x)
	case float64:
		f.p.Default = x
	default:
		f.errs = append(f.errs, fmt.Errorf("Default: %T is not a string, number, bool or []string", v))
	}
	return f
}

// DeclareNotSecret turns off the secret guard (ELI-S-01) for this field,
// for a false positive such as a "pin" field that pins a note to the top.
// reason must say why the field is not a secret; it is not sent anywhere
// and exists so the decision is visible in review. Never use it to ask for
// a real secret: those go through URL mode (ELI-S-02).
func (f *Field) DeclareNotSecret(reason string) *Field {
	if reason == "" {
		f.errs = append(f.errs, errors.New("DeclareNotSecret needs a reason"))
		return f
	}
	f.notSecret = true
	return f
}

// FormSchema builds the requestedSchema of a form-mode elicitation from
// fields, in order. It fails, wrapping ErrBadSchema, on a nil field, an
// empty, over-long or repeated name (names are 1–64 characters of
// [A-Za-z0-9_.-]), a method that does not apply to a field's kind, bounds
// out of order, an enum with no or repeated choices or an untitled
// choice, a default that does not fit, or — wrapping ErrSecretField too —
// a field whose name, title or description looks like a secret
// (ELI-S-01) and that was not declared otherwise with DeclareNotSecret.
// The result passes ParseSchema's checks; nothing invalid can be sent.
func FormSchema(fields ...*Field) (*Schema, error) {
	var errs []error
	notSecret := map[string]bool{}
	seen := map[string]bool{}
	var buf bytes.Buffer
	buf.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, f := range fields {
		if f == nil {
			errs = append(errs, fmt.Errorf("field %d is nil", i))
			continue
		}
		if !validFieldName(f.name) {
			errs = append(errs, fmt.Errorf("field name %q must be 1 to 64 characters of [A-Za-z0-9_.-]", f.name))
			continue
		}
		if seen[f.name] {
			errs = append(errs, fmt.Errorf("field %q is defined twice", f.name))
			continue
		}
		seen[f.name] = true
		for _, e := range f.errs {
			errs = append(errs, fmt.Errorf("field %q: %w", f.name, e))
		}
		if f.choices() == 0 && f.kind >= kindEnum {
			errs = append(errs, fmt.Errorf("field %q: a %s needs at least one choice", f.name, kindNames[f.kind]))
		}
		if f.notSecret {
			notSecret[f.name] = true
		}
		if f.required {
			required = append(required, f.name)
		}
		if len(seen) > 1 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(f.name)
		prop, err := json.Marshal(f.p)
		if err != nil {
			errs = append(errs, fmt.Errorf("field %q: %w", f.name, err))
			continue
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(prop)
	}
	buf.WriteByte('}')
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		buf.WriteString(`,"required":`)
		buf.Write(r)
	}
	buf.WriteByte('}')
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, errors.Join(errs...))
	}
	return parse(buf.Bytes(), modeSend, notSecret)
}

// choices counts the options of an enum field.
func (f *Field) choices() int {
	n := len(f.p.Enum) + len(f.p.OneOf)
	if f.p.Items != nil {
		n += len(f.p.Items.Enum) + len(f.p.Items.AnyOf)
	}
	return n
}

func validFieldName(n string) bool {
	if len(n) == 0 || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
