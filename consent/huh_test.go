package consent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/huh"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
)

// The terminal form of every primitive starts from the defaults
// (ELI-C-05) and, untouched, commits them back unchanged.
func TestHuhFieldsPrefillDefaults(t *testing.T) {
	schema, err := elicit.ParseSchemaForAnswers(everyKind(t))
	if err != nil {
		t.Fatal(err)
	}
	f := &form{schema: schema, answers: map[string]any{}}
	for _, name := range schema.Order {
		if d := schema.Properties[name].Default; d != nil {
			f.answers[name] = d
		}
	}
	want := map[string]any{}
	for k, v := range f.answers {
		want[k] = v
	}
	s := &session{t: &Terminal{Interactive: true}}
	fields, commits := s.huhFields(f)
	if len(fields) != len(schema.Order) || len(commits) != len(fields) {
		t.Fatalf("%d fields, %d commits for %d properties", len(fields), len(commits), len(schema.Order))
	}
	got := map[string]any{}
	for i, name := range schema.Order {
		got[name] = fields[i].GetValue()
	}
	wantShown := map[string]any{"email": "", "ratio": "", "count": "3", "notify": true, "color": noAnswer,
		"detail": "summary", "tags": []string(nil), "days": []string{"mon"}, "when": "", "label": "Q2"}
	if !reflect.DeepEqual(got, wantShown) {
		t.Errorf("shown values:\n got %#v\nwant %#v", got, wantShown)
	}
	for _, c := range commits {
		c()
	}
	if !reflect.DeepEqual(f.answers, want) {
		t.Errorf("committed:\n got %#v\nwant %#v", f.answers, want)
	}
}

// The interactive URL choice is a terminal select: Down, Enter picks
// decline, and nothing is opened.
func TestHuhURLDecline(t *testing.T) {
	opened := false
	out := &strings.Builder{}
	h := (&Terminal{In: strings.NewReader("\x1b[B\r"), Out: out, Interactive: true, AllowOpen: true,
		Opener: func(context.Context, string) error { opened = true; return nil }}).Handlers()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.ElicitURL(ctx, loopbackAsker, "k", &mcp.ElicitRequestParams{Mode: "url", Message: "m", URL: "http://127.0.0.1:3000/x"})
	if err != nil || res.Action != mcp.ActionDecline || opened {
		t.Fatalf("%+v %v opened=%v\n%s", res, err, opened, out)
	}
}

// keysThenWait is terminal input: keys, then nothing more, without end
// (end of input is not what cancels).
func keysThenWait(t *testing.T, keys string) io.Reader {
	r, w := io.Pipe()
	go func() { _, _ = io.WriteString(w, keys) }()
	t.Cleanup(func() { w.Close() })
	return r
}

// Esc, like Ctrl-C, cancels every terminal form — the URL consent, the
// form's first choice, its fields — and both say so in the same words.
func TestHuhEscCancels(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"label":{"type":"string","title":"Label"}},"required":["label"]}`)
	for _, tc := range []struct {
		name, keys, says string
		form             bool
	}{
		{"Esc at the URL consent", "\x1b", "Do you want to open this page? Cancelled (Esc or Ctrl-C).", false},
		{"Ctrl-C at the URL consent", "\x03", "Do you want to open this page? Cancelled (Esc or Ctrl-C).", false},
		{"Esc at the form's first choice", "\x1b", "Fill in this form? Cancelled (Esc or Ctrl-C).", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &strings.Builder{}
			h := (&Terminal{In: keysThenWait(t, tc.keys), Out: out, Interactive: true}).Handlers()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var res *mcp.ElicitResult
			var err error
			if tc.form {
				res, err = h.ElicitForm(ctx, loopbackAsker, "k", &mcp.ElicitRequestParams{Message: "m", RequestedSchema: schema})
			} else {
				res, err = h.ElicitURL(ctx, loopbackAsker, "k", &mcp.ElicitRequestParams{Mode: "url", Message: "m", URL: "http://127.0.0.1:3000/x"})
			}
			if err != nil || res.Action != mcp.ActionCancel || !strings.Contains(out.String(), tc.says) {
				t.Fatalf("%+v %v; want cancel saying %q:\n%q", res, err, tc.says, out.String())
			}
		})
	}
	// The fields: Esc in a text input ends the form unanswered.
	s, err := elicit.ParseSchemaForAnswers(schema)
	if err != nil {
		t.Fatal(err)
	}
	ss := &session{t: &Terminal{Interactive: true}, in: keysThenWait(t, "ab\x1b"), out: &strings.Builder{}}
	fields, _ := ss.huhFields(&form{schema: s, answers: map[string]any{}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ss.runHuh(ctx, huh.NewGroup(fields...)); !errors.Is(err, huh.ErrUserAborted) {
		t.Errorf("Esc in a field: %v, want huh.ErrUserAborted", err)
	}
}
