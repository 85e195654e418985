package transport

import (
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/jsonrpc"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestParseErrors(t *testing.T) {
	tests := []struct{ method, params, want string }{
		{"tools/list", `{}`, "_meta is required"},
		{"tools/list", `{"_meta":null}`, "_meta is required"},
		{"tools/list", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, "_meta is missing io.modelcontextprotocol/protocolVersion"},
		{"tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "_meta is missing io.modelcontextprotocol/clientCapabilities"},
		{"tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"all"}}`, "/_meta/io.modelcontextprotocol~1clientCapabilities must be an object, not a string"},
		{"tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}`, "/_meta/io.modelcontextprotocol~1protocolVersion must be a string, not a number"},
		{"tools/list", `{` + meta[:len(meta)-1] + `,"progressToken":{}}}`, "progressToken must be a string or number"},
		{"tools/list", `{` + meta + `,"requestState":"x"}`, "tools/list does not take inputResponses or requestState"},
		{"tools/list", `{` + meta + `,"inputResponses":{}}`, "tools/list does not take inputResponses or requestState"},
		{"tools/call", `{` + meta + `}`, "name is required"},
		{"tools/call", `{` + meta + `,"name":""}`, "name is required"},
		{"prompts/get", `{` + meta + `}`, "name is required"},
		{"resources/read", `{` + meta + `,"name":"x"}`, "uri is required"},
		{"tools/call", `{` + meta + `,"name":"t","arguments":[1]}`, "arguments must be an object"},
		{"tools/call", `{` + meta + `,"name":5}`, "/name must be a string, not a number"},
		{"tasks/get", `{` + meta + `}`, "taskId is required"},
		{"tasks/cancel", `{` + meta + `,"taskId":""}`, "taskId is required"},
		{"tasks/get", `{` + meta + `,"taskId":12}`, "/taskId must be a string, not a number"},
		{"tasks/get", `{` + meta + `,"taskId":"t","inputResponses":{}}`, "tasks/get does not take inputResponses or requestState"},
		{"tasks/update", `{` + meta + `,"taskId":"t","requestState":"s"}`, "tasks/update does not take inputResponses or requestState"},
	}
	for _, tt := range tests {
		req, jerr := jsonrpc.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"` + tt.method + `","params":` + tt.params + `}`))
		if jerr != nil {
			t.Fatalf("%s: %v", tt.params, jerr)
		}
		in, err := Parse(req)
		if err == nil || err.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Message, tt.want) {
			t.Errorf("%s %s: got %v, want -32602 containing %q", tt.method, tt.params, err, tt.want)
		}
		if in == nil || in.Method != tt.method || string(in.ID.Raw()) != string(req.ID.Raw()) {
			t.Errorf("%s %s: the failed Incoming lost the id or method: %+v", tt.method, tt.params, in)
		}
	}
}

func TestParse(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{` + meta[:len(meta)-1] +
		`,"progressToken":7,"io.modelcontextprotocol/logLevel":"info"},"name":"t","arguments":{"x":1},"inputResponses":{"k":{"action":"decline"}},"requestState":"s"}}`
	req, jerr := jsonrpc.DecodeRequest([]byte(body))
	if jerr != nil {
		t.Fatal(jerr)
	}
	in, err := Parse(req)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case in.Name != "t", string(in.Arguments) != `{"x":1}`, in.RequestState == nil || *in.RequestState != "s",
		string(in.InputResponses["k"]) != `{"action":"decline"}`, in.Meta.ProtocolVersion != "2026-07-28",
		string(in.Meta.ProgressToken) != "7", in.Meta.LogLevel != "info", in.Params == nil:
		t.Errorf("Parse = %+v (meta %+v)", in, in.Meta)
	}
	req, _ = jsonrpc.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{` + meta + `,"uri":"test://a"}}`))
	if in, err = Parse(req); err != nil || in.Name != "test://a" || in.RequestState != nil {
		t.Errorf("resources/read: %+v, %v", in, err)
	}
	// tasks/update: the taskId is the target; inputResponses are taken.
	req, _ = jsonrpc.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{` + meta + `,"taskId":"abc","inputResponses":{"k":{"action":"cancel"}}}}`))
	if in, err = Parse(req); err != nil || in.Name != "abc" || string(in.InputResponses["k"]) != `{"action":"cancel"}` {
		t.Errorf("tasks/update: %+v, %v", in, err)
	}
	// taskId on another method is not its target.
	req, _ = jsonrpc.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + meta + `,"taskId":"abc"}}`))
	if in, err = Parse(req); err != nil || in.Name != "" {
		t.Errorf("tools/list with taskId: %+v, %v", in, err)
	}
}

// Parse never panics, and what it accepts keeps the invariants Serve
// relies on.
func FuzzParse(f *testing.F) {
	f.Add("tools/call", `{`+meta+`,"name":"t","arguments":{}}`)
	f.Add("resources/read", `{`+meta+`,"uri":"u","requestState":"x"}`)
	f.Add("tools/list", `{`+meta+`,"cursor":"c"}`)
	f.Add("tools/call", `{"_meta":{}}`)
	f.Add("tasks/update", `{`+meta+`,"taskId":"t","inputResponses":{"k":{}}}`)
	f.Fuzz(func(t *testing.T, method, params string) {
		in, err := Parse(&jsonrpc.Request{ID: jsonrpc.IntID(1), Method: method, Params: []byte(params)})
		if in == nil {
			t.Fatal("nil Incoming")
		}
		if err != nil {
			if err.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("code %d", err.Code)
			}
			return
		}
		if in.Meta == nil || in.Params == nil {
			t.Fatal("accepted without _meta")
		}
		switch method {
		case "tools/call", "prompts/get", "resources/read":
			if in.Name == "" {
				t.Fatal("accepted without a target")
			}
		case "tasks/get", "tasks/update", "tasks/cancel":
			if in.Name == "" || in.RequestState != nil || (method != "tasks/update" && in.InputResponses != nil) {
				t.Fatalf("tasks method accepted as %+v", in)
			}
		default:
			if in.InputResponses != nil || in.RequestState != nil {
				t.Fatal("MRTR members accepted on a method that takes none")
			}
		}
		if a := in.Arguments; len(a) > 0 && string(a) != "null" && a[0] != '{' {
			t.Fatalf("arguments %s accepted", a)
		}
	})
}
