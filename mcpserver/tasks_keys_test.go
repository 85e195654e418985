package mcpserver

import (
	"encoding/json"
	"testing"
)

// TestTaskKeysUniqueOverItsLife: the key a task's question goes out
// under is never one the task used before, even when a handler's own
// key looks like a derived one; the handler reads its answers under its
// own keys.
func TestTaskKeysUniqueOverItsLife(t *testing.T) {
	tests := []struct {
		keys []string
		used []string
		want map[string]string
	}{
		{[]string{"to"}, nil, map[string]string{"to": "to"}},
		{[]string{"to"}, []string{"to"}, map[string]string{"to": "to#2"}},
		{[]string{"to"}, []string{"to", "to#2"}, map[string]string{"to": "to#3"}},
		{[]string{"to", "to#2"}, []string{"to"}, map[string]string{"to": "to#3", "to#2": "to#2"}},
		{[]string{"to#2", "to"}, []string{"to", "to#2"}, map[string]string{"to": "to#3", "to#2": "to#2#2"}},
	}
	for _, tt := range tests {
		used := map[string]bool{}
		for _, k := range tt.used {
			used[k] = true
		}
		got := taskKeys(tt.keys, used)
		if len(got) != len(tt.want) {
			t.Errorf("taskKeys(%v, %v) = %v, want %v", tt.keys, tt.used, got, tt.want)
		}
		for k, w := range tt.want {
			if got[k] != w {
				t.Errorf("taskKeys(%v, %v)[%q] = %q, want %q", tt.keys, tt.used, k, got[k], w)
			}
		}
	}
}

// TestTaskPayloadKeepsKeys: a task's payload keeps the key each question
// went out under and the keys the task has used, and still reads as
// before where it has neither (MRTR's sealed state).
func TestTaskPayloadKeepsKeys(t *testing.T) {
	a := Ask().ElicitForm("to", "m", json.RawMessage(emailForm)).ElicitURL("u", "m", "https://x.example/").WithState([]byte("app"))
	iss := a.issued
	to := iss["to"]
	to.wire, to.reasks = "to#2", 2
	iss["to"] = to
	b := encodeTaskAsked(iss, map[string]bool{"to": true, "to#2": true, "u": true}, a.state)
	got, used, state, ok := decodeTaskPayload(b)
	if !ok || string(state) != "app" || len(got) != 2 || got["to"].wire != "to#2" || got["to"].reasks != 2 || got["u"].wire != "" ||
		string(got["to"].schema) != emailForm || len(used) != 3 || !used["to#2"] {
		t.Fatalf("decoded %+v, used %v, state %q, ok %v", got, used, state, ok)
	}
	if plain, state, ok := decodePayload(b); !ok || len(plain) != 2 || string(state) != "app" {
		t.Fatalf("decodePayload of a task payload: %v %q %v", plain, state, ok)
	}
	// MRTR's payload is unchanged: no key of the wire, no used keys.
	if mrtr := encodePayload(Ask().ElicitForm("to", "m", json.RawMessage(emailForm))); mrtr[4] != kindForm { // n, len "to", "to", kind
		t.Fatalf("MRTR's payload changed: %v", mrtr)
	}
}
