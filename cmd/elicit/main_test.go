package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-elicit/elicit/consent"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		cmd  string
		want *options
		err  string
	}{
		{name: "tool first, then flags", cmd: "call",
			args: []string{"connect_billing", "--url", "http://127.0.0.1:3000/mcp", "--token", "alice", "--root", "/a", "--root", "/b", "--arg", "k=v", "--json"},
			want: &options{cmd: "call", tool: "connect_billing", url: "http://127.0.0.1:3000/mcp", token: "alice", json: true, args: []string{"k=v"}, roots: []string{"/a", "/b"}}},
		{name: "flags first", cmd: "call", args: []string{"--url", "http://h/mcp", "--open", "--plain", "t", "--args", `{"a":1}`},
			want: &options{cmd: "call", tool: "t", url: "http://h/mcp", open: true, plain: true, argsJSON: `{"a":1}`}},
		{name: "tools", cmd: "tools", args: []string{"--url", "http://h/mcp", "--json"}, want: &options{cmd: "tools", url: "http://h/mcp", json: true}},
		{name: "no url", cmd: "tools", args: nil, err: "--url (or --command) is required"},
		{name: "command flag", cmd: "call", args: []string{"t", "--command", "  elicitd --stdio  --data /d "},
			want: &options{cmd: "call", tool: "t", command: []string{"elicitd", "--stdio", "--data", "/d"}}},
		{name: "command after --", cmd: "call", args: []string{"--json", "t", "--", "node", "server.mjs", "--x", "a b"},
			want: &options{cmd: "call", tool: "t", json: true, command: []string{"node", "server.mjs", "--x", "a b"}}},
		{name: "tools over a command", cmd: "tools", args: []string{"--", "srv"}, want: &options{cmd: "tools", command: []string{"srv"}}},
		{name: "empty --", cmd: "tools", args: []string{"--"}, err: "-- must be followed by the server's command"},
		{name: "empty --command", cmd: "tools", args: []string{"--command", " "}, err: "--command is empty"},
		{name: "command twice", cmd: "tools", args: []string{"--command", "a", "--", "b"}, err: "give the server's command once"},
		{name: "url and command", cmd: "tools", args: []string{"--url", "http://h/mcp", "--", "b"}, err: "exclude each other"},
		{name: "tool after --", cmd: "call", args: []string{"--", "srv", "tool"}, err: "exactly one TOOL"},
		{name: "no tool", cmd: "call", args: []string{"--url", "http://h/mcp"}, err: "exactly one TOOL"},
		{name: "two tools", cmd: "call", args: []string{"--url", "http://h/mcp", "a", "b"}, err: "exactly one TOOL"},
		{name: "tools takes no operand", cmd: "tools", args: []string{"--url", "http://h/mcp", "x"}, err: "unexpected arguments: x"},
		{name: "call-only flag on tools", cmd: "tools", args: []string{"--url", "http://h/mcp", "--root", "/"}, err: "flag provided but not defined: -root"},
		{name: "not an http URL", cmd: "tools", args: []string{"--url", "notaurl"}, err: "is not an http(s) URL"},
		{name: "unknown command", cmd: "check", args: []string{"--url", "http://h/mcp"}, err: `unknown command "check"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ELICIT_TOKEN", "")
			got, err := parseFlags(tc.cmd, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestTokenFromEnvironment(t *testing.T) {
	t.Setenv("ELICIT_TOKEN", "carol")
	o, err := parseFlags("tools", []string{"--url", "http://h/mcp"})
	if err != nil || o.token != "carol" {
		t.Fatalf("%+v %v", o, err)
	}
}

func TestBuildArgs(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"period":{"type":"string"},"n":{"type":"integer"},"on":{"type":"boolean"},"tags":{"type":"array"},"any":{"type":["string","null"]}}}`)
	for _, tc := range []struct {
		name     string
		args     []string
		argsJSON string
		want     map[string]any
		err      string
	}{
		{name: "strings stay strings", args: []string{"period=2026", "any=42", "unknown=true"},
			want: map[string]any{"period": "2026", "any": "42", "unknown": "true"}},
		{name: "schema types read JSON", args: []string{"n=3", "on=true", `tags=["a","b"]`},
			want: map[string]any{"n": 3.0, "on": true, "tags": []any{"a", "b"}}},
		{name: "value with =", args: []string{"period=a=b"}, want: map[string]any{"period": "a=b"}},
		{name: "--arg overrides --args", argsJSON: `{"period":"2026-Q1","n":1}`, args: []string{"period=2026-Q2"},
			want: map[string]any{"period": "2026-Q2", "n": 1.0}},
		{name: "not JSON for a number", args: []string{"n=three"}, err: `the tool takes an integer, and "three" is not JSON`},
		{name: "no =", args: []string{"period"}, err: `--arg "period" is not k=v`},
		{name: "--args not an object", argsJSON: `[1]`, err: "--args must be a JSON object"},
		{name: "nothing", want: map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildArgs(&options{args: tc.args, argsJSON: tc.argsJSON}, schema)
			if tc.err != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want usage error %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, %v", got, err)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	const ep = "http://127.0.0.1:1/mcp"
	rpc := &mcpclient.RPCError{Method: "tools/call", HTTPStatus: 400, Code: -32021, Message: "Missing required client capability"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&mcpclient.ConnectionError{Endpoint: ep, Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)},
			"cannot reach the MCP server at " + ep + ": connection refused. Is it running?"},
		{&mcpclient.UnsupportedVersionError{Supported: []string{"2025-11-25"}, Requested: "2026-07-28"},
			"the server at " + ep + " does not speak MCP 2026-07-28: it serves 2025-11-25"},
		{&mcpclient.MissingCapabilityError{RequiredCapabilities: mcp.ClientCapabilities{Roots: &mcp.RootsCapability{}}, RPC: rpc},
			`the server refused the call: it needs the client capability {"roots":{}}, which this client did not declare; pass --root PATH to offer a folder`},
		{&mcpclient.AuthError{StatusCode: 401}, "requires authorization (HTTP 401): sign in (leave out --no-login), or pass --token or set ELICIT_TOKEN"},
		{fmt.Errorf("%w: sampling request %q", consent.ErrDeclined, "s"), `consent: the user declined: sampling request "s"; the call was not retried`},
		{context.Canceled, "interrupted"},
		{&mcpclient.RPCError{Method: "tools/call", Code: -32602, Message: "Unknown tool\x1b[2J"}, "tools/call: server error -32602: Unknown tool\ufffd[2J"},
	} {
		if got := explain(tc.err, ep, false); !strings.Contains(got, tc.want) {
			t.Errorf("explain(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestUsage(t *testing.T) {
	var stderr strings.Builder
	if code := run(context.Background(), nil, strings.NewReader(""), io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "usage:") {
		t.Fatalf("no args: %d %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"call", "--url", "http://h/mcp"}, strings.NewReader(""), io.Discard, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "call needs exactly one TOOL name") {
		t.Fatalf("call without tool: %d %q", code, stderr.String())
	}
}

// TestHelpStreams: help that is asked for goes to stdout with exit 0, so
// it pipes to a pager; a usage error goes to stderr with exit 2, once.
func TestHelpStreams(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		stdoutHas string // "" means stdout stays empty
		stderrHas string // "" means stderr stays empty
	}{
		{[]string{"--help"}, exitOK, "usage:", ""},
		{[]string{"-h"}, exitOK, "usage:", ""},
		{[]string{"help"}, exitOK, "usage:", ""},
		{[]string{"call", "-h"}, exitOK, "usage:", ""},
		{[]string{"tools", "--help"}, exitOK, "usage:", ""},
		{[]string{"check", "--help"}, exitOK, "elicit check --url", ""},
		{[]string{"check", "-h"}, exitOK, "elicit check --url", ""},
		{nil, exitUsage, "", "usage:"},
		{[]string{"tools", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
		{[]string{"check", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !has(stdout.String(), tc.stdoutHas) || !has(stderr.String(), tc.stderrHas) {
			t.Errorf("elicit %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdoutHas, tc.stderrHas)
		}
		if n := strings.Count(stderr.String(), "flag provided"); n > 1 {
			t.Errorf("elicit %q: the flag error is printed %d times", tc.args, n)
		}
	}
}

// has reports whether s contains want, or is empty when want is "".
func has(s, want string) bool {
	if want == "" {
		return s == ""
	}
	return strings.Contains(s, want)
}

// A result cannot redraw the terminal: escapes are shown, not run.
func TestPrintContentIsSafe(t *testing.T) {
	var b strings.Builder
	printContent(&b, &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("ok\x1b[2J\nline two\u202e")}})
	if got := b.String(); got != "ok\\x1b[2J\nline two\\u202e\n" {
		t.Errorf("got %q", got)
	}
}

// Server text is shown as text, in text content, in structured content
// printed as JSON and with --json: R&D > plan, never R\u0026D \u003e plan.
func TestTextShownAsText(t *testing.T) {
	const label = "R&D > plan <v2>"
	var b strings.Builder
	printContent(&b, &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("Draft labelled " + label)}})
	printContent(&b, &mcp.CallToolResult{StructuredContent: map[string]any{"label": label}})
	if err := printJSON(&b, &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(label)}}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if strings.Count(got, label) != 3 || strings.Contains(got, `\u0026`) || strings.Contains(got, `\u003e`) {
		t.Errorf("text not shown as text:\n%s", got)
	}
}

// call and tools refuse a --url with userinfo, as check does, and never
// print the password: net/http would send it as Basic credentials.
func TestURLUserinfoRefused(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"password", "http://al:secretpw@127.0.0.1:3000/mcp"},
		{"escaped password", "http://al:secret%70w@127.0.0.1:3000/mcp"},
		{"user name only", "http://secretpw@127.0.0.1:3000/mcp"},
	} {
		for _, args := range [][]string{{"call", "connect_billing"}, {"tools"}} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(t.Context(), append(args, "--url", tc.url, "--token", "alice"), strings.NewReader(""), &stdout, &stderr)
				out := stdout.String() + stderr.String()
				if code != exitUsage || !strings.Contains(out, "carries a user name or password") {
					t.Fatalf("exit %d, want %d with the reason:\n%s", code, exitUsage, out)
				}
				if strings.Contains(out, "secretpw") || strings.Contains(out, "secret%70w") {
					t.Fatalf("the password is printed:\n%s", out)
				}
			})
		}
	}
}

// TestHelpListsExitCodes: the help of elicit and of each of its commands
// lists, under "Exit status", every exit code the package defines, each
// with its meaning; elicit check's help lists the codes check.go
// returns. No help lists a code the package does not define. A new exit
// code fails here until the help says what it means.
func TestHelpListsExitCodes(t *testing.T) {
	defined := exitCodes(t, "")
	if len(defined) < 5 {
		t.Fatalf("found only the exit codes %v", defined)
	}
	for _, tc := range []struct {
		args []string
		want []int
	}{
		{[]string{"--help"}, defined},
		{[]string{"call", "--help"}, defined},
		{[]string{"tools", "-h"}, defined},
		{[]string{"login", "-h"}, defined},
		{[]string{"logout", "-h"}, defined},
		{[]string{"check", "--help"}, exitCodes(t, "check.go")},
	} {
		var stdout strings.Builder
		if code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, io.Discard); code != exitOK {
			t.Fatalf("elicit %q: exit %d", tc.args, code)
		}
		listed := listedExitCodes(stdout.String())
		if !slices.Equal(listed, tc.want) {
			t.Errorf("elicit %q lists the exit codes %v, want %v:\n%s", tc.args, listed, tc.want, stdout.String())
		}
	}
}

// exitCodes returns, in order, the values of the exit… constants of the
// package (test files left out), or of those file names.
func exitCodes(t *testing.T, file string) []int {
	t.Helper()
	fset, files := parseFiles(t, ".")
	values := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if !regexp.MustCompile(`^exit[A-Z]`).MatchString(id.Name) || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.INT {
							t.Fatalf("%s is not an integer literal", id.Name)
						}
						values[id.Name], _ = strconv.Atoi(lit.Value)
					}
				}
			}
		}
	}
	var codes []int
	for _, f := range files {
		if file != "" && filepath.Base(fset.Position(f.Pos()).Filename) != file {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if v, ok := values[id.Name]; ok && !slices.Contains(codes, v) {
					codes = append(codes, v)
				}
			}
			return true
		})
	}
	slices.Sort(codes)
	return codes
}

// listedExitCodes returns the codes help lists under its "Exit status"
// heading: lines "  N  meaning", up to the next blank line.
func listedExitCodes(help string) []int {
	_, after, ok := strings.Cut(help, "\nExit status")
	if !ok {
		return nil
	}
	var codes []int
	for _, l := range strings.Split(after, "\n")[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		if m := regexp.MustCompile(`^  (\d+)  \S`).FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			codes = append(codes, n)
		}
	}
	return codes
}

// TestHelpAndDocsAgreeOnExitCauses: elicit --help and docs/elicit.md
// name the same causes for each exit status of a call (whitespace aside),
// so neither leaves out one the other gives.
func TestHelpAndDocsAgreeOnExitCauses(t *testing.T) {
	var help strings.Builder
	if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &help, io.Discard); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	doc, err := os.ReadFile("../../docs/elicit.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	causes := map[int][]string{
		exitFailed: {"server down or not MCP", "another protocol version", "HTTP 401/403", "failed sign-in",
			"unknown tool or arguments refused", "sampling or roots request", "Ctrl-C"},
		exitCancelled:   {"you cancelled", "SIGTERM", "SIGHUP"},
		exitTaskUnknown: {"stopped following", "may still be running", "calling again starts another task"},
	}
	for code, list := range causes {
		for _, c := range list {
			for name, text := range map[string]string{"elicit --help": help.String(), "docs/elicit.md": string(doc)} {
				if !strings.Contains(flat(text), c) {
					t.Errorf("%s does not give %q as a cause of exit %d", name, c, code)
				}
			}
		}
	}
}
