// Package npmtest runs Node.js interop peers in tests: npm packages (the
// TypeScript MCP SDK's client and server) are installed at test time, once
// per machine, into a cache outside the repository, never committed.
//
// Without node or npm, or when the install fails (no network), the test
// is skipped, unless ELICIT_TS_TEST=require (as in CI), which makes that a
// failure. -short skips these tests too, unless required.
package npmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// RequireEnv names the variable that turns a missing Node.js or a failed
// install into a test failure ("require").
const RequireEnv = "ELICIT_TS_TEST"

// CacheEnv names the variable that moves the cache (default: the user's
// cache directory, elicit/npm).
const CacheEnv = "ELICIT_NPM_CACHE"

// Required reports whether ELICIT_TS_TEST=require: the Node.js tests must
// run (even in -short) and fail, not skip, without node or npm.
func Required() bool { return os.Getenv(RequireEnv) == "require" }

// Script copies script (a .mjs file, usually under testdata) into a new
// temporary directory where pkgs (name@version, exact) resolve, and returns
// the copy's path: run it with "node <path>". It skips or fails the test as
// the package doc says.
func Script(t testing.TB, script string, pkgs ...string) string {
	t.Helper()
	modules := Install(t, pkgs...)
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true,"type":"module"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(script))
	if err := os.WriteFile(out, src, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// Install returns a node_modules directory holding pkgs, installing them
// into the cache the first time.
func Install(t testing.TB, pkgs ...string) string {
	t.Helper()
	required := Required()
	skip := func(why string) {
		t.Helper()
		if required {
			t.Fatalf("%s=require, but %s", RequireEnv, why)
		}
		t.Skipf("%s; set %s=require to make this a failure", why, RequireEnv)
	}
	if testing.Short() && !required {
		t.Skip("Node.js interop skipped in -short mode")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("npm is not on PATH")
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip("node is not on PATH")
	}
	root := os.Getenv(CacheEnv)
	if root == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		root = filepath.Join(base, "elicit", "npm")
	}
	sorted := slices.Sorted(slices.Values(pkgs))
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return modules
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		skip("cannot create the npm cache: " + err.Error())
	}
	// Installed aside, then renamed into place: a test binary that races
	// this one either wins the rename or uses the winner's.
	tmp, err := os.MkdirTemp(root, "partial-")
	if err != nil {
		skip("cannot create the npm cache: " + err.Error())
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private":true,"type":"module"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline", "--save-exact"}, sorted...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		skip("npm install " + strings.Join(sorted, " ") + " failed: " + err.Error() + "\n" + string(out))
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		_ = os.RemoveAll(dir) // a broken earlier install
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".complete")); serr != nil {
			t.Fatalf("installing into the npm cache: %v", err)
		}
	}
	return modules
}
