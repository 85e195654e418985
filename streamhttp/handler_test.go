package streamhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func testServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcpserver.New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echo", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`)},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.Text("ok"), nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "progress"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		for i := 0; i < 3; i++ {
			if err := r.Progress(float64(i*50), 100, ""); err != nil {
				return nil, err
			}
		}
		return mcpserver.Text("done"), nil
	})
	s.EnableTasks(nil)
	hs := httptest.NewServer(NewHandler(s, &Options{MaxBodyBytes: 4096}))
	t.Cleanup(hs.Close)
	return hs
}

type call struct {
	method  string
	headers map[string]string
	body    string
}

func (c call) do(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(c.method, url, strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "<absent>" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func std(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func callBody(id int, name, args string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta + `}}`
}

// taskGet is a tasks/get of taskID from a client that takes tasks.
func taskGet(taskID string) string {
	return `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"` + taskID + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestValidation(t *testing.T) {
	hs := testServer(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
	tests := []struct {
		name       string
		c          call
		wantStatus int
		wantCode   int // 0 = result expected
	}{
		{"ok list", call{"POST", std("tools/list", ""), list}, 200, 0},
		{"GET", call{"GET", std("tools/list", ""), ""}, 405, 0},
		{"DELETE", call{"DELETE", std("tools/list", ""), ""}, 405, 0},
		{"bad host", call{"POST", with(std("tools/list", ""), "Host", "evil.example.com"), list}, 403, -32600},
		// The Host is checked before the method (HTTP-S-02): a rebinding
		// page gets 403 whatever it sends.
		{"bad host GET", call{"GET", with(std("tools/list", ""), "Host", "evil.example.com"), ""}, 403, -32600},
		{"bad host PUT", call{"PUT", with(std("tools/list", ""), "Host", "evil.example.com"), list}, 403, -32600},
		{"bad host OPTIONS", call{"OPTIONS", with(std("tools/list", ""), "Host", "evil.example.com"), ""}, 403, -32600},
		{"bad origin DELETE", call{"DELETE", with(std("tools/list", ""), "Origin", "http://evil.example.com"), ""}, 403, -32600},
		{"bad origin", call{"POST", with(std("tools/list", ""), "Origin", "http://evil.example.com"), list}, 403, -32600},
		{"good origin", call{"POST", with(std("tools/list", ""), "Origin", "http://localhost:1234"), list}, 200, 0},
		{"too large", call{"POST", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 5000) + `",` + meta + `}}`}, 413, -32600},
		{"parse error", call{"POST", std("tools/list", ""), `{"jsonrpc":`}, 400, -32700},
		{"wrong content type", call{"POST", with(std("tools/list", ""), "Content-Type", "text/plain"), list}, 415, -32600},
		{"no version header", call{"POST", with(std("tools/list", ""), "MCP-Protocol-Version", "<absent>"), list}, 400, -32020},
		{"no method header", call{"POST", with(std("tools/list", ""), "Mcp-Method", "<absent>"), list}, 400, -32020},
		{"method mismatch", call{"POST", std("prompts/list", ""), list}, 400, -32020},
		{"method case", call{"POST", std("TOOLS/LIST", ""), list}, 400, -32020},
		{"method whitespace ok", call{"POST", std(" tools/list ", ""), list}, 200, 0},
		{"version mismatch", call{"POST", with(std("tools/list", ""), "MCP-Protocol-Version", "2025-11-25"), list}, 400, -32020},
		{"unsupported version", call{"POST", with(std("tools/list", ""), "MCP-Protocol-Version", "v999"), strings.Replace(list, "2026-07-28", "v999", 1)}, 400, -32022},
		{"missing meta", call{"POST", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`}, 400, -32602},
		{"missing caps", call{"POST", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`}, 400, -32602},
		{"unknown method", call{"POST", std("ping", ""), `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta + `}}`}, 404, -32601},
		{"no name header", call{"POST", std("tools/call", ""), callBody(2, "echo", `{}`)}, 400, -32020},
		{"name mismatch", call{"POST", std("tools/call", "other"), callBody(2, "echo", `{}`)}, 400, -32020},
		{"name raw non-ASCII", call{"POST", std("tools/call", "café"), callBody(2, "café", `{}`)}, 400, -32020},
		{"name base64", call{"POST", std("tools/call", "=?base64?ZWNobw==?="), callBody(2, "echo", `{}`)}, 200, 0},
		{"name bad base64", call{"POST", std("tools/call", "=?base64?ZWNobw?="), callBody(2, "echo", `{}`)}, 400, -32020},
		{"unknown tool", call{"POST", std("tools/call", "nope"), callBody(2, "nope", `{}`)}, 400, -32602},
		{"param ok", call{"POST", with(std("tools/call", "echo"), "Mcp-Param-Region", "us-west1", "Mcp-Param-N", "42"), callBody(3, "echo", `{"region":"us-west1","n":42.0}`)}, 200, 0},
		{"param missing", call{"POST", std("tools/call", "echo"), callBody(3, "echo", `{"region":"us-west1"}`)}, 400, -32020},
		{"param differs", call{"POST", with(std("tools/call", "echo"), "Mcp-Param-Region", "eu"), callBody(3, "echo", `{"region":"us-west1"}`)}, 400, -32020},
		{"param base64", call{"POST", with(std("tools/call", "echo"), "Mcp-Param-Region", "=?base64?SGVsbG8=?="), callBody(3, "echo", `{"region":"Hello"}`)}, 200, 0},
		{"param bad base64", call{"POST", with(std("tools/call", "echo"), "Mcp-Param-Region", "=?base64?SGVs!!!bG8=?="), callBody(3, "echo", `{"region":"Hello"}`)}, 400, -32020},
		// Mcp-Name of the tasks methods is params.taskId; a matching one
		// reaches the server, which does not know the task.
		{"task no name header", call{"POST", std("tasks/get", ""), taskGet("t1")}, 400, -32020},
		{"task name mismatch", call{"POST", std("tasks/get", "t2"), taskGet("t1")}, 400, -32020},
		{"task name ok", call{"POST", std("tasks/get", "t1"), taskGet("t1")}, 400, -32602},
		{"param literal", call{"POST", with(std("tools/call", "echo"), "Mcp-Param-Region", "=?base64?SGVsbG8="), callBody(3, "echo", `{"region":"=?base64?SGVsbG8="}`)}, 200, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := tt.c.do(t, hs.URL)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", status, tt.wantStatus, body)
			}
			if tt.wantStatus == 405 {
				return
			}
			var resp struct {
				ID     json.RawMessage     `json:"id"`
				Result json.RawMessage     `json:"result"`
				Error  *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			switch {
			case tt.wantCode == 0 && resp.Error != nil:
				t.Fatalf("error %d, want result; body %s", resp.Error.Code, body)
			case tt.wantCode != 0 && (resp.Error == nil || resp.Error.Code != tt.wantCode):
				t.Fatalf("want code %d; body %s", tt.wantCode, body)
			}
			if tt.wantCode == 0 && !bytes.Contains(resp.Result, []byte(`"resultType":"complete"`)) {
				t.Fatalf("result without resultType: %s", resp.Result)
			}
		})
	}
}

func TestProgressStreamsSSE(t *testing.T) {
	hs := testServer(t)
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	status, hd, out := call{"POST", std("tools/call", "slow"), body}.do(t, hs.URL)
	if status != 200 || hd.Get("Content-Type") != "text/event-stream" || hd.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("status %d headers %v", status, hd)
	}
	var frames []string
	for _, line := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			frames = append(frames, d)
		}
	}
	if len(frames) != 4 {
		t.Fatalf("frames = %q", frames)
	}
	for _, f := range frames[:3] {
		if !strings.Contains(f, `"method":"notifications/progress"`) || !strings.Contains(f, `"progressToken":"p1"`) {
			t.Fatalf("bad progress frame %s", f)
		}
	}
	if !strings.Contains(frames[3], `"id":9`) || !strings.Contains(frames[3], `"resultType":"complete"`) {
		t.Fatalf("last frame %s", frames[3])
	}
}

func TestJSONOnlyClientGetsNoStream(t *testing.T) {
	hs := testServer(t)
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	status, hd, out := call{"POST", with(std("tools/call", "slow"), "Accept", "application/json"), body}.do(t, hs.URL)
	if status != 200 || hd.Get("Content-Type") != "application/json" || strings.Contains(out, "notifications/progress") {
		t.Fatalf("status %d type %q body %s", status, hd.Get("Content-Type"), out)
	}
}

func TestNotificationAccepted(t *testing.T) {
	hs := testServer(t)
	status, _, _ := call{"POST", std("notifications/cancelled", ""), `{"jsonrpc":"2.0","method":"notifications/cancelled"}`}.do(t, hs.URL)
	if status != http.StatusAccepted {
		t.Fatalf("status %d", status)
	}
}
