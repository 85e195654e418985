package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Record is what an Authorizer keeps for one MCP endpoint: where its
// token comes from, the client registration there, and the token. It
// holds secrets (the client secret, the tokens): its String, GoString and
// LogValue leave them out, so a record printed or logged by mistake
// shows none.
type Record struct {
	// Endpoint is the MCP endpoint URL (the store key).
	Endpoint string `json:"endpoint"`
	// Resource is the protected resource's identifier from its metadata,
	// sent as the resource parameter (RFC 8707).
	Resource string `json:"resource"`
	// Issuer is the authorization server's issuer identifier: the client
	// registration and the token belong to it.
	Issuer string `json:"issuer"`
	// TokenEndpoint is the issuer's token endpoint, for refreshing.
	TokenEndpoint string `json:"token_endpoint"`
	// Grant is how the token was obtained.
	Grant Grant `json:"grant"`
	// Client is the client registration at Issuer.
	Client Client `json:"client"`
	// Scopes is the scope set last requested (the union of every
	// challenge's scopes so far, basic/authorization.mdx §Step-Up
	// Authorization Flow).
	Scopes []string `json:"scopes,omitempty"`
	// Token is the token response; nil when signed out of the token only.
	Token *oauth2.Token `json:"token,omitempty"`
}

// String describes r without secrets.
func (r *Record) String() string {
	if r == nil {
		return "<nil>"
	}
	tok := "no token"
	if r.Token != nil {
		tok = "token"
		if !r.Token.Expiry.IsZero() {
			tok += " until " + r.Token.Expiry.UTC().Format(time.RFC3339)
		}
		if r.Token.RefreshToken != "" {
			tok += ", refreshable"
		}
	}
	return fmt.Sprintf("oauth.Record{endpoint %s, issuer %s, client %s, scopes %v, %s}", r.Endpoint, r.Issuer, r.Client.String(), r.Scopes, tok)
}

// GoString is String, so %#v shows no secret either.
func (r *Record) GoString() string { return r.String() }

// LogValue is String, for log/slog.
func (r *Record) LogValue() slog.Value { return slog.StringValue(r.String()) }

// Client is a client registration at one authorization server. Secret is
// a secret; String leaves it out.
type Client struct {
	// ID is the client_id: registered, pre-registered, or the URL of a
	// client ID metadata document.
	ID string `json:"client_id"`
	// Secret is the client secret, "" for a public client.
	Secret string `json:"client_secret,omitempty"`
	// AuthMethod is the token endpoint authentication method:
	// client_secret_basic, client_secret_post or none.
	AuthMethod string `json:"token_endpoint_auth_method"`
	// Kind is how the id was obtained: ClientPreRegistered,
	// ClientMetadataDocument or ClientDynamic.
	Kind string `json:"kind"`
	// RedirectURIs are the registered redirect URIs (dynamic
	// registration).
	RedirectURIs []string `json:"redirect_uris,omitempty"`
}

// Client kinds, in the order of preference of
// basic/authorization/client-registration.mdx.
const (
	ClientPreRegistered    = "pre-registered"
	ClientMetadataDocument = "metadata-document"
	ClientDynamic          = "dynamic"
)

// String describes c without its secret.
func (c Client) String() string {
	s := fmt.Sprintf("%s (%s, %s", c.ID, c.Kind, c.AuthMethod)
	if c.Secret != "" {
		s += ", with a secret"
	}
	return s + ")"
}

// GoString is String.
func (c Client) GoString() string { return c.String() }

// Store keeps records across runs, one per MCP endpoint. Implementations
// must be safe for concurrent use; Load returns nil, nil when there is no
// record.
type Store interface {
	Load(ctx context.Context, endpoint string) (*Record, error)
	Save(ctx context.Context, endpoint string, r *Record) error
	Delete(ctx context.Context, endpoint string) error
}

// MemoryStore keeps records for the life of the process: the default.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Load returns a copy of the record for endpoint, or nil.
func (s *MemoryStore) Load(ctx context.Context, endpoint string) (*Record, error) {
	s.mu.Lock()
	b, ok := s.m[endpoint]
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Save stores a copy of r.
func (s *MemoryStore) Save(ctx context.Context, endpoint string, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[endpoint] = b
	return nil
}

// Delete forgets endpoint's record.
func (s *MemoryStore) Delete(ctx context.Context, endpoint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, endpoint)
	return nil
}

// FileStore keeps one JSON file per endpoint in Dir, named by a hash of
// the endpoint URL. Dir is created with mode 0700 and every file is
// written 0600, through a temporary file renamed into place, so a reader
// never sees half a record. A file or directory that others may read or
// write is refused, not used: tokens there may have been seen or planted.
// The OS keyring is not used; a Store of your own can put records there.
type FileStore struct {
	Dir string
}

// UserFileStore is a FileStore in the user's configuration directory
// (os.UserConfigDir, e.g. ~/.config on Linux) under app/oauth.
func UserFileStore(app string) (*FileStore, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("oauth: no configuration directory for the token cache: %w", err)
	}
	return &FileStore{Dir: filepath.Join(dir, app, "oauth")}, nil
}

// Path returns the file that holds endpoint's record.
func (s *FileStore) Path(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16])+".json")
}

// Load reads endpoint's record; nil, nil when there is none.
func (s *FileStore) Load(ctx context.Context, endpoint string) (*Record, error) {
	p := s.Path(endpoint)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: token cache: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oauth: token cache: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("oauth: token cache %s is readable or writable by others (mode %v): refusing to use it; delete it and sign in again", p, fi.Mode().Perm())
	}
	var r Record
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return nil, fmt.Errorf("oauth: token cache %s is damaged (%v); delete it and sign in again", p, err)
	}
	if r.Endpoint != endpoint {
		return nil, nil // a hash collision or a copied file: not this endpoint's
	}
	return &r, nil
}

// Save writes endpoint's record, mode 0600.
func (s *FileStore) Save(ctx context.Context, endpoint string, r *Record) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	fi, err := os.Stat(s.Dir)
	if err != nil {
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("oauth: token cache directory %s is writable by others (mode %v): refusing to write tokens there", s.Dir, fi.Mode().Perm())
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.Dir, ".record-*")
	if err != nil {
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	if err := os.Rename(tmp, s.Path(endpoint)); err != nil {
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	return nil
}

// Delete removes endpoint's record; no record is no error.
func (s *FileStore) Delete(ctx context.Context, endpoint string) error {
	err := os.Remove(s.Path(endpoint))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oauth: token cache: %w", err)
	}
	return nil
}
