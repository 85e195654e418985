package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidHeaderName(t *testing.T) {
	for name, want := range map[string]bool{
		"Region": true, "X-Trace_id.v2": true, "a!#$%&'*+-.^_`|~z": true,
		"": false, "My Field": false, "a:b": false, "Région": false, "tab\there": false, "new\nline": false,
	} {
		if got := ValidHeaderName(name); got != want {
			t.Errorf("ValidHeaderName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"us-west1", "us-west1"},
		{"us west 1", "us west 1"},
		{"", ""},
		{"file:///path/to/file%20name.txt", "file:///path/to/file%20name.txt"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{" lead", "=?base64?IGxlYWQ=?="},
		{"trail ", "=?base64?dHJhaWwg?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"a\r\nb", "=?base64?YQ0KYg==?="},
		{"\tindented", "=?base64?CWluZGVudGVk?="},
		{"in\tner", "=?base64?aW4JbmVy?="},
		{"del\x7f", "=?base64?ZGVsfw==?="},
		{"=?base64?SGk=?=", "=?base64?PT9iYXNlNjQ/U0drPT89?="},
		{"=?BASE64?x?=", "=?base64?PT9CQVNFNjQ/eD89?="},
		{"=?base64?", "=?base64?PT9iYXNlNjQ/?="},
		{"=?utf-8?q?x?=", "=?utf-8?q?x?="},
	}
	for _, tt := range tests {
		got := EncodeHeaderValue(tt.in)
		if got != tt.want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// The server's decoder is the inverse (HTTP-S-15).
		if dec, ok := DecodeHeaderValue(got); !ok || dec != tt.in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", got, dec, ok, tt.in)
		}
	}
}

func FuzzEncodeHeaderValue(f *testing.F) {
	for _, s := range []string{"a", " a", "=?base64?x?=", "é", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := EncodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("encoded %q has byte %#x", enc, c)
			}
		}
		if enc != strings.TrimSpace(enc) {
			t.Fatalf("encoded %q has surrounding space", enc)
		}
		dec, ok := DecodeHeaderValue(enc)
		// The server refuses a decoded value that is not UTF-8; any other
		// value comes back as it was.
		if utf8.ValidString(s) && (!ok || dec != s) {
			t.Fatalf("round trip of %q: %q %v", s, dec, ok)
		}
	})
}

func TestToolHeaderParams(t *testing.T) {
	tests := []struct {
		name, schema string
		want         []HeaderParam
		wantErr      string
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string"}}}`, nil, ""},
		{"valid", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N-1"},"b":{"type":"boolean","x-mcp-header":"Flag_x"}}}`,
			[]HeaderParam{{"Flag_x", []string{"b"}, "boolean"}, {"N-1", []string{"n"}, "integer"}, {"Region", []string{"region"}, "string"}}, ""},
		{"nested through properties", `{"type":"object","properties":{"loc":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`,
			[]HeaderParam{{"Zone", []string{"loc", "zone"}, "string"}}, ""},
		{"annotation-like data is data", `{"type":"object","properties":{"a":{"type":"object","default":{"x-mcp-header":"Nope"},"examples":[{"x-mcp-header":1}]}}}`, nil, ""},
		{"property named x-mcp-header", `{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}`, nil, ""},
		{"empty", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":""}}}`, nil, "empty"},
		{"space", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`, nil, "not an HTTP token"},
		{"colon", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"Region:Primary"}}}`, nil, "not an HTTP token"},
		{"non-ASCII", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"Région"}}}`, nil, "not an HTTP token"},
		{"control", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"Region\t1"}}}`, nil, "not an HTTP token"},
		{"not a string", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":5}}}`, nil, "must be a string"},
		{"object", `{"type":"object","properties":{"v":{"type":"object","x-mcp-header":"Data"}}}`, nil, "only string, integer and boolean"},
		{"array", `{"type":"object","properties":{"v":{"type":"array","items":{"type":"string"},"x-mcp-header":"Items"}}}`, nil, "only string"},
		{"null", `{"type":"object","properties":{"v":{"type":"null","x-mcp-header":"Nil"}}}`, nil, "only string"},
		{"number", `{"type":"object","properties":{"v":{"type":"number","x-mcp-header":"Score"}}}`, nil, "only string"},
		{"type list", `{"type":"object","properties":{"v":{"type":["string","null"],"x-mcp-header":"V"}}}`, nil, "only string"},
		{"no type", `{"type":"object","properties":{"v":{"x-mcp-header":"V"}}}`, nil, "only string"},
		{"duplicate same case", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}}`, nil, "repeats"},
		{"duplicate other case", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, nil, "repeats"},
		{"under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, nil, "not on a property reachable"},
		{"under oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string","x-mcp-header":"A"}]}}}`, nil, "not on a property reachable"},
		{"under $defs", `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}},"properties":{"a":{"$ref":"#/$defs/d"}}}`, nil, "not on a property reachable"},
		{"properties under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}}`, nil, "not on a property reachable"},
		{"on the root", `{"type":"object","x-mcp-header":"Root"}`, nil, "not on a property reachable"},
		{"not JSON", `{`, nil, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToolHeaderParams(json.RawMessage(tt.schema))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeHeaderValue(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"plain", "plain", true},
		{"=?base64?SGVsbG8=?=", "Hello", true},
		{"=?base64?w6l0w6k=?=", "été", true},
		{"=?base64?SGVsbG8?=", "", false},
		{"=?base64?SGVs!!!bG8=?=", "", false},
		{"=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?=", true},
		{"=?base64?SGVsbG8=", "=?base64?SGVsbG8=", true},
		{"=?base64?/w==?=", "", false}, // not UTF-8
	}
	for _, tt := range tests {
		got, ok := DecodeHeaderValue(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzDecodeHeaderValue(f *testing.F) {
	for _, s := range []string{"plain", "=?base64?SGVsbG8=?=", "=?base64??=", "=?base64?=?=", "=?base64?w6l0w6k=?="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := DecodeHeaderValue(v)
		if !ok {
			return
		}
		if !strings.HasPrefix(v, "=?base64?") || !strings.HasSuffix(v, "?=") || len(v) < len("=?base64??=") {
			if got != v {
				t.Fatalf("literal %q changed to %q", v, got)
			}
		}
	})
}

// Whatever schema a server lists, ToolHeaderParams never panics, and what
// it returns keeps the rules a client relies on to send the headers.
func FuzzToolHeaderParams(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
		`{"properties":{"a":{"properties":{"b":{"type":"integer","x-mcp-header":"B"}}}}}`,
		`[{"x-mcp-header":"x"}]`, `{"x-mcp-header":1}`, `null`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		params, err := ToolHeaderParams(json.RawMessage(schema))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range params {
			lower := strings.ToLower(p.Header)
			if !ValidHeaderName(p.Header) || seen[lower] || len(p.Path) == 0 || (p.Type != "string" && p.Type != "integer" && p.Type != "boolean") {
				t.Fatalf("%s: bad parameter %+v", schema, p)
			}
			seen[lower] = true
		}
	})
}
