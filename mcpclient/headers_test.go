package mcpclient

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

func TestParamHeaders(t *testing.T) {
	params := []mcp.HeaderParam{
		{Header: "Region", Path: []string{"region"}, Type: "string"},
		{Header: "Priority", Path: []string{"priority"}, Type: "integer"},
		{Header: "Verbose", Path: []string{"verbose"}, Type: "boolean"},
		{Header: "Zone", Path: []string{"loc", "zone"}, Type: "string"},
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
