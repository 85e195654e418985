package reqstate

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestSealer(t testing.TB, c *clock, keys ...Key) *Sealer {
	t.Helper()
	if len(keys) == 0 {
		keys = []Key{{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)}}
	}
	s, err := New(keys, &Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustDigest(t testing.TB, args string) [32]byte {
	t.Helper()
	d, err := DigestArguments([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// RS-S-03, RS-S-05, RS-S-06, RS-S-07: every mismatch is refused with one
// opaque error and a distinct reason.
func TestOpenRefuses(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newTestSealer(t, c)
	alice := Binding{Principal: "alice", Method: "tools/call", Name: "connect_billing", ArgsDigest: mustDigest(t, `{}`)}
	tok, err := s.Seal(&Claims{Binding: alice, Round: 1, Payload: []byte("flow-1")})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 1
	other := newTestSealer(t, c, Key{ID: "k2", Secret: bytes.Repeat([]byte{2}, 32)})
	otherKeyTok, _ := other.Seal(&Claims{Binding: alice})
	sameIDOtherSecret := newTestSealer(t, c, Key{ID: "k1", Secret: bytes.Repeat([]byte{3}, 32)})
	forged, _ := sameIDOtherSecret.Seal(&Claims{Binding: alice})

	bob := alice
	bob.Principal = "bob"
	otherTool := alice
	otherTool.Name = "send_report"
	otherMethod := alice
	otherMethod.Method = "prompts/get"
	otherArgs := alice
	otherArgs.ArgsDigest = mustDigest(t, `{"x":1}`)

	tests := []struct {
		name    string
		token   string
		binding Binding
		advance time.Duration
		want    Reason
	}{
		{"tampered", base64.RawURLEncoding.EncodeToString(flipped), alice, 0, ReasonTampered},
		{"suffix", tok + "-TAMPERED", alice, 0, ""},
		{"truncated", tok[:len(tok)-4], alice, 0, ""},
		{"truncated odd", tok[:len(tok)-5], alice, 0, ReasonMalformed},
		{"very truncated", tok[:10], alice, 0, ReasonMalformed},
		{"not base64", "!!!" + tok, alice, 0, ReasonMalformed},
		{"empty", "", alice, 0, ReasonMalformed},
		{"too long", strings.Repeat("A", MaxTokenLen+1), alice, 0, ReasonMalformed},
		{"unknown key", otherKeyTok, alice, 0, ReasonUnknownKey},
		{"forged with same key id", forged, alice, 0, ReasonTampered},
		{"expired", tok, alice, DefaultTTL, ReasonExpired},
		{"other user", tok, bob, 0, ReasonPrincipal},
		{"other tool", tok, otherTool, 0, ReasonName},
		{"other method", tok, otherMethod, 0, ReasonMethod},
		{"other arguments", tok, otherArgs, 0, ReasonArguments},
		// Who and what are checked before expiry and arguments, so that
		// ReasonExpired and ReasonArguments imply the right principal and
		// target (mcpserver's HandlerOptions.RestartStale relies on it).
		{"expired, other user", tok, bob, DefaultTTL, ReasonPrincipal},
		{"expired, other tool", tok, otherTool, DefaultTTL, ReasonName},
		{"expired, other method", tok, otherMethod, DefaultTTL, ReasonMethod},
		{"expired, other arguments", tok, otherArgs, DefaultTTL, ReasonExpired},
		{"other user and arguments", tok, func() Binding { b := otherArgs; b.Principal = "bob"; return b }(), 0, ReasonPrincipal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = time.Unix(1_800_000_000, 0).Add(tt.advance)
			_, err := s.Open(tt.token, tt.binding)
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("Open = %v, want *Error", err)
			}
			if tt.want != "" && re.Reason != tt.want { // "": malformed or tampered, by length
				t.Fatalf("reason = %s, want %s", re.Reason, tt.want)
			}
			if !errors.Is(err, ErrInvalid) || err.Error() != "invalid or expired requestState" {
				t.Fatalf("error text %q leaks the reason", err.Error())
			}
		})
	}
	// One token, one spelling: the unused low bits of the last character
	// must be zero (strict base64), so no two strings open as one state.
	c.t = time.Unix(1_800_000_000, 0)
	if len(tok)%4 != 0 {
		last := tok[len(tok)-1]
		for _, ch := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") {
			if ch == last {
				continue
			}
			if _, err := s.Open(tok[:len(tok)-1]+string(ch), alice); err == nil {
				t.Fatalf("token with last character %q also opens", ch)
			}
		}
	}
	c.t = time.Unix(1_800_000_000, 0).Add(DefaultTTL - time.Second)
	got, err := s.Open(tok, alice)
	if err != nil {
		t.Fatalf("valid state refused: %v", err)
	}
	if string(got.Payload) != "flow-1" || got.Round != 1 || got.Principal != "alice" {
		t.Fatalf("claims = %+v", got)
	}
}

func TestRotation(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	old := Key{ID: "old", Secret: bytes.Repeat([]byte{7}, 32)}
	cur := Key{ID: "new", Secret: bytes.Repeat([]byte{8}, 32)}
	before := newTestSealer(t, c, old)
	after := newTestSealer(t, c, cur, old)
	b := Binding{Principal: "p", Method: "tools/call", Name: "t", ArgsDigest: mustDigest(t, `{}`)}
	tok, _ := before.Seal(&Claims{Binding: b})
	if _, err := after.Open(tok, b); err != nil {
		t.Fatalf("state sealed with the old key refused after rotation: %v", err)
	}
	tok2, _ := after.Seal(&Claims{Binding: b})
	if _, err := before.Open(tok2, b); err == nil {
		t.Fatal("old ring opened a state sealed with a key it does not have")
	}
}

func TestNewRejectsBadKeys(t *testing.T) {
	good := bytes.Repeat([]byte{1}, 32)
	for name, keys := range map[string][]Key{
		"none":      nil,
		"short":     {{ID: "a", Secret: good[:16]}},
		"empty id":  {{ID: "", Secret: good}},
		"long id":   {{ID: strings.Repeat("x", 256), Secret: good}},
		"duplicate": {{ID: "a", Secret: good}, {ID: "a", Secret: good}},
	} {
		if _, err := New(keys, nil); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestDigestArgumentsCanonical(t *testing.T) {
	same := [][2]string{
		{`{"a":1,"b":"x"}`, `{ "b" : "x", "a" : 1 }`},
		{``, `{}`},
		{`null`, `{}`},
		{`{"n":{"z":true,"y":[1,2]}}`, `{"n":{"y":[1,2],"z":true}}`},
	}
	for _, p := range same {
		if mustDigest(t, p[0]) != mustDigest(t, p[1]) {
			t.Errorf("%s and %s should share a digest", p[0], p[1])
		}
	}
	differ := [][2]string{{`{"a":1}`, `{"a":2}`}, {`{"a":[1,2]}`, `{"a":[2,1]}`}, {`{"a":"1"}`, `{"a":1}`}}
	for _, p := range differ {
		if mustDigest(t, p[0]) == mustDigest(t, p[1]) {
			t.Errorf("%s and %s should differ", p[0], p[1])
		}
	}
	if _, err := DigestArguments([]byte(`{"a":`)); err == nil {
		t.Error("invalid JSON accepted")
	}
}

// The billing flow's state must stay small (issue: ≤ 512 bytes).
func TestBillingStateSize(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newTestSealer(t, c)
	payload := append([]byte{1, 11}, "billing_key"...)
	payload = append(payload, 2)
	payload = append(payload, "0123456789abcdef0123456789abcdef"...)
	tok, _ := s.Seal(&Claims{Binding: Binding{Principal: "alice@example.com", Method: "tools/call", Name: "connect_billing"}, Round: 1, Payload: payload})
	if len(tok) > 512 {
		t.Fatalf("billing state is %d bytes", len(tok))
	}
}

func FuzzOpen(f *testing.F) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newTestSealer(f, c)
	b := Binding{Principal: "alice", Method: "tools/call", Name: "x"}
	tok, _ := s.Seal(&Claims{Binding: b, Payload: []byte("p")})
	f.Add(tok)
	f.Add(tok + "A")
	f.Add("AQJrMQ")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		claims, err := s.Open(token, b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		// Only a real sealed token may open; the fuzzer cannot forge GCM.
		if token != tok && claims.Principal != "alice" {
			t.Fatalf("forged token opened: %q", token)
		}
	})
}

func BenchmarkSealOpen(b *testing.B) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newTestSealer(b, c)
	bind := Binding{Principal: "alice", Method: "tools/call", Name: "connect_billing"}
	cl := &Claims{Binding: bind, Round: 1, Payload: []byte("0123456789abcdef0123456789abcdef")}
	b.ReportAllocs()
	for b.Loop() {
		tok, err := s.Seal(cl)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Open(tok, bind); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDigestArguments(b *testing.B) {
	args := []byte(`{"level":"summary","label":"Q3 revenue","dry_run":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DigestArguments(args); err != nil {
			b.Fatal(err)
		}
	}
}

// SetKeys rotates a live Sealer: the new first key seals, old keys still
// open until they are dropped, and a bad ring leaves the old one in place.
func TestSetKeys(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	k1 := Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)}
	k2 := Key{ID: "k2", Secret: bytes.Repeat([]byte{2}, 32)}
	s := newTestSealer(t, c, k1)
	b := Binding{Principal: "alice", Method: "tools/call", Name: "t", ArgsDigest: mustDigest(t, `{}`)}
	old, _ := s.Seal(&Claims{Binding: b})
	reason := func(tok string) Reason {
		_, err := s.Open(tok, b)
		var re *Error
		if errors.As(err, &re) {
			return re.Reason
		}
		if err != nil {
			t.Fatal(err)
		}
		return ""
	}
	if err := s.SetKeys([]Key{k2, k1}); err != nil {
		t.Fatal(err)
	}
	if ids := s.KeyIDs(); strings.Join(ids, ",") != "k2,k1" {
		t.Fatalf("KeyIDs = %v", ids)
	}
	fresh, _ := s.Seal(&Claims{Binding: b})
	raw, _ := base64.RawURLEncoding.DecodeString(fresh)
	if string(raw[2:4]) != "k2" || reason(old) != "" || reason(fresh) != "" {
		t.Fatalf("after rotation: fresh sealed with %q, old %q, fresh %q", raw[2:4], reason(old), reason(fresh))
	}
	for _, bad := range [][]Key{nil, {k2, k2}, {{ID: "", Secret: k1.Secret}}, {{ID: "k3", Secret: []byte("short")}}} {
		if err := s.SetKeys(bad); err == nil {
			t.Errorf("SetKeys(%v) accepted", bad)
		}
	}
	if err := s.SetKeys([]Key{k2}); err != nil {
		t.Fatal(err)
	}
	if reason(old) != ReasonUnknownKey || reason(fresh) != "" {
		t.Fatalf("after retiring k1: old %q, fresh %q", reason(old), reason(fresh))
	}
}
