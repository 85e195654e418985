package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/mcp"
)

// A bridge that sends input requests itself checks the client's answer
// through the transport view as the server checks inputResponses.
func TestValidInputResponse(t *testing.T) {
	v := transport.Of(New(mcp.Implementation{Name: "t", Version: "1"}, nil))
	tests := []struct {
		method, raw string
		want        bool
	}{
		{mcp.MethodElicitationCreate, `{"action":"accept","content":{"name":"a"}}`, true},
		{mcp.MethodElicitationCreate, `{"action":"decline"}`, true},
		{mcp.MethodElicitationCreate, `{"action":"yolo"}`, false},
		{mcp.MethodSamplingCreate, `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`, true},
		{mcp.MethodSamplingCreate, `{"role":"assistant","content":{"type":"text","text":"hi"}}`, false},
		{mcp.MethodRootsList, `{"roots":[]}`, true},
		{mcp.MethodRootsList, `{}`, false},
		{"other/method", `garbage`, true},
	}
	for _, tt := range tests {
		if got := v.ValidInputResponse(tt.method, json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("ValidInputResponse(%s, %s) = %v, want %v", tt.method, tt.raw, got, tt.want)
		}
	}
}

func TestTransportOfRefusesOtherValues(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("transport.Of(non-server) did not panic")
		}
	}()
	transport.Of("not a server")
}
