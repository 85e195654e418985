package wiretest

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func sealedLike(kid string) string {
	raw := append([]byte{1, byte(len(kid))}, kid...)
	raw = append(raw, bytes.Repeat([]byte{9}, 12+16+5)...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func TestNormalize(t *testing.T) {
	a, b := sealedLike("k1"), sealedLike("k2")
	n := NewNormalizer()
	in := `{"requestState":"` + a + `"} {"requestState":"` + b + `"} {"requestState":"` + a + `"} {"requestState":"not a state"} {"requestState":"` + a[:10] + `"}` + "\nMcp-Session-Id: 0123456789abcdef0123\nMcp-Session-Id: short\n"
	want := `{"requestState":"«requestState#1 key=k1»"} {"requestState":"«requestState#2 key=k2»"} {"requestState":"«requestState#1 key=k1»"} {"requestState":"not a state"} {"requestState":"` + a[:10] + `"}` + "\nMcp-Session-Id: «session#1»\nMcp-Session-Id: short\n"
	if got := string(n.Normalize([]byte(in))); got != want {
		t.Errorf("Normalize:\n got %s\nwant %s", got, want)
	}
	e := `"elicitationId":"c9efa066cd0a07e5ebcac5bb912ca59f" "elicitationId":"C9EFA066CD0A07E5EBCAC5BB912CA59F" "elicitationId":"c9efa066cd0a07e5ebcac5bb912ca59f"`
	if got := string(n.Normalize([]byte(e))); got != `"elicitationId":"«elicitationId#1»" "elicitationId":"C9EFA066CD0A07E5EBCAC5BB912CA59F" "elicitationId":"«elicitationId#1»"` {
		t.Errorf("elicitation ids: %s", got)
	}
	// The numbering carries over to the next output of the same transcript.
	if got := string(n.Normalize([]byte(`"requestState":"` + b + `"`))); got != `"requestState":"«requestState#2 key=k2»"` {
		t.Errorf("second output: %s", got)
	}
}

func TestSealedStateKey(t *testing.T) {
	for _, tt := range []struct {
		v  string
		ok bool
	}{
		{sealedLike("t1"), true},
		{sealedLike("t1") + "=", false},                                                               // padding
		{strings.Replace(sealedLike("t1"), "A", "+", 1), false},                                       // not base64url
		{base64.RawURLEncoding.EncodeToString([]byte{2, 1, 'k'}), false},                              // version
		{base64.RawURLEncoding.EncodeToString(append([]byte{1, 1, 'k'}, make([]byte, 27)...)), false}, // too short
		{sealedLike("a b"), false},                                                                    // key id not printable
	} {
		if _, ok := SealedStateKey(tt.v); ok != tt.ok {
			t.Errorf("SealedStateKey(%q) = %v, want %v", tt.v, ok, tt.ok)
		}
	}
}

func TestParseRequest(t *testing.T) {
	req, err := ParseRequest([]byte("POST /mcp\nHost: example.test:8080\nMcp-Param-A: 1\nMcp-Param-A: 2\n\n{\"a\":1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	if req.Method != "POST" || req.URL.Path != "/mcp" || req.Host != "example.test:8080" ||
		len(req.Header.Values("Mcp-Param-A")) != 2 || string(body) != `{"a":1}` || req.ContentLength != 7 {
		t.Errorf("%+v %q", req, body)
	}
	if _, err := ParseRequest([]byte("POST\n\n")); err == nil {
		t.Error("a request line without a path was read")
	}
}

func TestFormatResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("B", "2")
	rec.Header().Set("A", "1")
	rec.WriteHeader(418)
	rec.WriteString("no newline")
	want := "HTTP/1.1 418 I'm a teapot\nA: 1\nB: 2\n\nno newline\n«no newline at end»\n"
	if got := string(FormatResponse(rec)); got != want {
		t.Errorf("got %q", got)
	}
}

func TestSubstitute(t *testing.T) {
	s := sealedLike("t1")
	got := string(Substitute([]byte(`"«setup»" "«setup|flip»"`), s))
	f := Flip(s)
	if got != `"`+s+`" "`+f+`"` || f == s || len(f) != len(s) {
		t.Errorf("Substitute: %s (flip %s)", got, f)
	}
	if StateOf([]byte(`{"requestState":"a"} {"requestState":"b"}`)) != "b" || StateOf([]byte(`{}`)) != "" {
		t.Error("StateOf")
	}
}
