package auth

import (
	"net/http"
	"strings"
	"testing"
)

func TestPrincipalID(t *testing.T) {
	tests := []struct {
		id   string
		want Principal
		ok   bool
	}{
		{"alice", Principal{Subject: "alice"}, true},
		{"https://idp.example.com#248289761001", Principal{Issuer: "https://idp.example.com", Subject: "248289761001"}, true},
		{"https://idp.example.com/tenant/v2.0#auth0|a#b", Principal{Issuer: "https://idp.example.com/tenant/v2.0", Subject: "auth0|a#b"}, true},
		{"http://127.0.0.1:8080#alice", Principal{Issuer: "http://127.0.0.1:8080", Subject: "alice"}, true},
		{"", Principal{}, false},
		{"al ice", Principal{}, false},
		{"#alice", Principal{}, false},
		{"https://idp.example.com#", Principal{}, false},
		{"https://idp.example.com#a b", Principal{}, false},
		{"https://idp.example.com#" + strings.Repeat("a", 256), Principal{}, false},
		{"http://idp.example.com#alice", Principal{}, false}, // http off loopback
		{"https://idp.example.com?x=1#alice", Principal{}, false},
		{"https://u@idp.example.com#alice", Principal{}, false},
		{"idp.example.com#alice", Principal{}, false},
		{"https://idp.example.com#al\x00ice", Principal{}, false},
	}
	for _, tt := range tests {
		p, err := ParseID(tt.id)
		if tt.ok != (err == nil) || p != tt.want {
			t.Errorf("ParseID(%q) = %+v, %v", tt.id, p, err)
		}
		if err == nil && p.ID() != tt.id {
			t.Errorf("ParseID(%q).ID() = %q", tt.id, p.ID())
		}
	}
	// Same subject at two issuers, or issuer/subject split differently:
	// never one id.
	a := Principal{Issuer: "https://a.example", Subject: "x#y"}
	b := Principal{Issuer: "https://a.example#x", Subject: "y"}
	if _, err := ParseID(b.ID()); err == nil && a.ID() == b.ID() {
		if p, _ := ParseID(a.ID()); p != a {
			t.Errorf("ambiguous: %q", a.ID())
		}
	}
	if (Principal{Issuer: "https://a.example", Subject: "alice"}).ID() == (Principal{Subject: "alice"}).ID() {
		t.Error("issuer ignored")
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		headers []string
		want    string
		err     error
	}{
		{[]string{"Bearer abc.def-_~+/=="}, "abc.def-_~+/==", nil},
		{[]string{"bearer abc"}, "abc", nil},
		{[]string{"BEARER   abc \t"}, "abc", nil},
		{[]string{" Bearer abc"}, "abc", nil},
		{nil, "", ErrNoBearer},
		{[]string{"Basic YWxpY2U6eA=="}, "", ErrNoBearer},
		{[]string{"Bearer"}, "", ErrMalformedBearer},
		{[]string{"Bearerabc"}, "", ErrNoBearer},
		{[]string{"Bearer abc", "Bearer abc"}, "", ErrManyAuthorization},
		{[]string{"Bearer "}, "", ErrMalformedBearer},
		{[]string{"Bearer a b"}, "", ErrMalformedBearer},
		{[]string{"Bearer ===="}, "", ErrMalformedBearer},
		{[]string{"Bearer a=b"}, "", ErrMalformedBearer},
		{[]string{"Bearer a,b"}, "", ErrMalformedBearer},
		{[]string{"Bearer é"}, "", ErrMalformedBearer},
		{[]string{"Bearer " + strings.Repeat("a", MaxTokenLen+1)}, "", ErrMalformedBearer},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.headers {
			h.Add("Authorization", v)
		}
		got, err := BearerToken(h)
		if got != tt.want || err != tt.err {
			t.Errorf("%q: got %q, %v; want %q, %v", tt.headers, got, err, tt.want, tt.err)
		}
	}
}

// FuzzBearerToken: any header value gives either a b64token that occurs
// in the value, or one of the fixed errors (which cannot quote it).
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a.b.c==", "Basic x", "Bearer a b", "Bearer ", "", "Bearer \t=", "Bearer é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Authorization": {v}}
		tok, err := BearerToken(h)
		if err != nil {
			if tok != "" {
				t.Fatalf("%q: token %q with error %v", v, tok, err)
			}
			if err != ErrNoBearer && err != ErrMalformedBearer {
				t.Fatalf("%q: unexpected error %v", v, err)
			}
			return
		}
		if !validB64Token(tok) || !strings.Contains(v, tok) || strings.ContainsAny(tok, " \t") {
			t.Fatalf("%q: bad token %q", v, tok)
		}
	})
}

// FuzzParseID: whatever ParseID accepts round-trips through ID, and ID of
// a valid principal parses back to it.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"alice", "https://idp.example#sub", "http://127.0.0.1:1#a#b", "#", "https://x#", "a#b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		p, err := ParseID(id)
		if err != nil {
			return
		}
		if p.ID() != id {
			t.Fatalf("ParseID(%q) = %+v, ID %q", id, p, p.ID())
		}
		if p.Issuer == "" && !ValidUserName(p.Subject) || p.Issuer != "" && (ValidIssuer(p.Issuer) != nil || !ValidSubject(p.Subject)) {
			t.Fatalf("ParseID(%q) accepted invalid %+v", id, p)
		}
		if strings.Contains(p.Issuer, "#") {
			t.Fatalf("issuer with '#': %q", p.Issuer)
		}
	})
}
