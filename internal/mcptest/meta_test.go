package mcptest

import (
	"encoding/json"
	"testing"
)

func TestMeta(t *testing.T) {
	tests := []struct {
		caps    string
		members []string
		want    string
	}{
		{"{}", nil, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`},
		{`{"elicitation":{"url":{}}}`, []string{`"progressToken":"p1"`, `"x":1`},
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}},"progressToken":"p1","x":1}`},
	}
	for _, tt := range tests {
		got := Meta(tt.caps, tt.members...)
		if got != tt.want {
			t.Errorf("Meta(%s, %q)\n got %s\nwant %s", tt.caps, tt.members, got, tt.want)
		}
		var params map[string]map[string]any
		if err := json.Unmarshal([]byte("{"+got+"}"), &params); err != nil || params["_meta"]["io.modelcontextprotocol/protocolVersion"] != ProtocolVersion {
			t.Errorf("{%s} does not decode to params with _meta: %v", got, err)
		}
	}
}
