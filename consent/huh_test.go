package consent

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

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
