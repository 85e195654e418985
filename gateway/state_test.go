package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, p := range []*payload{
		{kind: kindRelayed, upstream: "a"},
		{kind: kindRelayed, upstream: "a", hasState: true, state: ""},
		{kind: kindRelayed, upstream: "tickets", hasState: true, state: "upstream-state<&>\x00"},
		{kind: kindHeld, upstream: "b", instance: [16]byte{1}, held: [16]byte{2}, seq: 300, key: "elicitation/create-1", peerURL: "http://10.0.0.5:3100/mcp"},
		{kind: kindHeld, upstream: "b", seq: 1, key: "k"},
	} {
		got, err := decodePayload(p.encode())
		if err != nil || *got != *p {
			t.Errorf("round trip of %+v: %+v, %v", p, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {payloadVersion}, {2, kindRelayed, 1, 'a', 0}, {payloadVersion, 9, 1, 'a'},
		{payloadVersion, kindRelayed, 0, 0}, {payloadVersion, kindRelayed, 1, 'a', 2}, {payloadVersion, kindRelayed, 1, 'a', 0, 0}} {
		if _, err := decodePayload(bad); err == nil {
			t.Errorf("decodePayload(%v) accepted", bad)
		}
	}
}

// decodePayload never panics, and what it accepts survives an encode
// and decode unchanged.
func FuzzDecodePayload(f *testing.F) {
	f.Add((&payload{kind: kindRelayed, upstream: "a", hasState: true, state: "s"}).encode())
	f.Add((&payload{kind: kindHeld, upstream: "b", seq: 7, key: "k", peerURL: "http://x/mcp"}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePayload(b)
		if err != nil {
			return
		}
		again, err := decodePayload(p.encode())
		if err != nil || *again != *p {
			t.Fatalf("decode(%x) = %+v, re-decoded as %+v, %v", b, p, again, err)
		}
	})
}

func FuzzParseTokenFile(f *testing.F) {
	f.Add([]byte("@gateway g\nalice a1\n# c\n\nbob b\n"))
	f.Add([]byte("alice a b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		toks, err := ParseTokenFile(b)
		if err != nil {
			if bytes.Contains([]byte(err.Error()), []byte("\x00")) {
				t.Fatalf("error with control bytes: %q", err)
			}
			return
		}
		for p, tok := range toks {
			if tok == "" || (p == "" && !bytes.Contains(b, []byte(CatalogToken))) {
				t.Fatalf("entry %q=%q from %q", p, tok, b)
			}
		}
	})
}

// parseObject reads exactly the JSON objects without repeated member
// names that jsontext accepts, keeping each member's value byte for byte
// (encode gives back the same members and values), and refuses the rest.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":{"c":[1,2,{"d":null}]},"e":"x\u00e9"}`, ` { "a" : "b" } `, `{"a":1,"a":2}`,
		`{"a":{"b":1,"b":2}}`, `[1]`, `{"a":1} x`, `{"a":`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		orig := bytes.Clone(raw)
		o, err := parseObject(raw)
		valid := jsontext.Value(raw).IsValid() && bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
		if (err == nil) != valid {
			t.Fatalf("parseObject(%q): %v, but valid object: %v", raw, err, valid)
		}
		if !bytes.Equal(raw, orig) {
			t.Fatalf("parseObject changed its input")
		}
		if err != nil {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		again, err := parseObject(o.encode())
		if err != nil || len(o.names) != len(want) || len(again.names) != len(o.names) {
			t.Fatalf("%q: %d members, want %d; again %v", raw, len(o.names), len(want), err)
		}
		for i, n := range o.names {
			if !bytes.Equal(bytes.TrimSpace(want[n]), o.values[i]) || !bytes.Equal(again.values[i], o.values[i]) {
				t.Fatalf("%q: member %q is %q, want %q", raw, n, o.values[i], want[n])
			}
		}
	})
}
