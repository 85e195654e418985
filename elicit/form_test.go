package elicit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestFormSchemaKinds(t *testing.T) {
	tests := []struct {
		name  string
		field *Field
		want  string // the property's wire JSON
	}{
		{"string", String("s"), `{"type":"string"}`},
		{"string with bounds and title", String("label").Title("Label").Description("Shown on the report").MinLength(1).MaxLength(80),
			`{"type":"string","title":"Label","description":"Shown on the report","minLength":1,"maxLength":80}`},
		{"email", String("e").Format(FormatEmail), `{"type":"string","format":"email"}`},
		{"uri", String("u").Format(FormatURI), `{"type":"string","format":"uri"}`},
		{"date", String("d").Format(FormatDate), `{"type":"string","format":"date"}`},
		{"date-time", String("dt").Format(FormatDateTime), `{"type":"string","format":"date-time"}`},
		{"string default", String("s").Default("hi"), `{"type":"string","default":"hi"}`},
		{"empty string default", String("s").Default(""), `{"type":"string","default":""}`},
		{"number", Number("n").Minimum(0).Maximum(100).Default(95.5), `{"type":"number","minimum":0,"maximum":100,"default":95.5}`},
		{"integer", Integer("i").Minimum(1).Maximum(4).Default(1), `{"type":"integer","minimum":1,"maximum":4,"default":1}`},
		{"integer default zero", Integer("i").Default(0), `{"type":"integer","default":0}`},
		{"boolean", Boolean("b").Title("Breakfast"), `{"type":"boolean","title":"Breakfast"}`},
		{"boolean default false", Boolean("b").Default(false), `{"type":"boolean","default":false}`},
		{"enum", Enum("e", "a", "b").Default("b"), `{"type":"string","enum":["a","b"],"default":"b"}`},
		{"titled enum", TitledEnum("detail", Choice{"summary", "Summary"}, Choice{"detailed", "Detailed"}),
			`{"type":"string","oneOf":[{"const":"summary","title":"Summary"},{"const":"detailed","title":"Detailed"}]}`},
		{"multi enum", MultiEnum("m", "x", "y").MinItems(1).MaxItems(2).Default([]string{"x"}),
			`{"type":"array","items":{"type":"string","enum":["x","y"]},"minItems":1,"maxItems":2,"default":["x"]}`},
		{"titled multi enum", TitledMultiEnum("m", Choice{"x", "Ex"}, Choice{"y", "Why"}),
			`{"type":"array","items":{"anyOf":[{"const":"x","title":"Ex"},{"const":"y","title":"Why"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FormSchema(tt.field)
			if err != nil {
				t.Fatalf("FormSchema: %v", err)
			}
			var top struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(s.JSON(), &top); err != nil {
				t.Fatal(err)
			}
			if got := string(top.Properties[s.Order[0]]); got != tt.want {
				t.Fatalf("property JSON\n got %s\nwant %s", got, tt.want)
			}
			// The wire form parses back to the same schema.
			again, err := ParseSchema(s.JSON())
			if err != nil {
				t.Fatalf("ParseSchema(FormSchema output): %v", err)
			}
			if again.Properties[s.Order[0]].Type != s.Properties[s.Order[0]].Type {
				t.Fatal("round trip changed the type")
			}
		})
	}
}

func TestFormSchemaWhole(t *testing.T) {
	s, err := FormSchema(
		TitledEnum("detail", Choice{"summary", "Summary"}, Choice{"detailed", "Detailed"}).Title("Detail level").Required(),
		String("label").Title("Label").MinLength(1).MaxLength(80).Required(),
		Boolean("notify"),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"detail":{"type":"string","title":"Detail level","oneOf":[{"const":"summary","title":"Summary"},{"const":"detailed","title":"Detailed"}]},` +
		`"label":{"type":"string","title":"Label","minLength":1,"maxLength":80},"notify":{"type":"boolean"}},"required":["detail","label"]}`
	if got := string(s.JSON()); got != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
	if strings.Join(s.Order, ",") != "detail,label,notify" || strings.Join(s.Required, ",") != "detail,label" {
		t.Fatalf("order %v required %v", s.Order, s.Required)
	}
	if p := s.Properties["detail"]; strings.Join(p.EnumTitles, ",") != "Summary,Detailed" {
		t.Fatalf("titles %v", p.EnumTitles)
	}
	b, _ := json.Marshal(map[string]any{"requestedSchema": s})
	if !strings.Contains(string(b), want) {
		t.Fatalf("MarshalJSON: %s", b)
	}
	empty, err := FormSchema()
	if err != nil || string(empty.JSON()) != `{"type":"object","properties":{}}` {
		t.Fatalf("empty form: %s %v", empty.JSON(), err)
	}
}

func TestFormSchemaRejects(t *testing.T) {
	tests := []struct {
		name   string
		fields []*Field
		want   string // part of the error
		secret bool   // wraps ErrSecretField
	}{
		{"nil field", []*Field{nil}, "field 0 is nil", false},
		{"empty name", []*Field{String("")}, "must be 1 to 64", false},
		{"bad name", []*Field{String("a b")}, "must be 1 to 64", false},
		{"long name", []*Field{String(strings.Repeat("x", 65))}, "must be 1 to 64", false},
		{"twice", []*Field{String("a"), Boolean("a")}, "defined twice", false},
		{"minLength on boolean", []*Field{Boolean("b").MinLength(1)}, "MinLength does not apply to a boolean", false},
		{"maxLength on enum", []*Field{Enum("e", "x").MaxLength(3)}, "MaxLength does not apply to a enum", false},
		{"format on number", []*Field{Number("n").Format(FormatEmail)}, "Format does not apply", false},
		{"unknown format", []*Field{String("s").Format("hostname")}, `format "hostname"`, false},
		{"minimum on string", []*Field{String("s").Minimum(1)}, "Minimum does not apply", false},
		{"maximum on boolean", []*Field{Boolean("b").Maximum(1)}, "Maximum does not apply", false},
		{"minItems on enum", []*Field{Enum("e", "x").MinItems(1)}, "MinItems does not apply", false},
		{"maxItems on string", []*Field{String("s").MaxItems(1)}, "MaxItems does not apply", false},
		{"min above max length", []*Field{String("s").MinLength(5).MaxLength(2)}, "minLength is above maxLength", false},
		{"negative length", []*Field{String("s").MinLength(-1)}, "must not be negative", false},
		{"min above max", []*Field{Number("n").Minimum(5).Maximum(2)}, "minimum is above maximum", false},
		{"min above max items", []*Field{MultiEnum("m", "a", "b").MinItems(2).MaxItems(1)}, "minItems is above maxItems", false},
		{"enum without choices", []*Field{Enum("e")}, "needs at least one choice", false},
		{"titled enum without choices", []*Field{TitledEnum("e")}, "needs at least one choice", false},
		{"multi without choices", []*Field{MultiEnum("m")}, "needs at least one choice", false},
		{"repeated choice", []*Field{Enum("e", "a", "a")}, "listed twice", false},
		{"untitled choice", []*Field{TitledEnum("e", Choice{"a", ""})}, "needs a title", false},
		{"default type", []*Field{Boolean("b").Default("yes")}, "default does not fit", false},
		{"default not a choice", []*Field{Enum("e", "a").Default("z")}, "default does not fit", false},
		{"default too long", []*Field{String("s").MaxLength(2).Default("abc")}, "default does not fit", false},
		{"default below minimum", []*Field{Integer("i").Minimum(1).Default(0)}, "default does not fit", false},
		{"default fraction on integer", []*Field{Integer("i").Default(1.5)}, "default does not fit", false},
		{"default unsupported Go type", []*Field{String("s").Default(struct{}{})}, "is not a string, number", false},
		{"default multi not a choice", []*Field{MultiEnum("m", "a").Default([]string{"b"})}, "default does not fit", false},
		{"override without reason", []*Field{String("token_budget").DeclareNotSecret("")}, "needs a reason", false},
		{"secret name", []*Field{String("api_key")}, `property "api_key": its name mentions "api key"`, true},
		{"secret title", []*Field{String("k").Title("Your password")}, `its title mentions "password"`, true},
		{"secret description", []*Field{String("k").Description("Paste the access token here")}, `its description mentions "token"`, true},
		{"card data", []*Field{String("cardNumber")}, `mentions "card number"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FormSchema(tt.fields...)
			if err == nil {
				t.Fatalf("accepted: %s", s.JSON())
			}
			if !errors.Is(err, ErrBadSchema) {
				t.Errorf("error does not wrap ErrBadSchema: %v", err)
			}
			if errors.Is(err, ErrSecretField) != tt.secret {
				t.Errorf("errors.Is(err, ErrSecretField) = %v, want %v", !tt.secret, tt.secret)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if tt.secret && !strings.Contains(err.Error(), "URL mode") {
				t.Errorf("secret error does not point to URL mode: %v", err)
			}
		})
	}
}

func TestDeclareNotSecret(t *testing.T) {
	f := Boolean("pin").Title("Pin to the top").DeclareNotSecret("pins the note to the top of the list; holds no secret")
	s, err := FormSchema(f)
	if err != nil {
		t.Fatalf("override refused: %v", err)
	}
	// The override is the builder's alone: the same JSON sent raw is refused,
	// but its answers can still be read back.
	if _, err := ParseSchema(s.JSON()); !errors.Is(err, ErrSecretField) {
		t.Fatalf("ParseSchema of the raw JSON: %v", err)
	}
	back, err := ParseSchemaForAnswers(s.JSON())
	if err != nil {
		t.Fatalf("ParseSchemaForAnswers: %v", err)
	}
	if _, err := back.ValidateContent(map[string]any{"pin": true}); err != nil {
		t.Fatal(err)
	}
	// Overriding one field does not switch the guard off for the others.
	if _, err := FormSchema(f, String("password")); !errors.Is(err, ErrSecretField) {
		t.Fatalf("second field: %v", err)
	}
}
