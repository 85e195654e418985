package mcpclient

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/streamhttp"
)

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
		if dec, ok := streamhttp.DecodeHeaderValue(got); !ok || dec != tt.in {
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
		dec, ok := streamhttp.DecodeHeaderValue(enc)
		// The server refuses a decoded value that is not UTF-8; any other
		// value comes back as it was.
		if utf8.ValidString(s) && (!ok || dec != s) {
			t.Fatalf("round trip of %q: %q %v", s, dec, ok)
		}
	})
}

func TestCheckToolHeaders(t *testing.T) {
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
			got, err := CheckToolHeaders(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)})
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

func TestParamHeaders(t *testing.T) {
	params := []HeaderParam{
		{"Region", []string{"region"}, "string"},
		{"Priority", []string{"priority"}, "integer"},
		{"Verbose", []string{"verbose"}, "boolean"},
		{"Zone", []string{"loc", "zone"}, "string"},
	}
	tests := []struct {
		name, args string
		want       http.Header
		wantErr    bool
	}{
		{"all", `{"region":"us-west1","priority":42,"verbose":false,"loc":{"zone":"b"},"query":"x"}`,
			http.Header{"Mcp-Param-Region": {"us-west1"}, "Mcp-Param-Priority": {"42"}, "Mcp-Param-Verbose": {"false"}, "Mcp-Param-Zone": {"b"}}, false},
		{"null and absent omitted", `{"region":null,"priority":7}`, http.Header{"Mcp-Param-Priority": {"7"}}, false},
		{"integral float", `{"priority":42.0}`, http.Header{"Mcp-Param-Priority": {"42"}}, false},
		{"negative", `{"priority":-3}`, http.Header{"Mcp-Param-Priority": {"-3"}}, false},
		{"exponent", `{"priority":1e3}`, http.Header{"Mcp-Param-Priority": {"1000"}}, false},
		{"empty string", `{"region":""}`, http.Header{"Mcp-Param-Region": {""}}, false},
		{"unsafe string", `{"region":" x"}`, http.Header{"Mcp-Param-Region": {"=?base64?IHg=?="}}, false},
		{"max safe", `{"priority":9007199254740991}`, http.Header{"Mcp-Param-Priority": {"9007199254740991"}}, false},
		{"beyond safe", `{"priority":9007199254740992}`, nil, true},
		{"fraction", `{"priority":3.5}`, nil, true},
		{"object value", `{"region":{"a":1}}`, nil, true},
		{"array value", `{"region":["a"]}`, nil, true},
		{"zone under a non-object", `{"loc":"flat"}`, http.Header{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := paramHeaders(params, json.RawMessage(tt.args))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
