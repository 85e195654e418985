package elicit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/mcp-elicit/elicit/internal/typeschema"
)

// FormFor builds the requestedSchema of a form-mode elicitation from the
// struct type T, one property per field, in field order, through
// FormSchema (so every rule of FormSchema holds, the secret guard
// included). Ask with it, and read the answer with Decode[T].
//
// Fields become properties by their json names (json:"-" skips one), and
// are required unless tagged omitempty or omitzero. Their Go types choose
// the property:
//
//   - string (and named string types): a text field; with an enum tag, a
//     single choice (with enumTitles, a titled one);
//   - bool: a yes/no field;
//   - int and uint kinds: a whole number (unsigned ones have minimum 0);
//   - float32, float64: a number;
//   - time.Time: a text field of format date-time;
//   - []string (or an array of strings) with an enum tag: a multi-select;
//   - a pointer to one of these: the same, and nil when not answered.
//
// Struct tags refine a property, each named after the keyword it sets;
// lists are separated by "|":
//
//	type Options struct {
//		Detail string `json:"detail" title:"Detail level" enum:"summary|detailed" enumTitles:"Summary|Detailed"`
//		Label  string `json:"label" title:"Label" description:"A name for the draft." minLength:"1" maxLength:"80"`
//		Copies int    `json:"copies,omitempty" minimum:"1" maximum:"5" default:"1"`
//		Email  string `json:"email,omitempty" format:"email"`
//	}
//
// title, description (or the jsonschema tag), enum and enumTitles,
// minLength and maxLength, format (email, uri, date, date-time), minimum
// and maximum, minItems and maxItems, default (what clients pre-fill), and
// notSecret (a reason, for a field the secret guard refuses wrongly; see
// Field.DeclareNotSecret).
//
// What form mode cannot carry is refused here, when the form is built,
// with an error wrapping ErrBadSchema: a nested struct, a pointer to one,
// a map, a list of anything but strings or without an enum, an
// interface, a pattern or header tag. A field whose name, title or
// description looks like a secret is refused too, wrapping
// ErrSecretField (ELI-S-01): ask for secrets in URL mode (ELI-S-02).
//
// The schema of a type is built once and kept; FormFor is safe for
// concurrent use.
func FormFor[T any]() (*Schema, error) {
	t := reflect.TypeFor[T]()
	if s, ok := formCache.Load(t); ok {
		return s.(*Schema), nil
	}
	s, err := formFor(t)
	if err != nil {
		return nil, err
	}
	formCache.Store(t, s)
	return s, nil
}

// MustFormFor is FormFor for forms declared at package level: it panics
// on an error, which a test that loads the package catches.
func MustFormFor[T any]() *Schema {
	s, err := FormFor[T]()
	if err != nil {
		panic(err)
	}
	return s
}

var formCache sync.Map // reflect.Type → *Schema

var timeType = reflect.TypeFor[time.Time]()

func formFor(t reflect.Type) (*Schema, error) {
	if t.Kind() != reflect.Struct || t == timeType {
		return nil, badf("%s is not a struct: a form is built from a struct's fields", t)
	}
	var fields []*Field
	for _, f := range typeschema.Fields(t) {
		fd, err := formField(f)
		if err != nil {
			return nil, fmt.Errorf("%w: field %s (%q): %w", ErrBadSchema, f.StructField.Name, f.Name, err)
		}
		fields = append(fields, fd)
	}
	return FormSchema(fields...)
}

// formField builds the form field of one struct field: its kind from the
// Go type, then what its tags say.
func formField(f typeschema.Field) (*Field, error) {
	tg, err := typeschema.ParseTags(f.StructField)
	if err != nil {
		return nil, err
	}
	if tg.Pattern != "" || tg.Header != "" {
		return nil, fmt.Errorf("pattern and header cannot be used in a form (ELI-S-06)")
	}
	ft := f.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	fd, err := fieldOfType(f.Name, ft, tg)
	if err != nil {
		return nil, err
	}
	if tg.Enum != nil && fd.kind < kindEnum {
		return nil, fmt.Errorf("enum applies to strings and lists of strings in a form")
	}
	desc := tg.Description
	if desc == "" {
		desc = f.Tag.Get("jsonschema")
	}
	fd.Title(tg.Title).Description(desc)
	if !f.Optional {
		fd.Required()
	}
	applyFieldTags(fd, tg)
	if !tg.HasDefault {
		return fd, nil
	}
	var def any = tg.Default // a time.Time's default is its text
	switch {
	case fd.kind == kindMultiEnum || fd.kind == kindTitledMultiEnum:
		def = strings.Split(tg.Default, "|")
	case ft != timeType:
		if def, err = typeschema.Scalar(ft.Kind(), tg.Default); err != nil {
			return nil, fmt.Errorf("default %q: %v", tg.Default, err)
		}
	}
	fd.Default(def)
	return fd, nil
}

// fieldOfType picks the primitive a Go type is asked as (ELI-S-06):
// text (an enum or a titled enum with an enum tag), date-time for a
// time.Time, boolean, integer (at least 0 when unsigned), number, or a
// multi-select for a list of strings.
func fieldOfType(name string, ft reflect.Type, tg typeschema.Tags) (*Field, error) {
	switch kind := ft.Kind(); {
	case ft == timeType:
		return String(name).Format(FormatDateTime), nil
	case kind == reflect.String && tg.EnumTitles != nil:
		return TitledEnum(name, choicesOf(tg)...), nil
	case kind == reflect.String && tg.Enum != nil:
		return Enum(name, tg.Enum...), nil
	case kind == reflect.String:
		return String(name), nil
	case kind == reflect.Bool:
		return Boolean(name), nil
	case kind >= reflect.Int && kind <= reflect.Int64:
		return Integer(name), nil
	case kind >= reflect.Uint && kind <= reflect.Uint64 && tg.Minimum == nil:
		return Integer(name).Minimum(0), nil
	case kind >= reflect.Uint && kind <= reflect.Uint64:
		return Integer(name), nil
	case kind == reflect.Float32 || kind == reflect.Float64:
		return Number(name), nil
	case (kind == reflect.Slice || kind == reflect.Array) && ft.Elem().Kind() == reflect.String:
		return multiSelectField(name, tg)
	}
	return nil, unaskable(ft)
}

// multiSelectField is a list of strings: a multi-select, so it needs choices.
func multiSelectField(name string, tg typeschema.Tags) (*Field, error) {
	switch {
	case tg.EnumTitles != nil:
		return TitledMultiEnum(name, choicesOf(tg)...), nil
	case tg.Enum != nil:
		return MultiEnum(name, tg.Enum...), nil
	}
	return nil, fmt.Errorf("a list in a form is a multi-select: give it an enum tag (ELI-S-06)")
}

// unaskable says why a type cannot be a form field.
func unaskable(ft reflect.Type) error {
	switch ft.Kind() {
	case reflect.Struct:
		return fmt.Errorf("nested objects cannot be asked in form mode (flat primitives only, ELI-S-06)")
	case reflect.Map:
		return fmt.Errorf("maps cannot be asked in form mode (flat primitives only, ELI-S-06)")
	case reflect.Slice, reflect.Array:
		return fmt.Errorf("lists of %s cannot be asked in form mode: only multi-selects of strings (ELI-S-06)", ft.Elem())
	}
	return fmt.Errorf("a %s cannot be asked in form mode (flat primitives only, ELI-S-06)", ft)
}

// applyFieldTags sets the constraints the tags give; FormSchema checks
// that they apply to the field's kind.
func applyFieldTags(fd *Field, tg typeschema.Tags) {
	if tg.MinLength != nil {
		fd.MinLength(*tg.MinLength)
	}
	if tg.MaxLength != nil {
		fd.MaxLength(*tg.MaxLength)
	}
	if tg.Format != "" {
		fd.Format(Format(tg.Format))
	}
	if tg.Minimum != nil {
		fd.Minimum(*tg.Minimum)
	}
	if tg.Maximum != nil {
		fd.Maximum(*tg.Maximum)
	}
	if tg.MinItems != nil {
		fd.MinItems(*tg.MinItems)
	}
	if tg.MaxItems != nil {
		fd.MaxItems(*tg.MaxItems)
	}
	if tg.NotSecret != "" {
		fd.DeclareNotSecret(tg.NotSecret)
	}
}

func choicesOf(tg typeschema.Tags) []Choice {
	cs := make([]Choice, len(tg.Enum))
	for i, v := range tg.Enum {
		cs[i] = Choice{Value: v, Title: tg.EnumTitles[i]}
	}
	return cs
}

// AnswerOf is a form answer read as a T (Decode).
type AnswerOf[T any] struct {
	// Outcome is the answer's outcome: accept, decline and cancel stay
	// distinct (ELI-S-08).
	Outcome Outcome
	// Value is the answer when Outcome is Accepted, the zero T otherwise.
	// Properties the user left out (optional ones) are zero, or nil for
	// pointer fields.
	Value T
	// Problem says why an answer is Invalid, in words fit for the user;
	// asking the same key again sends it to the user (see
	// mcpserver.InputRequired). Empty otherwise.
	Problem string
}

// Decode reads a form answer, already validated against the schema that
// was asked (mcpserver's Request.Elicitation does that), as a T: the type
// the form was built from with FormFor. Declined, cancelled, missing and
// invalid answers keep their outcome and have a zero Value. An accepted
// answer that does not decode into T, which means the form asked was not
// FormFor[T]'s, reads as Invalid.
func Decode[T any](a Answer) AnswerOf[T] {
	out := AnswerOf[T]{Outcome: a.Outcome, Problem: a.Problem}
	if a.Outcome != Accepted {
		return out
	}
	content := a.Content
	if content == nil {
		content = map[string]any{}
	}
	b, err := json.Marshal(content)
	if err == nil {
		err = jsonv2.Unmarshal(b, &out.Value, jsonv2.RejectUnknownMembers(true))
	}
	if err != nil {
		var zero T
		return AnswerOf[T]{Outcome: Invalid, Value: zero, Problem: "the answer does not fit the form that was asked"}
	}
	return out
}
