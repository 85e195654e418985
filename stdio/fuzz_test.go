package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/stdio"
)

// FuzzServe: whatever the client writes, Serve returns nil at the end of
// the input without panicking, and every line it wrote is one JSON-RPC
// message.
func FuzzServe(f *testing.F) {
	f.Add([]byte(call(1, "whoami", "", "") + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"))
	f.Add([]byte("[1,2]\n{\n\n\r\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}`))
	s := newServer(newProbe())
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		err := stdio.Serve(context.Background(), s, bytes.NewReader(in), &out, &stdio.Options{
			Principal: "alice", Logger: quiet, MaxMessageBytes: 512, Legacy: &legacy.Options{Logger: quiet}})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) == 0 && out.Len() == 0 {
				continue
			}
			var m struct {
				JSONRPC string `json:"jsonrpc"`
			}
			if json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
				t.Fatalf("not a JSON-RPC message: %q", line)
			}
		}
	})
}
