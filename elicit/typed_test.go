package elicit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type exportOptions struct {
	Detail  string    `json:"detail" title:"Detail level" enum:"summary|detailed" enumTitles:"Summary|Detailed, with charts"`
	Label   string    `json:"label" title:"Label" description:"A name for the draft." minLength:"1" maxLength:"80"`
	Copies  int       `json:"copies,omitempty" minimum:"1" maximum:"5" default:"1"`
	Ratio   float64   `json:"ratio,omitzero"`
	Email   *string   `json:"email,omitempty" format:"email"`
	Notify  bool      `json:"notify"`
	When    time.Time `json:"when,omitzero"`
	Formats []string  `json:"formats,omitempty" enum:"pdf|csv" minItems:"1" default:"pdf"`
	Count   uint      `json:"count,omitempty"`
	Budget  int       `json:"token_budget,omitempty" notSecret:"counts model tokens, not a credential"`
	Skipped string    `json:"-"`
}

func TestFormFor(t *testing.T) {
	s, err := FormFor[exportOptions]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"detail":{"type":"string","title":"Detail level","oneOf":[{"const":"summary","title":"Summary"},{"const":"detailed","title":"Detailed, with charts"}]},` +
		`"label":{"type":"string","title":"Label","description":"A name for the draft.","minLength":1,"maxLength":80},` +
		`"copies":{"type":"integer","minimum":1,"maximum":5,"default":1},` +
		`"ratio":{"type":"number"},` +
		`"email":{"type":"string","format":"email"},` +
		`"notify":{"type":"boolean"},` +
		`"when":{"type":"string","format":"date-time"},` +
		`"formats":{"type":"array","items":{"type":"string","enum":["pdf","csv"]},"minItems":1,"default":["pdf"]},` +
		`"count":{"type":"integer","minimum":0},` +
		`"token_budget":{"type":"integer"}},` +
		`"required":["detail","label","notify"]}`
	if got := string(s.JSON()); got != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
	if again, _ := FormFor[exportOptions](); again != s {
		t.Fatal("the schema of a type is not kept")
	}
}

// What form mode cannot carry, or what looks like a secret, is refused
// when the form is built.
func TestFormForRefuses(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	check := func(name string, err error, want string, secret bool) {
		t.Helper()
		if err == nil || !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), want) || errors.Is(err, ErrSecretField) != secret {
			t.Errorf("%s: err = %v, want ErrBadSchema containing %q (secret %v)", name, err, want, secret)
		}
	}
	_, err := FormFor[struct {
		In inner `json:"in"`
	}]()
	check("nested struct", err, "nested objects", false)
	_, err = FormFor[struct {
		In *inner `json:"in"`
	}]()
	check("pointer to struct", err, "nested objects", false)
	_, err = FormFor[struct {
		M map[string]string `json:"m"`
	}]()
	check("map", err, "maps cannot", false)
	_, err = FormFor[struct {
		L []inner `json:"l"`
	}]()
	check("list of objects", err, "lists of elicit.inner cannot", false)
	_, err = FormFor[struct {
		L []int `json:"l" enum:"1|2"`
	}]()
	check("list of numbers", err, "lists of int cannot", false)
	_, err = FormFor[struct {
		L []string `json:"l"`
	}]()
	check("list without enum", err, "give it an enum", false)
	_, err = FormFor[struct {
		V any `json:"v"`
	}]()
	check("interface", err, "cannot be asked in form mode", false)
	_, err = FormFor[struct {
		P string `json:"p" pattern:"^a$"`
	}]()
	check("pattern", err, "pattern and header cannot", false)
	_, err = FormFor[struct {
		N int `json:"n" enum:"1|2"`
	}]()
	check("enum on a number", err, "enum applies to strings", false)
	_, err = FormFor[struct {
		N int `json:"n" minLength:"1"`
	}]()
	check("minLength on a number", err, "MinLength does not apply", false)
	_, err = FormFor[struct {
		D string `json:"d" enum:"a|b" default:"c"`
	}]()
	check("default not a choice", err, "default does not fit", false)
	_, err = FormFor[struct {
		Key string `json:"api_key"`
	}]()
	check("secret name", err, "api key", true)
	_, err = FormFor[struct {
		Code string `json:"code" title:"Your password"`
	}]()
	check("secret title", err, "password", true)
	_, err = FormFor[struct {
		Code string `json:"code" description:"The card number on the front"`
	}]()
	check("secret description", err, "card number", true)
	_, err = FormFor[string]()
	check("not a struct", err, "not a struct", false)
	defer func() {
		if r := recover(); r == nil {
			t.Error("MustFormFor did not panic")
		}
	}()
	MustFormFor[struct {
		In inner `json:"in"`
	}]()
}

func TestDecode(t *testing.T) {
	s := MustFormFor[exportOptions]()
	a := Decode[exportOptions](DecodeAnswer(json.RawMessage(`{"action":"accept","content":{"detail":"detailed","label":"Q3","notify":true,"copies":2,"email":"a@b.example","when":"2026-07-28T09:30:00Z","formats":["csv","pdf"],"count":3,"extra":"dropped"}}`), s))
	email := "a@b.example"
	want := exportOptions{Detail: "detailed", Label: "Q3", Notify: true, Copies: 2, Email: &email,
		When: time.Date(2026, 7, 28, 9, 30, 0, 0, time.UTC), Formats: []string{"csv", "pdf"}, Count: 3}
	if a.Outcome != Accepted || !reflect.DeepEqual(a.Value, want) {
		t.Fatalf("accepted: %+v", a)
	}
	a = Decode[exportOptions](DecodeAnswer(json.RawMessage(`{"action":"accept","content":{"detail":"summary","label":"x","notify":false}}`), s))
	if a.Outcome != Accepted || a.Value.Email != nil || a.Value.Copies != 0 || a.Value.Formats != nil {
		t.Fatalf("optional members left out: %+v", a)
	}
	for raw, want := range map[string]Outcome{
		`{"action":"decline"}`: Declined,
		`{"action":"cancel"}`:  Cancelled,
		`null`:                 Missing,
		`{"action":"accept","content":{"detail":"huge","label":"x","notify":true}}`: Invalid,
	} {
		a := Decode[exportOptions](DecodeAnswer(json.RawMessage(raw), s))
		if a.Outcome != want || a.Value.Label != "" || (want == Invalid) != (a.Problem != "") {
			t.Errorf("%s: %+v, want %v", raw, a, want)
		}
	}
	// Read as another type than the form's: invalid, not a silent zero.
	other := Decode[struct {
		Name string `json:"name"`
	}](DecodeAnswer(json.RawMessage(`{"action":"accept","content":{"detail":"summary","label":"x","notify":true}}`), s))
	if other.Outcome != Invalid || other.Problem == "" {
		t.Fatalf("other type: %+v", other)
	}
}

// Whatever the client sends, Decode never panics, and an accepted value
// keeps the form's rules.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"action":"accept","content":{"detail":"summary","label":"x","notify":true}}`,
		`{"action":"accept","content":{"copies":1e300,"label":"x"}}`, `{"action":"decline","content":{"a":1}}`, `[]`} {
		f.Add(s)
	}
	s := MustFormFor[exportOptions]()
	f.Fuzz(func(t *testing.T, raw string) {
		a := Decode[exportOptions](DecodeAnswer(json.RawMessage(raw), s))
		if a.Outcome != Accepted {
			return
		}
		v := a.Value
		if (v.Detail != "summary" && v.Detail != "detailed") || v.Label == "" || len([]rune(v.Label)) > 80 || v.Copies < 0 || v.Copies > 5 {
			t.Fatalf("accepted %+v from %s", v, raw)
		}
	})
}
