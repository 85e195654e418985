package auth

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDemoBearer(t *testing.T) {
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer alice", "alice", true},
		{"bearer alice", "alice", true},
		{"Bearer  bob.smith-2_x ", "bob.smith-2_x", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic YWxpY2U6eA==", "", false},
		{"Bearer al ice", "", false},
		{"Bearer <script>", "", false},
		{"Bearer " + strings.Repeat("a", 65), "", false},
		{"Bearer " + strings.Repeat("a", 64), strings.Repeat("a", 64), true},
		{"Bearer élise", "", false},
	}
	d := DemoBearer{Realm: "elicitd"}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		p, err := d.Authenticate(r)
		if tt.ok != (err == nil) || p.Subject != tt.want {
			t.Errorf("%q: got %q, %v", tt.header, p.Subject, err)
		}
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%q: error %v is not ErrUnauthenticated", tt.header, err)
		}
		// A refusal says how to authenticate; a token sent but refused
		// is an invalid_token (RFC 6750 §3.1), no token just the challenge.
		var ae *Error
		if err != nil && (!errors.As(err, &ae) || ae.Status != 401 || !strings.HasSuffix(ae.Help, DemoHelp) ||
			(ae.Challenge == d.Challenge()) != (tt.header == "" || strings.HasPrefix(tt.header, "Basic"))) {
			t.Errorf("%q: %#v", tt.header, err)
		}
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Add("Authorization", "Bearer alice")
	r.Header.Add("Authorization", "Bearer bob")
	if p, err := d.Authenticate(r); err == nil {
		t.Errorf("two Authorization headers accepted as %q", p.Subject)
	}
	if c := d.Challenge(); c != `Bearer realm="elicitd"` {
		t.Errorf("challenge %q", c)
	}
}

func TestContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("principal in an empty context")
	}
	ctx := WithPrincipal(context.Background(), Principal{Subject: "alice"})
	if p, ok := FromContext(ctx); !ok || p.Subject != "alice" {
		t.Fatalf("got %v %v", p, ok)
	}
}
