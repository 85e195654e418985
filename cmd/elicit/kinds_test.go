package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parseFiles parses the Go files of the package in dir, test files left
// out.
func parseFiles(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			files = append(files, f)
		}
	}
	return fset, files
}

// stringConsts returns the string constants of the package in dir (test
// files left out) whose names match name.
func stringConsts(t *testing.T, dir string, name *regexp.Regexp) map[string]string {
	t.Helper()
	_, files := parseFiles(t, dir)
	out := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if i >= len(vs.Values) || !name.MatchString(id.Name) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out[id.Name] = v
				}
			}
			return true
		})
	}
	return out
}

// documentedKinds returns the kinds listed in docs/elicit.md (at path)
// after `{"error":{"kind":K,"message":M}}`.
func documentedKinds(t *testing.T, path string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)`\\{\"error\":\\{\"kind\":K,\"message\":M\\}\\}`\\s*\\(K one of (.*?)\\)").FindSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/elicit.md has no "{"error":{"kind":K,"message":M}} (K one of …)" list`)
	}
	var listed []string
	for _, q := range regexp.MustCompile("`([a-z][a-z-]*)`").FindAllSubmatch(m[1], -1) {
		listed = append(listed, string(q[1]))
	}
	return listed
}

// kindArguments returns the kind argument of every call of a fail method
// (two arguments) and of writeJSONError (three) in the package in dir,
// test files left out.
func kindArguments(t *testing.T, dir string) (*token.FileSet, []ast.Expr) {
	t.Helper()
	fset, files := parseFiles(t, dir)
	var args []ast.Expr
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if arg := kindArgument(call); arg != nil {
					args = append(args, arg)
				}
			}
			return true
		})
	}
	return fset, args
}

func kindArgument(call *ast.CallExpr) ast.Expr {
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		if fn.Sel.Name == "fail" && len(call.Args) == 2 {
			return call.Args[0]
		}
	case *ast.Ident:
		if fn.Name == "writeJSONError" && len(call.Args) == 3 {
			return call.Args[1]
		}
	}
	return nil
}

// TestCheckErrorKindsDocumented: every kind elicit check --json can put in
// its {"error":{"kind":K}} object — the check.Kind constants and this
// command's own — is listed in docs/elicit.md, the list names no other,
// and every kind passed to fail or writeJSONError is one of those
// constants (a literal would escape this test).
func TestCheckErrorKindsDocumented(t *testing.T) {
	kinds := stringConsts(t, "../../check", regexp.MustCompile(`^Kind[A-Z]`))
	for name, v := range stringConsts(t, ".", regexp.MustCompile(`^kind[A-Z]`)) {
		kinds[name] = v
	}
	if len(kinds) < 10 {
		t.Fatalf("found only %v: the constants moved?", kinds)
	}
	listed := documentedKinds(t, "../../docs/elicit.md")
	var values []string
	for name, v := range kinds {
		values = append(values, v)
		if !slices.Contains(listed, v) {
			t.Errorf("%s = %q is not in the kind list of docs/elicit.md (%v)", name, v, listed)
		}
	}
	for _, l := range listed {
		if !slices.Contains(values, l) {
			t.Errorf("docs/elicit.md lists kind %q, which the code never prints", l)
		}
	}

	// Every kind argument is a named constant.
	fset, args := kindArguments(t, ".")
	for _, arg := range args {
		if _, lit := arg.(*ast.BasicLit); lit {
			t.Errorf("%s: a kind written as a literal; name it with a kind constant", fset.Position(arg.Pos()))
		}
	}
	if len(args) < 4 {
		t.Fatalf("found %d calls of fail and writeJSONError: renamed?", len(args))
	}
}
