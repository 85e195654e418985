package elicit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/mcp-elicit/elicit/internal/termtext"
)

// fullSchema has one property of every kind.
var fullSchema = json.RawMessage(`{"type":"object","properties":{
 "label":{"type":"string","title":"Label","minLength":1,"maxLength":5},
 "email":{"type":"string","format":"email"},
 "site":{"type":"string","format":"uri"},
 "day":{"type":"string","format":"date"},
 "at":{"type":"string","format":"date-time"},
 "score":{"type":"number","minimum":0,"maximum":100},
 "count":{"type":"integer","minimum":1,"maximum":4},
 "ok":{"type":"boolean"},
 "level":{"type":"string","enum":["low","high"]},
 "detail":{"type":"string","oneOf":[{"const":"summary","title":"Summary"},{"const":"detailed","title":"Detailed"}]},
 "legacy":{"type":"string","enum":["a","b"],"enumNames":["A","B"]},
 "tags":{"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1,"maxItems":2},
 "flags":{"type":"array","items":{"anyOf":[{"const":"p","title":"P"},{"const":"q","title":"Q"}]}}
},"required":["label","flags"]}`)

func mustParse(t testing.TB, raw json.RawMessage) *Schema {
	t.Helper()
	s, err := ParseSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidateContent(t *testing.T) {
	s := mustParse(t, fullSchema)
	base := func() map[string]any { return map[string]any{"label": "ok", "flags": []any{"p"}} }
	with := func(k string, v any) map[string]any { m := base(); m[k] = v; return m }
	without := func(k string) map[string]any { m := base(); delete(m, k); return m }
	tests := []struct {
		name     string
		content  map[string]any
		property string // "" = valid
		rule     string
	}{
		{"minimal", base(), "", ""},
		{"missing required", without("label"), "label", "required"},
		{"null required reads as absent", with("label", nil), "label", "required"},
		{"null optional reads as absent", with("email", nil), "", ""},
		{"empty multi-select when required", with("flags", []any{}), "flags", "required"},
		{"string type", with("label", 5.0), "label", "type"},
		{"string too short", with("label", ""), "label", "minLength"},
		{"string too long", with("label", "abcdef"), "label", "maxLength"},
		{"length counts code points", with("label", "ééééé"), "", ""},
		{"email ok", with("email", "ada@example.com"), "", ""},
		{"email bad", with("email", "ada@example"), "email", "format"},
		{"email spaces", with("email", "a da@example.com"), "email", "format"},
		{"uri ok", with("site", "https://example.com/x"), "", ""},
		{"uri relative", with("site", "/x"), "site", "format"},
		{"uri with space", with("site", "https://exa mple.com"), "site", "format"},
		{"date ok", with("day", "2026-07-28"), "", ""},
		{"date bad", with("day", "28/07/2026"), "day", "format"},
		{"date impossible", with("day", "2026-02-30"), "day", "format"},
		{"date-time ok", with("at", "2026-07-28T09:30:00Z"), "", ""},
		{"date-time offset", with("at", "2026-07-28T09:30:00+02:00"), "", ""},
		{"date-time bad", with("at", "2026-07-28 09:30"), "at", "format"},
		{"number 95.5", with("score", 95.5), "", ""},
		{"number as string", with("score", "95.5"), "score", "type"},
		{"number below minimum", with("score", -0.5), "score", "minimum"},
		{"number above maximum", with("score", 100.5), "score", "maximum"},
		{"integer", with("count", 3.0), "", ""},
		{"integer fraction", with("count", 2.5), "count", "integer"},
		{"integer below minimum", with("count", 0.0), "count", "minimum"},
		{"integer above maximum", with("count", 5.0), "count", "maximum"},
		{"integer json.Number", with("count", json.Number("2")), "", ""},
		{"boolean", with("ok", false), "", ""},
		{"boolean as string", with("ok", "true"), "ok", "type"},
		{"enum member", with("level", "high"), "", ""},
		{"enum non-member", with("level", "medium"), "level", "enum"},
		{"titled enum const", with("detail", "detailed"), "", ""},
		{"titled enum by title", with("detail", "Detailed"), "detail", "enum"},
		{"legacy enumNames member", with("legacy", "b"), "", ""},
		{"legacy enumNames by name", with("legacy", "B"), "legacy", "enum"},
		{"multi ok", with("tags", []any{"x", "z"}), "", ""},
		{"multi non-member", with("tags", []any{"w"}), "tags", "enum"},
		{"multi repeated", with("tags", []any{"x", "x"}), "tags", "uniqueItems"},
		{"multi too few", with("tags", []any{}), "tags", "minItems"},
		{"multi too many", with("tags", []any{"x", "y", "z"}), "tags", "maxItems"},
		{"multi not a list", with("tags", "x"), "tags", "type"},
		{"multi of numbers", with("tags", []any{1.0}), "tags", "type"},
		{"titled multi", with("flags", []any{"p", "q"}), "", ""},
		{"titled multi by title", with("flags", []any{"P"}), "flags", "enum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := s.ValidateContent(tt.content)
			if tt.property == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if out == nil {
					t.Fatal("nil content")
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) != 1 || ve.Problems[0].Property != tt.property || ve.Problems[0].Rule != tt.rule {
				t.Fatalf("problems = %+v, want %s/%s", ve.Problems, tt.property, tt.rule)
			}
		})
	}
}

func TestValidateContentCleansAndNamesNoValues(t *testing.T) {
	s := mustParse(t, fullSchema)
	out, err := s.ValidateContent(map[string]any{
		"label": "Q3", "flags": []any{"q"}, "score": 95.5, "tags": []any{"y"},
		"extra": "dropped", "nested": map[string]any{"a": 1.0}, "__proto__": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"label": "Q3", "flags": []string{"q"}, "score": 95.5, "tags": []string{"y"}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("content = %#v, want %#v", out, want)
	}
	if err := s.Validate(map[string]any{"label": "ok", "flags": []any{"p"}, "unknown": 1.0}); err != nil {
		t.Fatalf("Validate refused an extra key: %v", err)
	}

	// Every problem is listed, in schema order, by title and name, a
	// missing one as missing, without values (a wrong type says the kind
	// of value found).
	_, err = s.ValidateContent(map[string]any{"label": "SECRETVALUE-TOO-LONG", "count": 9.0, "level": "PRIVATE-CHOICE", "ok": "SECRETTEXT"})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 5 {
		t.Fatalf("err = %v", err)
	}
	got := err.Error()
	for _, w := range []string{"Label (label): must be at most 5 characters", "count: must be at most 4", "level: must be one of the choices",
		"ok: must be true or false, not text", "flags: missing; it is required"} {
		if !strings.Contains(got, w) {
			t.Errorf("error %q lacks %q", got, w)
		}
	}
	if strings.Contains(got, "SECRETVALUE") || strings.Contains(got, "PRIVATE-CHOICE") || strings.Contains(got, "SECRETTEXT") {
		t.Fatalf("error quotes a value: %q", got)
	}
	if _, err := (*Schema)(nil).ValidateContent(nil); !errors.Is(err, ErrBadSchema) {
		t.Fatalf("nil schema: %v", err)
	}
}

func TestDecodeAnswer(t *testing.T) {
	s := mustParse(t, json.RawMessage(`{"type":"object","properties":{"score":{"type":"number","maximum":100},"label":{"type":"string","maxLength":3}},"required":["score"]}`))
	tests := []struct {
		name    string
		raw     string
		schema  *Schema
		want    Outcome
		content map[string]any
		problem string
	}{
		{"absent", ``, s, Missing, nil, ""},
		{"null", `null`, s, Missing, nil, ""},
		{"accept 95.5", `{"action":"accept","content":{"score":95.5}}`, s, Accepted, map[string]any{"score": 95.5}, ""},
		{"accept drops extra keys", `{"action":"accept","content":{"score":1,"x":"y"}}`, s, Accepted, map[string]any{"score": 1.0}, ""},
		{"accept invalid", `{"action":"accept","content":{"score":101}}`, s, Invalid, nil, "score: must be at most 100"},
		{"accept without content", `{"action":"accept"}`, s, Invalid, nil, "score: missing; it is required"},
		{"accept content not an object", `{"action":"accept","content":"x"}`, s, Invalid, nil, problemNotObject},
		{"decline is never validated", `{"action":"decline","content":{"score":"junk"}}`, s, Declined, nil, ""},
		{"decline with non-object content", `{"action":"decline","content":12}`, s, Declined, nil, ""},
		{"cancel", `{"action":"cancel"}`, s, Cancelled, nil, ""},
		{"unknown action", `{"action":"maybe"}`, s, Invalid, nil, problemBadAction},
		{"no action", `{}`, s, Invalid, nil, problemBadAction},
		{"not an object", `12345`, s, Invalid, nil, problemNotResult},
		{"url accept ignores content", `{"action":"accept","content":{"k":"v"}}`, nil, Accepted, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := DecodeAnswer(json.RawMessage(tt.raw), tt.schema)
			if a.Outcome != tt.want || !reflect.DeepEqual(a.Content, tt.content) || a.Problem != tt.problem {
				t.Fatalf("got %+v, want %v %v %q", a, tt.want, tt.content, tt.problem)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Missing: "missing", Accepted: "accepted", Declined: "declined", Cancelled: "cancelled", Invalid: "invalid"} {
		if o.String() != want {
			t.Errorf("%d.String() = %q", o, o.String())
		}
	}
}

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://srv.example/ui/x?flow=1":  true,
		"http://127.0.0.1:3000/ui/x":       true,
		"http://localhost/ui":              true,
		"http://app.localhost:3000/ui":     true,
		"http://[::1]:3000/ui":             true,
		"http://localhost.evil.example/":   false,
		"http://srv.example/ui":            false,
		"https://user:pw@srv.example/":     false,
		"https://user@srv.example/":        false,
		"https://@srv.example/":            false,
		"https://srv.example@evil.example": false,
		"http://user@127.0.0.1:3000/ui":    false,
		"https://srv.example/#frag":        false,
		"javascript:alert(1)":              false,
		"/relative":                        false,
	} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", raw, err)
		}
	}
}

// FuzzDecodeAnswer feeds arbitrary answers and schemas to the validator:
// it must never panic, an accepted answer must hold only the schema's
// properties and pass the schema again, and decline/cancel carry nothing.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(fullSchema), []byte(`{"action":"accept","content":{"label":"ok","flags":["p"],"score":95.5,"extra":1}}`))
	f.Add([]byte(fullSchema), []byte(`{"action":"accept","content":{"label":"","tags":["x","x"],"count":2.5}}`))
	f.Add([]byte(fullSchema), []byte(`{"action":"decline","content":{"label":1}}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string","enum":["x"],"enumNames":["X"]}},"required":["a"]}`), []byte(`{"action":"accept","content":{"a":null}}`))
	f.Add([]byte(`{"type":"object","properties":{}}`), []byte(`{"action":"cancel"}`))
	f.Add([]byte(`{`), []byte(`12345`))
	f.Fuzz(func(t *testing.T, schema, answer []byte) {
		s, err := ParseSchemaForAnswers(schema)
		if err != nil {
			s = nil // a URL-mode answer
		}
		a := DecodeAnswer(answer, s)
		switch a.Outcome {
		case Accepted:
			if s == nil {
				if a.Content != nil {
					t.Fatal("URL accept carries content")
				}
				return
			}
			for k := range a.Content {
				if _, ok := s.Properties[k]; !ok {
					t.Fatalf("accepted content kept unknown key %q", k)
				}
			}
			if _, err := s.ValidateContent(a.Content); err != nil {
				t.Fatalf("accepted content fails its own schema: %v", err)
			}
		case Declined, Cancelled, Missing:
			if a.Content != nil || a.Problem != "" {
				t.Fatalf("%v carries %v %q", a.Outcome, a.Content, a.Problem)
			}
		case Invalid:
			if a.Problem == "" || a.Content != nil {
				t.Fatalf("invalid answer without problem or with content: %+v", a)
			}
		}
	})
}

// FuzzParseSchema checks that the schema parser never panics and that what
// it accepts round-trips through its own wire form.
func FuzzParseSchema(f *testing.F) {
	f.Add([]byte(fullSchema))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]},"default":["x"]}}}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseSchemaForAnswers(raw)
		if err != nil {
			return
		}
		again, err := ParseSchemaForAnswers(s.JSON())
		if err != nil {
			t.Fatalf("wire form does not parse again: %v", err)
		}
		if len(again.Order) != len(s.Order) {
			t.Fatal("round trip changed the properties")
		}
	})
}

func TestEmailRefusesInvisibleCharacters(t *testing.T) {
	s, err := FormSchema(String("to").Format(FormatEmail).Required())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\u202emoc.elpmaxe\u202c@evil.example", "a\u200b@example.com", "a\x07b@example.com", "a\u00a0b@example.com"} {
		if _, err := s.ValidateContent(map[string]any{"to": bad}); err == nil {
			t.Errorf("%q accepted as an email address", bad)
		}
	}
	if _, err := s.ValidateContent(map[string]any{"to": "bob@example.com"}); err != nil {
		t.Errorf("plain address refused: %v", err)
	}
}

// Free text with characters that act on how it shows (a report label with
// NUL, ESC or U+202E that other clients would print) is refused with a
// reason that names the field, not the value; tab, line feed, the
// joiners of emoji and scripts, and ordinary text of any script pass.
func TestTextRefusesControlAndFormatCharacters(t *testing.T) {
	s, err := FormSchema(String("label").Title("Label").MaxLength(80).Required())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"Q2\x00", "Q2 \x1b[2J", "x\u202egnp.exe", "a\rb", "\u2066iso\u2069", "zero\u200bwidth", "bom\ufeff", "tag\U000E0041",
		"del\x7f", "c1\u009b31m", "line\u2028sep", "rlm\u200f"} {
		_, err := s.ValidateContent(map[string]any{"label": bad})
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Rule != "characters" {
			t.Errorf("%q: %v", bad, err)
			continue
		}
		if msg := ve.Problems[0].Message; !strings.HasPrefix(msg, "Label (label): must not contain control characters") || strings.Contains(msg, bad) {
			t.Errorf("%q: message %q", bad, msg)
		}
	}
	for _, good := range []string{"R&D > plan <Q2>", "two\nlines\tand a tab", "👨\u200d👩\u200d👧", "می\u200cخواهم", "Ünïcödé 日本語 עברית"} {
		if _, err := s.ValidateContent(map[string]any{"label": good}); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}

// The server's check of free-text answers and the elicit command's
// terminal escaping share one definition (internal/textclass): over every
// code point, an answer is refused for a character only if a terminal
// would show it as an escape, and every character a terminal escapes is
// refused, except tab and line feed (kept in multi-line text), the
// joiners scripts and emoji need, and code points that are not graphic at
// all (private use, unassigned), which show as escapes but hide nothing.
func TestHiddenMatchesTerminal(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		refused, escaped := hiddenOrControl(r), termtext.Escaped(r)
		switch {
		case refused && !escaped:
			t.Fatalf("%U is refused in answers but printed as it is", r)
		case escaped && !refused && r != '\t' && r != '\n' && r != 0x200c && r != 0x200d && unicode.IsGraphic(r):
			t.Fatalf("%U is accepted in answers but printed as an escape", r)
		}
	}
}
