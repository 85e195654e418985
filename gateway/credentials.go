package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
)

// Credentials give the bearer token the gateway presents to one upstream
// for one user. The token of the gateway's own client is never among
// them: a request's Authorization reaches the gateway's authenticator and
// stops there (basic/security_best_practices.mdx §Token Passthrough), so
// every upstream sees its own credential for the user, from the
// gateway's configuration or a vault.
type Credentials interface {
	// Token returns the token to send upstream on behalf of principal
	// (the authenticated user's id); principal CatalogPrincipal is the
	// gateway itself, listing the upstream's tools, prompts and
	// resources. "" sends no Authorization header. ErrNoCredentials
	// (wrapped or not) says the user has none for this upstream; the
	// client then gets a -32603 error that says so.
	Token(ctx context.Context, principal string) (string, error)
}

// CatalogPrincipal is the principal the gateway lists an upstream's
// catalog as: itself, not any user.
const CatalogPrincipal = ""

// ErrNoCredentials: the gateway holds no credential for this user at
// this upstream.
var ErrNoCredentials = errors.New("gateway: no upstream credentials for this user")

// Anonymous sends no Authorization header to the upstream.
type Anonymous struct{}

// Token returns "".
func (Anonymous) Token(context.Context, string) (string, error) { return "", nil }

// Tokens maps each principal to its token at one upstream; the key
// CatalogPrincipal ("") is the gateway's own, used to list the catalog. A
// principal without an entry has no credentials (ErrNoCredentials).
type Tokens map[string]string

// Token returns the principal's token, or ErrNoCredentials.
func (t Tokens) Token(_ context.Context, principal string) (string, error) {
	tok, ok := t[principal]
	if !ok {
		return "", ErrNoCredentials
	}
	return tok, nil
}

// CatalogToken is the name of the gateway's own entry in a token file.
const CatalogToken = "@gateway"

// ParseTokenFile reads a token file: one "principal token" pair a line,
// separated by white space; blank lines and lines starting with # are
// skipped. The principal @gateway names the gateway's own token
// (CatalogPrincipal), used to list the upstream's catalog. A repeated
// principal, a line without a token or a token with control characters
// is an error naming the line (never the token).
func ParseTokenFile(data []byte) (Tokens, error) {
	t := Tokens{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"principal token\"", n)
		}
		principal, tok := f[0], f[1]
		if principal == CatalogToken {
			principal = CatalogPrincipal
		}
		if strings.IndexFunc(tok, unicode.IsControl) >= 0 {
			return nil, fmt.Errorf("line %d: the token has control characters", n)
		}
		if _, dup := t[principal]; dup {
			return nil, fmt.Errorf("line %d: principal %q given twice", n, f[0])
		}
		t[principal] = tok
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

// LoadTokenFile reads ParseTokenFile's format from path. The file should
// be readable by the gateway's user only; a file others may read is
// refused.
func LoadTokenFile(path string) (Tokens, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: the token file is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokenFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// CredentialsFunc adapts a function to Credentials.
type CredentialsFunc func(ctx context.Context, principal string) (string, error)

// Token calls f.
func (f CredentialsFunc) Token(ctx context.Context, principal string) (string, error) {
	return f(ctx, principal)
}
