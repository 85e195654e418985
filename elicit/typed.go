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
	kind := ft.Kind()
	var fd *Field
	switch {
	case ft == timeType:
		fd = String(f.Name).Format(FormatDateTime)
	case kind == reflect.String && tg.EnumTitles != nil:
		fd = TitledEnum(f.Name, choicesOf(tg)...)
	case kind == reflect.String && tg.Enum != nil:
		fd = Enum(f.Name, tg.Enum...)
	case kind == reflect.String:
		fd = String(f.Name)
	case kind == reflect.Bool:
		fd = Boolean(f.Name)
	case kind >= reflect.Int && kind <= reflect.Int64:
		fd = Integer(f.Name)
	case kind >= reflect.Uint && kind <= reflect.Uint64:
		fd = Integer(f.Name)
		if tg.Minimum == nil {
			fd.Minimum(0)
		}
	case kind == reflect.Float32 || kind == reflect.Float64:
		fd = Number(f.Name)
	case (kind == reflect.Slice || kind == reflect.Array) && ft.Elem().Kind() == reflect.String:
		switch {
		case tg.EnumTitles != nil:
			fd = TitledMultiEnum(f.Name, choicesOf(tg)...)
		case tg.Enum != nil:
			fd = MultiEnum(f.Name, tg.Enum...)
		default:
			return nil, fmt.Errorf("a list in a form is a multi-select: give it an enum tag (ELI-S-06)")
		}
	case kind == reflect.Struct:
		return nil, fmt.Errorf("nested objects cannot be asked in form mode (flat primitives only, ELI-S-06)")
	case kind == reflect.Map:
		return nil, fmt.Errorf("maps cannot be asked in form mode (flat primitives only, ELI-S-06)")
	case kind == reflect.Slice || kind == reflect.Array:
		return nil, fmt.Errorf("lists of %s cannot be asked in form mode: only multi-selects of strings (ELI-S-06)", ft.Elem())
	default:
		return nil, fmt.Errorf("a %s cannot be asked in form mode (flat primitives only, ELI-S-06)", ft)
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
	if tg.HasDefault {
		var def any = tg.Default // a time.Time's default is its text
		switch {
		case fd.kind == kindMultiEnum || fd.kind == kindTitledMultiEnum:
			def = strings.Split(tg.Default, "|")
		case ft != timeType:
			if def, err = typeschema.Scalar(kind, tg.Default); err != nil {
				return nil, fmt.Errorf("default %q: %v", tg.Default, err)
			}
		}
		fd.Default(def)
	}
	return fd, nil
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
