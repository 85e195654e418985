package docsindex

import (
	"errors"
	"flag"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// update rewrites the generated block of docs/design.md instead of
// comparing: go test ./internal/docsindex -run TestDesignPackageGraph -update
var update = flag.Bool("update", false, "rewrite the package graph of docs/design.md")

// graphMarker opens the generated package graph block in docs/design.md.
const graphMarker = "<!-- package graph: generated, do not edit by hand -->\n```text\n"

// packageGraph lists every package of the module under root (bench/ left
// out) with the module's packages it imports outside test files, one line
// each, sorted, in the format of docs/design.md.
func packageGraph(root string) (string, error) {
	modFile, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(modFile), "\n", 2)[0], "module "))
	deps := map[string][]string{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || rel == "bench") {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(p, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		var ours []string
		for _, imp := range pkg.Imports {
			if after, ok := strings.CutPrefix(imp, module+"/"); ok {
				ours = append(ours, after)
			}
		}
		slices.Sort(ours)
		deps[rel] = ours
		return nil
	})
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(deps))
	width := 0
	for n, d := range deps {
		names = append(names, n)
		if len(d) > 0 {
			width = max(width, len(n))
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		if len(deps[n]) == 0 {
			fmt.Fprintln(&b, n)
			continue
		}
		fmt.Fprintf(&b, "%-*s → %s\n", width, n, strings.Join(deps[n], " "))
	}
	return b.String(), nil
}

// TestDesignPackageGraph keeps the package graph of docs/design.md equal
// to the imports in the source.
func TestDesignPackageGraph(t *testing.T) {
	root := moduleRoot(t)
	want, err := packageGraph(root)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have found the imports (mcpserver seals with reqstate).
	if !regexp.MustCompile(`(?m)^mcpserver +→ .*\breqstate\b`).MatchString(want) {
		t.Fatalf("the generated graph lacks mcpserver's imports:\n%s", want)
	}
	path := filepath.Join(root, "docs", "design.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, block, ok := strings.Cut(string(doc), graphMarker)
	if !ok {
		t.Fatalf("docs/design.md has no generated package graph (a line %q followed by a text block)", strings.SplitN(graphMarker, "\n", 2)[0])
	}
	block, after, _ := strings.Cut(block, "```")
	if block == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+graphMarker+want+"```"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/design.md's package graph differs from the imports; run\n\tgo test ./internal/docsindex -run TestDesignPackageGraph -update\nor replace its block with:\n%s", want)
}
