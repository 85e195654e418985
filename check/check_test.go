package check

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
)

func TestFlipChar(t *testing.T) {
	for _, tc := range []struct {
		in   string
		i    int
		want string
		ok   bool
	}{
		{"abc", 0, "bbc", true},
		{"abc", 1, "aac", true},
		{"aZz", 1, "aYz", true},
		{"aZz", 2, "aZy", true},
		{"a0", 1, "a1", true},
		{"a9", 1, "a8", true},
		{"a-b", 1, "", false},
	} {
		got, ok := flipChar(tc.in, tc.i)
		if got != tc.want || ok != tc.ok {
			t.Errorf("flipChar(%q, %d) = %q, %v; want %q, %v", tc.in, tc.i, got, ok, tc.want, tc.ok)
		}
	}
	// Every flip changes the decoded bytes of a base64 and a hex state.
	s := base64.RawURLEncoding.EncodeToString([]byte("a sealed state of some length"))
	for _, tm := range bitFlips(s) {
		b, err := base64.RawURLEncoding.DecodeString(tm.state)
		if err != nil || string(b) == "a sealed state of some length" {
			t.Errorf("%s: %q decodes to the same bytes or not at all (%v)", tm.what, tm.state, err)
		}
	}
	if n := len(bitFlips(s)); n != 3 {
		t.Errorf("%d flips, want 3", n)
	}
}

func TestReencodings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"ab+/cd==", []string{"ab-_cd==", "ab+/cd"}},
		{"ab-_cd", []string{"ab+/cd", "ab-_cd=="}},
		{"abcd", nil},
		{"abcde", []string{"abcde==="}},
		{"a.b~c", nil},
	} {
		var got []string
		for _, r := range reencodings(tc.in) {
			got = append(got, r.state)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("reencodings(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSegmentSwaps(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"h.p.s", "p.h.s"},
		{"a~b", "b~a"},
		{"x.x.y", "x.y.x"},
		{"plain", ""},
	} {
		got := ""
		if sw := segmentSwaps(tc.in); len(sw) == 1 {
			got = sw[0].state
		}
		if got != tc.want {
			t.Errorf("segmentSwaps(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReadableDecodings(t *testing.T) {
	plain := base64.StdEncoding.EncodeToString([]byte(`{"u":"alice","t":"x"}`))
	jwt := "eyJhbGciOiJIUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"alice"}`)) + ".c2ln"
	sealed := base64.RawURLEncoding.EncodeToString([]byte{1, 2, 0xe9, 0x7b, 0x41, 0xd5, 0x67, 0x66, 0x74, 0xa8, 0x99, 0xff, 0xc0, 0xa1, 0xb7, 0xd8, 0x57, 0x23, 0xa2, 0x44})
	for _, tc := range []struct {
		name  string
		state string
		want  bool
	}{
		{"base64 JSON", plain, true},
		{"JWT", jwt, true},
		{"raw JSON", `{"step":2}`, true},
		{"hex text", "7468697320697320612073746174652c20696e2074657874", true},
		{"sealed bytes", sealed, false},
	} {
		got := false
		for i, d := range decodings(tc.state) {
			if kind, ok := readable(d); ok && (i > 0 || kind == "JSON") {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%s: readable %v, want %v", tc.name, got, tc.want)
		}
	}
	if d := decodedJSON(plain); string(d) != `{"u":"alice","t":"x"}` {
		t.Errorf("decodedJSON = %q", d)
	}
	if reencodeLike(plain, []byte(`{}`)) != base64.StdEncoding.EncodeToString([]byte(`{}`)) {
		t.Error("reencodeLike does not keep the standard padded spelling")
	}
}

func TestRawText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"request_state", true},
		{"round=2;name=ada", true},
		{"AQJrMSBk6XtB1WdmdKiZ_8Cht9hXI6JERi4TMLPwzpGkDopQ", false},
		{"deadbeefcafe0123", false},
		{"a1b2", false},
	} {
		if got := rawText(tc.s); got != tc.want {
			t.Errorf("rawText(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestURLProblems(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // a substring of the joined problems; "" for none
	}{
		{"https://mcp.example.com/ui/connect?flow=9f8e7d", ""},
		{"http://127.0.0.1:3000/ui/set_api_key?flow=ab12", ""},
		{"http://mcp.example.com/ui/connect?flow=1", "loopback"},
		{"https://u:p@mcp.example.com/ui", "user info"},
		{"https://mcp.example.com/ui?access_token=abc", "looks like a credential"},
		{"https://mcp.example.com/ui?api_key=abc", "looks like a credential"},
		{"https://mcp.example.com/ui?code=abc", "looks like a credential"},
		{"https://mcp.example.com/ui/alice-secret-token/connect", "the bearer token"},
		{"https://mcp.example.com/ui?report=2026-Q2", "an argument value"},
		{"https://mcp.example.com/ui?x=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig", "JWT"},
		{"javascript:alert(1)", "absolute"},
	} {
		got := strings.Join(urlProblems(tc.url, []string{"alice-secret-token", "", "2026-Q2"}), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("urlProblems(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:3000/ui/x", "http://127.0.0.1:3000/mcp", true},
		{"https://MCP.example.com/ui", "https://mcp.example.com/mcp", true},
		{"https://idp.example.com/authorize", "https://mcp.example.com/mcp", false},
		{"http://mcp.example.com/ui", "https://mcp.example.com/mcp", false},
	} {
		if got := sameOrigin(tc.a, tc.b); got != tc.want {
			t.Errorf("sameOrigin(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestChangeValue(t *testing.T) {
	for _, tc := range []struct {
		in   any
		enum []any
		want any
	}{
		{"sales", []any{"sales", "support"}, "support"},
		{"2026-Q2", nil, "2026-Q3"},
		{"2019", nil, "2018"},
		{"demo", nil, "xdemo"},
		{3.0, nil, 4.0},
		{true, nil, false},
	} {
		got, ok := changeValue(tc.in, tc.enum)
		if !ok || got != tc.want {
			t.Errorf("changeValue(%v) = %v, %v; want %v", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := changeValue(nil, nil); ok {
		t.Error("null changed")
	}
}

func TestInvalidAnswersBreakTheSchema(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{` +
		`"plan":{"type":"string","enum":["a","b"]},"n":{"type":"integer","minimum":1,"maximum":3},` +
		`"mail":{"type":"string","format":"email"},"when":{"type":"string","format":"date"},` +
		`"ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string","enum":["x","y"]}},` +
		`"label":{"type":"string","minLength":2,"maxLength":4}},"required":["plan","n"]}`)
	s, err := elicit.ParseSchemaForAnswers(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(validContent(s)); err != nil {
		t.Fatalf("the valid content is refused: %v", err)
	}
	bad := invalidAnswers(s)
	if len(bad) < 14 {
		t.Errorf("only %d invalid answers", len(bad))
	}
	for _, b := range bad {
		if err := s.Validate(b.content); err == nil {
			t.Errorf("%s: the schema accepts it", b.what)
		}
	}
}

func FuzzParseResult(f *testing.F) {
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://x"}}},"requestState":"s"}`))
	f.Add([]byte(`{"resultType":"complete","content":[{"type":"text","text":"t"}],"isError":true}`))
	f.Add([]byte(`{"resultType":"other"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o := parseResult(b)
		_ = o.String()
		_ = o.class()
		if o.err == nil && !o.complete && !o.inputReq {
			t.Fatalf("%q: neither complete, input_required nor an error", b)
		}
	})
}

func FuzzStateDecoding(f *testing.F) {
	f.Add("eyJhIjoxfQ==")
	f.Add("a.b.c")
	f.Add("00ff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range decodings(s) {
			_, _ = readable(d)
		}
		_ = decodedJSON(s)
		if n := decodedLen(s); n < 0 || n > len(s) {
			t.Fatalf("decodedLen(%q) = %d", s, n)
		}
		for _, tm := range append(append(bitFlips(s), truncations(s)...), append(reencodings(s), segmentSwaps(s)...)...) {
			if tm.state == s {
				t.Fatalf("%s: %q unchanged", tm.what, s)
			}
		}
	})
}

// TestObservedEscapedOnce: server text with a newline or a bidi control
// is escaped once in the text report (\n, \u202e) and once in JSON (as
// elicit call --json does: the bidi control too, as \u202e); neither
// shows an escaped backslash, and the JSON decodes to the text.
func TestObservedEscapedOnce(t *testing.T) {
	o := parseResult(json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"12 draft(s):\n- a\t\u202eb\\c"}]}`))
	rep := &Report{URL: "http://127.0.0.1/mcp", Tool: "list_drafts"}
	rep.add(Result{ID: CaseDecline, Verdict: Pass, Observed: "decline: " + o.String()})
	var text, js strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := `observed: decline: complete result "12 draft(s):\n- a\t\u202eb\c"`; !strings.Contains(text.String(), want) {
		t.Errorf("text report:\n%s\nwant %s", text.String(), want)
	}
	if strings.Contains(text.String(), "\n- a") || strings.Contains(text.String(), "\u202e") {
		t.Errorf("the text report holds a raw control character:\n%s", text.String())
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), `\\n`) || strings.Contains(js.String(), `\\u`) {
		t.Errorf("JSON escaped twice:\n%s", js.String())
	}
	if strings.Contains(js.String(), "\u202e") || !strings.Contains(js.String(), `\u202e`) {
		t.Errorf("the JSON report holds a raw bidi control:\n%s", js.String())
	}
	var back Report
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Results[0].Observed, "decline: complete result \"12 draft(s):\n- a\t\u202eb\\c\""; got != want {
		t.Errorf("JSON observed %q, want %q", got, want)
	}
}
