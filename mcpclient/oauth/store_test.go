package oauth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	s := &FileStore{Dir: filepath.Join(t.TempDir(), "a", "oauth")}
	const ep = "https://mcp.example.com/mcp"
	if r, err := s.Load(ctx, ep); r != nil || err != nil {
		t.Fatalf("empty store: %v %v", r, err)
	}
	rec := &Record{Endpoint: ep, Issuer: "https://as.example.com", Client: Client{ID: "c", Secret: "client-secret-1"},
		Token: &oauth2.Token{AccessToken: "access-token-1", RefreshToken: "refresh-token-1"}}
	if err := s.Save(ctx, ep, rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, ep)
	if err != nil || got.Token.AccessToken != "access-token-1" || got.Client.Secret != "client-secret-1" {
		t.Fatalf("load: %v %v", got, err)
	}
	wantHidden(t, []string{got.String(), got.GoString(), got.LogValue().String(), got.Client.String()},
		"access-token-1", "refresh-token-1", "client-secret-1")
	wantBoundToEndpoint(t, s, ep)
	// A file others can read is refused.
	if err := os.Chmod(s.Path(ep), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, ep); err == nil || !strings.Contains(err.Error(), "readable or writable by others") {
		t.Fatalf("0644 file: %v", err)
	}
	// A directory others can write is refused for writing.
	if err := os.Chmod(s.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, ep, rec); err == nil {
		t.Fatal("saved into a world-writable directory")
	}
	os.Chmod(s.Dir, 0o700)
	if err := s.Delete(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ep); err != nil {
		t.Fatalf("deleting nothing: %v", err)
	}
	entries, _ := os.ReadDir(s.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".record-") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// wantHidden fails for every secret one of views shows.
func wantHidden(t *testing.T, views []string, secrets ...string) {
	t.Helper()
	for _, v := range views {
		for _, secret := range secrets {
			if strings.Contains(v, secret) {
				t.Errorf("%q shows %s", v, secret)
			}
		}
	}
}

// wantBoundToEndpoint checks that ep's record is not another endpoint's,
// even when its file is copied over another's.
func wantBoundToEndpoint(t *testing.T, s *FileStore, ep string) {
	t.Helper()
	ctx := context.Background()
	if r, _ := s.Load(ctx, "https://other.example.com/mcp"); r != nil {
		t.Fatal("loaded a record for another endpoint")
	}
	b, _ := os.ReadFile(s.Path(ep))
	if err := os.WriteFile(s.Path("https://x.example/mcp"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Load(ctx, "https://x.example/mcp"); r != nil {
		t.Fatal("a copied file was taken for another endpoint's")
	}
}
