package progtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// CodeLines counts the lines of the Go file path in the top-level
// declarations keep selects, leaving out blank lines and comment-only
// lines: the measure of the examples' "lines of handler code".
func CodeLines(t *testing.T, path string, keep func(ast.Decl) bool) int {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	comment := map[int]bool{} // lines a comment covers
	for _, g := range f.Comments {
		for l := fset.Position(g.Pos()).Line; l <= fset.Position(g.End()).Line; l++ {
			comment[l] = true
		}
	}
	lines := strings.Split(string(src), "\n")
	n := 0
	for _, d := range f.Decls {
		if !keep(d) {
			continue
		}
		for l := fset.Position(d.Pos()).Line; l <= fset.Position(d.End()).Line; l++ {
			text := strings.TrimSpace(lines[l-1])
			if text != "" && !(comment[l] && (strings.HasPrefix(text, "//") || strings.HasPrefix(text, "/*"))) {
				n++
			}
		}
	}
	return n
}

// IsMain selects func main: the wiring (listener, data, routes).
func IsMain(d ast.Decl) bool {
	f, ok := d.(*ast.FuncDecl)
	return ok && f.Recv == nil && f.Name.Name == "main"
}

// HandlerCode selects every top-level declaration but the imports and
// main: the types, texts, handlers and registration of the tools.
func HandlerCode(d ast.Decl) bool {
	if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
		return false
	}
	return !IsMain(d)
}
