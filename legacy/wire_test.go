package legacy

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestStripModernMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"progressToken":3},"name":"a"}}`},
		// The key elsewhere (an argument value) is left alone.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"io.modelcontextprotocol/protocolVersion":"x"}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"io.modelcontextprotocol/protocolVersion":"x"}}}`},
		{`[{"io.modelcontextprotocol/protocolVersion":1}]`, `[{"io.modelcontextprotocol/protocolVersion":1}]`},
	} {
		if got := string(stripModernMeta([]byte(tc.in))); got != tc.want {
			t.Errorf("stripModernMeta(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestCheckInitialize(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{"url":"yes"}}}}`, "Invalid params: capabilities.elicitation.url must be an object, not string"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}`, "Invalid params: protocolVersion must be a string, not number"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`, "Invalid params: initialize needs params (protocolVersion, capabilities, clientInfo)"},
	} {
		_, err := checkInitialize([]byte(tc.body))
		got := ""
		if err != nil {
			got = err.Message
		}
		if got != tc.want {
			t.Errorf("checkInitialize(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzWire: neither decoder panics; stripModernMeta returns valid JSON for
// valid JSON and leaves bodies without the key byte for byte.
func FuzzWire(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{"url":"yes"}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = checkInitialize(body)
		out := stripModernMeta(body)
		if json.Valid(body) && !json.Valid(out) {
			t.Fatalf("invalid JSON from %s: %s", body, out)
		}
		if !bytes.Contains(body, []byte("io.modelcontextprotocol/protocolVersion")) && !bytes.Equal(out, body) {
			t.Fatalf("changed %s", body)
		}
	})
}
