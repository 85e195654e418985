package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/reqstate"
)

// observed is a server whose Observer records every Round.
type observed struct {
	rpc
	clock  *clock
	mu     sync.Mutex
	rounds []Round
}

func (o *observed) last(t *testing.T) Round {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.rounds) == 0 {
		t.Fatal("no round observed")
	}
	return o.rounds[len(o.rounds)-1]
}

func newObserved(t *testing.T) *observed {
	t.Helper()
	o := &observed{clock: &clock{}}
	o.clock.now.Store(time.Unix(1_800_000_000, 0).UnixNano())
	sealer, err := reqstate.New([]reqstate.Key{reqstate.NewKey("k")}, &reqstate.Options{Now: o.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	s := New(mcp.Implementation{Name: "test", Version: "1"}, &Options{Sealer: sealer, Observer: func(_ context.Context, r *Round) {
		o.mu.Lock()
		o.rounds = append(o.rounds, *r)
		o.mu.Unlock()
	}})
	form := func(_ context.Context, r *Request) (Reply, error) {
		if r.State == nil {
			return Ask().ElicitForm("opts", "Pick a level", json.RawMessage(formSchema)).WithState([]byte("s")), nil
		}
		switch r.Elicitation("opts").Outcome {
		case elicit.Accepted:
			return Text("ok"), nil
		case elicit.Declined, elicit.Cancelled:
			return ToolError("refused"), nil
		}
		return Ask().ElicitForm("opts", "Pick a level", json.RawMessage(formSchema)).WithState(r.State), nil
	}
	s.AddTool(&mcp.Tool{Name: "form"}, form)
	s.AddToolWith(&mcp.Tool{Name: "restartable"}, form, &HandlerOptions{RestartStale: true})
	// page asks for a URL step twice: the first accept is "not done yet".
	s.AddTool(&mcp.Tool{Name: "page"}, func(_ context.Context, r *Request) (Reply, error) {
		a := r.Elicitation("k")
		switch {
		case r.State == nil:
			return Ask().ElicitURL("k", "Open the page", "https://srv.example/ui/x?flow=1").WithState([]byte("first")), nil
		case a.Outcome == elicit.Accepted && string(r.State) == "first":
			return Ask().ElicitURL("k", "Open the page", "https://srv.example/ui/x?flow=1").WithState([]byte("second")), nil
		case a.Outcome == elicit.Accepted:
			return Text("done"), nil
		}
		return ToolError("refused"), nil
	})
	s.AddTool(&mcp.Tool{Name: "fails"}, func(context.Context, *Request) (Reply, error) { return nil, errors.New("db down") })
	s.AddResource(&mcp.Resource{URI: "report://latest?secret=1", Name: "r"}, func(_ context.Context, r *Request) (Reply, error) {
		return ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.Name, Text: "x"}}}), nil
	})
	o.rpc = rpc{s, "alice"}
	return o
}

const capsAll = `{"elicitation":{"form":{},"url":{}}}`

// start calls tool for alice and returns the requestState of its first
// round, checking what the Observer saw.
func (o *observed) start(t *testing.T, tool string) string {
	t.Helper()
	r, err := o.call(t, toolCall(tool, capsAll, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.last(t); got.Outcome != OutcomeInputRequired || got.Round != 0 || len(got.OperationID) != 32 || got.Name != tool || got.Principal != "alice" {
		t.Fatalf("first call: %+v", got)
	}
	return r["requestState"].(string)
}

func TestObserverOutcomes(t *testing.T) {
	o := newObserved(t)
	formState := o.start(t, "form")
	pageState := o.start(t, "page")
	accept := `{"opts":{"action":"accept","content":{"level":"summary"}}}`
	tests := []struct {
		name      string
		body      string
		principal string
		want      Outcome
		wantRound int
		wantCode  int
	}{
		{"form accepted", toolCall("form", capsAll, retry(formState, accept)), "alice", OutcomeAccepted, 1, 0},
		{"form declined", toolCall("form", capsAll, retry(formState, `{"opts":{"action":"decline"}}`)), "alice", OutcomeDeclined, 1, 0},
		{"form cancelled", toolCall("form", capsAll, retry(formState, `{"opts":{"action":"cancel"}}`)), "alice", OutcomeCancelled, 1, 0},
		{"invalid content is undecided", toolCall("form", capsAll, retry(formState, `{"opts":{"action":"accept","content":{"level":"huge"}}}`)), "alice", OutcomeInputRequired, 1, 0},
		{"missing answer", toolCall("form", capsAll, retry(formState, `{}`)), "alice", OutcomeInputRequired, 1, 0},
		{"malformed answer", toolCall("form", capsAll, retry(formState, `{"opts":12}`)), "alice", OutcomeFault, 1, -32602},
		{"url accepted, asked again", toolCall("page", capsAll, retry(pageState, `{"k":{"action":"accept"}}`)), "alice", OutcomePending, 1, 0},
		{"url declined", toolCall("page", capsAll, retry(pageState, `{"k":{"action":"decline"}}`)), "alice", OutcomeDeclined, 1, 0},
		{"tampered state", toolCall("form", capsAll, retry(formState[:len(formState)-4]+"AAAA", accept)), "alice", OutcomeInvalidState, -1, -32602},
		{"another user's state", toolCall("form", capsAll, retry(formState, accept)), "bob", OutcomeInvalidState, -1, -32602},
		{"capability missing", toolCall("page", `{"elicitation":{"form":{}}}`, ""), "alice", OutcomeCapabilityMissing, 0, -32021},
		{"handler error", toolCall("fails", capsAll, ""), "alice", OutcomeFault, 0, -32603},
		{"unknown tool", toolCall("nope", capsAll, ""), "alice", OutcomeFault, -1, -32602},
		{"plain complete", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://latest?secret=1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "alice", OutcomeCompleted, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _ = rpc{o.s, tt.principal}.call(t, tt.body)
			got := o.last(t)
			if got.Outcome != tt.want || got.Round != tt.wantRound || got.Code != tt.wantCode {
				t.Fatalf("round = %+v; want outcome %s, round %d, code %d", got, tt.want, tt.wantRound, tt.wantCode)
			}
			if (got.Round >= 0) != (len(got.OperationID) == 32) {
				t.Fatalf("operation id %q with round %d", got.OperationID, got.Round)
			}
			if strings.Contains(got.Name, "secret") {
				t.Fatalf("name %q carries the URI's query", got.Name)
			}
		})
	}
	// Expired: refused without RestartStale, served fresh with it.
	restartState := o.start(t, "restartable")
	o.clock.advance(reqstate.DefaultTTL + 2*time.Minute)
	for _, st := range []struct{ tool, state string }{{"form", formState}, {"restartable", restartState}} {
		_, _ = o.call(t, toolCall(st.tool, capsAll, retry(st.state, accept)))
		if got := o.last(t); got.Outcome != OutcomeExpired {
			t.Fatalf("%s with an expired state: %+v", st.tool, got)
		}
	}
	if got := o.last(t); got.Restart != RestartExpired || got.Round != 0 || got.Code != 0 {
		t.Fatalf("restarted round: %+v", got)
	}
	// Every round was reported once; non-round methods are not.
	n := len(o.rounds)
	_, _ = o.call(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if len(o.rounds) != n || n != 3+len(tests)+2 {
		t.Fatalf("%d rounds observed, want %d", len(o.rounds), 3+len(tests)+2)
	}
}

// The round after a pending one completes as accepted.
func TestObserverPendingThenAccepted(t *testing.T) {
	o := newObserved(t)
	r, _ := o.call(t, toolCall("page", capsAll, ""))
	r, _ = o.call(t, toolCall("page", capsAll, retry(r["requestState"].(string), `{"k":{"action":"accept"}}`)))
	if o.last(t).Outcome != OutcomePending {
		t.Fatalf("%+v", o.last(t))
	}
	r, _ = o.call(t, toolCall("page", capsAll, retry(r["requestState"].(string), `{"k":{"action":"accept"}}`)))
	if got := o.last(t); got.Outcome != OutcomeAccepted || got.Round != 2 || text(r) != "done" {
		t.Fatalf("%+v %v", got, r)
	}
}

func TestObserverPanicIsContained(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, &Options{Observer: func(context.Context, *Round) { panic("observer bug") }})
	s.AddTool(&mcp.Tool{Name: "t"}, func(context.Context, *Request) (Reply, error) { return Text("ok"), nil })
	r, err := rpc{s, ""}.call(t, toolCall("t", `{}`, ""))
	if err != nil || text(r) != "ok" {
		t.Fatalf("%v %v", r, err)
	}
}

// An unknown name is echoed in the error and the Round at most 128 bytes
// long, cut at a rune boundary and marked with its length, its
// non-graphic runes escaped.
func TestUnknownNamesAreClipped(t *testing.T) {
	o := newObserved(t)
	tests := []struct {
		name, tool, want string
	}{
		{"short", "nope", "nope"},
		{"exactly 128", strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{"long ascii", strings.Repeat("a", 5000), strings.Repeat("a", 128) + "…(5000 bytes)"},
		// 'é' is 2 bytes: byte 128 starts a rune, byte 127 does not.
		{"long multibyte", "x" + strings.Repeat("é", 3000), "x" + strings.Repeat("é", 63) + "…(6001 bytes)"},
		// Non-graphic runes are escaped, so a log line cannot be spoofed.
		{"bidi override", "\u202eevil", `\u202eevil`},
		{"newline", "a\nb\tc", `a\u000ab\u0009c`},
		{"zero-width joiner", "a\u200db", `a\u200db`},
		{"above U+FFFF", "a\U000e0001b", `a\U000e0001b`},
		{"backslash", `a\u202e`, `a\\u202e`},
		{"long controls", strings.Repeat("\x01", 100), strings.Repeat(`\u0001`, 21) + "…(100 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			quoted, _ := json.Marshal(tt.tool)
			_, err := o.call(t, toolCall(string(quoted[1:len(quoted)-1]), capsAll, ""))
			if err == nil {
				t.Fatal("unknown tool accepted")
			}
			if err.Message != "Unknown tool: "+tt.want {
				t.Fatalf("error message = %.60q (%d bytes); want Unknown tool: %.40q", err.Message, len(err.Message), tt.want)
			}
			if got := o.last(t).Name; got != tt.want {
				t.Fatalf("Round.Name = %.60q (%d bytes); want %.60q", got, len(got), tt.want)
			}
		})
	}
}

// FuzzClipName: whatever the name, the echo is valid UTF-8 of graphic
// runes only, at most maxEchoedName bytes plus the length marker, and a
// name that needs nothing is echoed unchanged.
func FuzzClipName(f *testing.F) {
	for _, s := range []string{"nope", "\u202eevil", "a\\b", "\xff\xfe", strings.Repeat("é", 100), "a\U000e0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := clipName(name)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return !unicode.IsGraphic(r) }) {
			t.Fatalf("clipName(%q) = %q: not graphic UTF-8", name, got)
		}
		if marker := fmt.Sprintf("…(%d bytes)", len(name)); len(got) > maxEchoedName+len(marker) {
			t.Fatalf("clipName(%q) is %d bytes", name, len(got))
		}
		if len(name) <= maxEchoedName && utf8.ValidString(name) && !strings.ContainsFunc(name, needsEscape) && got != name {
			t.Fatalf("clipName(%q) = %q, want it unchanged", name, got)
		}
	})
}

// TestOutcomes: Outcomes lists every Outcome constant of the package
// once, and each call returns a slice of its own, so a caller that
// changes what it got changes no one else's labels.
func TestOutcomes(t *testing.T) {
	declared := outcomeConsts(t)
	got := Outcomes()
	if len(got) != len(declared) {
		t.Errorf("Outcomes() has %d entries, the package declares %d Outcome constants", len(got), len(declared))
	}
	seen := map[Outcome]bool{}
	for _, o := range got {
		if seen[o] {
			t.Errorf("Outcomes() lists %q twice", o)
		}
		seen[o] = true
	}
	for name, v := range declared {
		if !seen[Outcome(v)] {
			t.Errorf("Outcomes() lacks %s (%q)", name, v)
		}
	}
	got[0] = "changed"
	_ = append(got[:1], "appended")
	if again := Outcomes(); again[0] == "changed" || slices.Contains(again, "appended") {
		t.Fatalf("a caller's change reached the next caller: %v", again)
	}
}

// outcomeConsts returns the constants of type Outcome declared in the
// package's files (test files left out), by name.
func outcomeConsts(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Outcome" {
						continue
					}
					for i, id := range vs.Names {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							out[id.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Outcome constant found")
	}
	return out
}
