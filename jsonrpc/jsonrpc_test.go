package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantCode int // 0 = success
		wantID   string
		method   string
		notif    bool
	}{
		{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{}}`, 0, `"a-1"`, "tools/list", false},
		{"int id", `{"jsonrpc":"2.0","id":42,"method":"m"}`, 0, `42`, "m", false},
		{"negative id", `{"jsonrpc":"2.0","id":-7,"method":"m"}`, 0, `-7`, "m", false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/x"}`, 0, ``, "notifications/x", true},
		{"whitespace", " \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n ", 0, `1`, "m", false},
		{"not json", `{"jsonrpc":`, CodeParseError, "", "", false},
		{"empty", ``, CodeParseError, "", "", false},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"m"}x`, CodeParseError, "", "", false},
		{"two objects", `{"jsonrpc":"2.0","id":1,"method":"m"}{}`, CodeParseError, "", "", false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, CodeInvalidRequest, "", "", false},
		{"scalar", `42`, CodeInvalidRequest, "", "", false},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"m"}`, CodeInvalidRequest, `1`, "", false},
		{"missing version", `{"id":1,"method":"m"}`, CodeInvalidRequest, `1`, "", false},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, `1`, "", false},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, `1`, "", false},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"m"}`, CodeInvalidRequest, ``, "", false},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, CodeInvalidRequest, ``, "", false},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, CodeInvalidRequest, ``, "", false},
		{"params array", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, CodeInvalidRequest, `1`, "", false},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, CodeInvalidRequest, `1`, "", false},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, CodeInvalidRequest, `1`, "", false},
		{"unknown member", `{"jsonrpc":"2.0","id":1,"method":"m","extra":1}`, CodeInvalidRequest, `1`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(tt.in))
			if tt.wantCode != 0 {
				if err == nil {
					t.Fatalf("DecodeRequest(%s) succeeded, want code %d", tt.in, tt.wantCode)
				}
				if err.Code != tt.wantCode {
					t.Fatalf("code = %d (%s), want %d", err.Code, err.Message, tt.wantCode)
				}
				if req != nil && req.ID.String() != tt.wantID {
					t.Fatalf("id = %q, want %q", req.ID.String(), tt.wantID)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if req.ID.String() != tt.wantID || req.Method != tt.method || req.IsNotification() != tt.notif {
				t.Fatalf("got id=%q method=%q notif=%v", req.ID.String(), req.Method, req.IsNotification())
			}
		})
	}
}

func TestResponseEchoesID(t *testing.T) {
	req, jerr := DecodeRequest([]byte(`{"jsonrpc":"2.0","id":"x\u0041","method":"m"}`))
	if jerr != nil {
		t.Fatal(jerr)
	}
	b, err := json.Marshal(&Response{ID: req.ID, Result: map[string]int{"a": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"x\u0041","result":{"a":1}}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	b, _ = json.Marshal(&Response{Error: NewError(CodeParseError, "bad")})
	if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	if strings.Contains(string(b), "\n") {
		t.Fatal("response spans lines")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{}}}`,
		`{"jsonrpc":"2.0","method":"n"}`, `[]`, `{"id":null}`, `{"jsonrpc":"2.0","id":"a","method":"m","params":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		if err != nil {
			if err.Code != CodeParseError && err.Code != CodeInvalidRequest {
				t.Fatalf("unexpected code %d", err.Code)
			}
			return
		}
		if req.Method == "" {
			t.Fatal("accepted a request without method")
		}
		if !req.ID.IsZero() {
			var v any
			if json.Unmarshal(req.ID.Raw(), &v) != nil {
				t.Fatalf("id %q is not JSON", req.ID.Raw())
			}
		}
		if len(req.Params) > 0 && !json.Valid(req.Params) {
			t.Fatal("params not valid JSON")
		}
		// A response built from it must encode.
		if _, err := json.Marshal(&Response{ID: req.ID, Result: struct{}{}}); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
