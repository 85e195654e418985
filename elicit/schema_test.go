package elicit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseSchemaRejects(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"not an object", `[]`, "must be a JSON object"},
		{"malformed", `{"type":`, "must be a JSON object"},
		{"not type object", `{"type":"array","properties":{}}`, `type must be "object"`},
		{"no properties", `{"type":"object"}`, "properties must be an object"},
		{"properties not object", `{"type":"object","properties":[]}`, "properties must be an object"},
		{"top-level $ref", `{"type":"object","properties":{},"$ref":"#/x"}`, `keyword "$ref"`},
		{"top-level allOf", `{"type":"object","properties":{},"allOf":[]}`, `keyword "allOf"`},
		{"nested object", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`, `keyword "properties" is not allowed`},
		{"object without properties", `{"type":"object","properties":{"a":{"type":"object"}}}`, `type "object" is not a form primitive`},
		{"array of objects", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object"}}}}`, "items must be strings"},
		{"array of object with properties", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{}}}}}`, `not "properties"`},
		{"array of numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"number","enum":["1"]}}}}`, "items must be strings"},
		{"array without enum", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, "multi-select string enums"},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array"}}}`, "needs items"},
		{"$ref property", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`, `keyword "$ref"`},
		{"$ref beside type", `{"type":"object","properties":{"a":{"type":"string","$ref":"#/x"}}}`, `keyword "$ref"`},
		{"anyOf property", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}`, `keyword "anyOf"`},
		{"pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"^x$"}}}`, `keyword "pattern"`},
		{"type list", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, "type has the wrong type"},
		{"no type", `{"type":"object","properties":{"a":{"title":"A"}}}`, "type is missing"},
		{"null type", `{"type":"object","properties":{"a":{"type":"null"}}}`, `type "null"`},
		{"format on number", `{"type":"object","properties":{"a":{"type":"number","format":"email"}}}`, `keyword "format" does not apply to type "number"`},
		{"minimum on string", `{"type":"object","properties":{"a":{"type":"string","minimum":1}}}`, `keyword "minimum" does not apply`},
		{"bad format", `{"type":"object","properties":{"a":{"type":"string","format":"ipv4"}}}`, `format "ipv4"`},
		{"enum and oneOf", `{"type":"object","properties":{"a":{"type":"string","enum":["x"],"oneOf":[{"const":"x","title":"X"}]}}}`, "enum and oneOf together"},
		{"oneOf without const", `{"type":"object","properties":{"a":{"type":"string","oneOf":[{"title":"X"}]}}}`, "needs a string const"},
		{"oneOf without title", `{"type":"object","properties":{"a":{"type":"string","oneOf":[{"const":"x"}]}}}`, "needs a title"},
		{"empty enum", `{"type":"object","properties":{"a":{"type":"string","enum":[]}}}`, "at least one choice"},
		{"enumNames length", `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"enumNames":["X"]}}}`, "differ in length"},
		{"enumNames alone", `{"type":"object","properties":{"a":{"type":"string","enumNames":["X"]}}}`, "enumNames without enum"},
		{"required unknown", `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, `required "b" is not a property`},
		{"required twice", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`, "listed twice"},
		{"required not a list", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`, "required must be an array"},
		{"duplicate property", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"number"}}}`, "appears twice"},
		{"default wrong type", `{"type":"object","properties":{"a":{"type":"integer","default":"1"}}}`, "default does not fit"},
		{"default object", `{"type":"object","properties":{"a":{"type":"string","default":{}}}}`, "default is not a string"},
		{"secret name", `{"type":"object","properties":{"api_key":{"type":"string"}}}`, "URL mode"},
		{"secret description", `{"type":"object","properties":{"k":{"type":"string","description":"Your card number"}}}`, "URL mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchema(json.RawMessage(tt.schema))
			if err == nil || !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseSchema = %v, want an ErrBadSchema containing %q", err, tt.want)
			}
		})
	}
}

func TestParseSchemaAccepts(t *testing.T) {
	for name, schema := range map[string]string{
		"every primitive at once":          `{"type":"object","properties":{"fullName":{"type":"string","title":"Full name","minLength":1},"arrival":{"type":"string","format":"date"},"adults":{"type":"integer","minimum":1,"maximum":4,"default":1},"breakfast":{"type":"boolean","default":false},"room":{"type":"string","oneOf":[{"const":"std","title":"Standard"},{"const":"ste","title":"Suite"}]},"extras":{"type":"array","items":{"type":"string","enum":["parking","late-checkout"]},"maxItems":2}},"required":["fullName","arrival"]}`,
		"$schema and additionalProperties": `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`,
		"legacy enumNames":                 `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"enumNames":["Ex","Why"]}}}`,
		"unknown annotation ignored":       `{"type":"object","properties":{"a":{"type":"string","examples":["x"],"x-ui":"wide"}}}`,
		"empty form":                       `{"type":"object","properties":{}}`,
		"null required":                    `{"type":"object","properties":{},"required":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseSchema(json.RawMessage(schema)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseSchemaForAnswersIsLenientOnlyWhereSafe(t *testing.T) {
	// Received from elsewhere: untitled oneOf entries and secret-looking
	// names can still be validated against.
	s, err := ParseSchemaForAnswers(json.RawMessage(`{"type":"object","properties":{"password_hint":{"type":"string","oneOf":[{"const":"a"},{"const":"b"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ValidateContent(map[string]any{"password_hint": "c"}); err == nil {
		t.Fatal("non-member accepted")
	}
	// Structure is still enforced.
	if _, err := ParseSchemaForAnswers(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/x"}}}`)); !errors.Is(err, ErrBadSchema) {
		t.Fatalf("$ref accepted: %v", err)
	}
}
