package consent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// ErrUnusableForm is returned (wrapped, with elicit.ErrBadSchema) when a
// form-mode request carries a requestedSchema that is not a flat form
// (ELI-S-06): it cannot be shown, so the call ends.
var ErrUnusableForm = errors.New("consent: the server sent a form this client cannot show")

// Words of the line-mode form; :decline and :cancel stop it at any
// prompt (refusal).
const (
	wordSubmit     = "submit"
	wordEdit       = "edit"
	escNone        = ":none"
	formReviewHelp = "Type submit to send these answers, a number to change that answer, edit to go through them all, " +
		escDecline + " to refuse, or " + escCancel + " to dismiss:"
)

// form is one form being filled in: the schema and the answers so far.
type form struct {
	schema  *elicit.Schema
	answers map[string]any // property → string, float64, bool or []string; absent = no answer
}

// elicitForm implements mcpclient.Handlers.ElicitForm.
func (s *session) elicitForm(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	schema, err := elicit.ParseSchemaForAnswers(p.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %w", ErrUnusableForm, key, err)
	}
	f := &form{schema: schema, answers: map[string]any{}}
	// Pre-fill the defaults (ELI-C-05).
	for _, name := range schema.Order {
		if d := schema.Properties[name].Default; d != nil {
			f.answers[name] = d
		}
	}

	writeAsker(s.out, who, "The server asks you to fill in a form (form-mode elicitation).")
	fmt.Fprintf(s.out, "  Message:  %s\n", indent(p.Message, "            "))
	if w := secretWarning(schema, p.RequestedSchema); w != "" {
		fmt.Fprintf(s.out, "  ! %s\n", w)
	}
	if s.t.Interactive {
		return s.formHuh(ctx, f)
	}
	return s.formLines(ctx, f)
}

// secretWarning names the fields that look like secrets
// (elicit.LooksSecretProperty: their words in many languages, writeOnly,
// format "password", a card number as default): servers must not ask for
// them in a form (ELI-S-01), so the user is told not to type one.
func secretWarning(schema *elicit.Schema, requested json.RawMessage) string {
	var raw struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(requested, &raw)
	var names []string
	for _, name := range schema.Order {
		if _, ok := elicit.LooksSecretProperty(name, raw.Properties[name]); ok {
			names = append(names, strconv.Quote(clean(labelOf(schema.Properties[name], name))))
		}
	}
	if names == nil {
		return ""
	}
	return "This form seems to ask for a secret (" + strings.Join(names, ", ") +
		"). Servers must ask for passwords and API keys on their own web page (URL mode), never in a form: do not type a real secret here."
}

// formLines fills the form in line mode: every field in order, then the
// review, until submit, decline or cancel.
func (s *session) formLines(ctx context.Context, f *form) (*mcp.ElicitResult, error) {
	fmt.Fprintf(s.out, "  Fields:   %d (* = required). Enter keeps the default shown; %s leaves a field empty; %s or %s stops at any prompt.\n",
		len(f.schema.Order), escNone, escDecline, escCancel)
	if res, err := s.askAll(ctx, f); res != nil || err != nil {
		return res, err
	}
	for {
		fmt.Fprintf(s.out, "\nReview your answers:\n")
		for i, name := range f.schema.Order {
			fmt.Fprintf(s.out, "  %d. %s: %s\n", i+1, clean(f.label(name)), f.show(name))
		}
		l, err := s.prompt(ctx, formReviewHelp+" ")
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(s.out)
			return result(mcp.ActionCancel), nil
		}
		if err != nil {
			return nil, err
		}
		if action, ok := refusal(l, true); ok {
			return result(action), nil
		}
		if res, err := s.review(ctx, f, strings.ToLower(strings.TrimSpace(l))); res != nil || err != nil {
			return res, err
		}
	}
}

// review runs one review command: submit, edit (every field again), or a
// field's number. A nil result means: show the review again.
func (s *session) review(ctx context.Context, f *form, w string) (*mcp.ElicitResult, error) {
	switch w {
	case wordSubmit:
		return s.submit(ctx, f)
	case wordEdit:
		return s.askAll(ctx, f)
	}
	if i, err := strconv.Atoi(w); err == nil && i >= 1 && i <= len(f.schema.Order) {
		return s.ask(ctx, f, i-1)
	}
	fmt.Fprintf(s.out, "Please type submit, a number from 1 to %d, edit, %s or %s.\n", len(f.schema.Order), escDecline, escCancel)
	return nil, nil
}

// submit checks the whole answer against the schema before it leaves
// (ELI-C-06); on a problem it asks those fields again, and the review
// goes on.
func (s *session) submit(ctx context.Context, f *form) (*mcp.ElicitResult, error) {
	content, err := f.schema.ValidateContent(f.answers)
	if err == nil {
		return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
	}
	fmt.Fprintf(s.out, "Not sent: %s\n", clean(err.Error()))
	var ve *elicit.ValidationError
	if errors.As(err, &ve) {
		for _, pr := range ve.Problems {
			if res, err := s.ask(ctx, f, f.index(pr.Property)); res != nil || err != nil {
				return res, err
			}
		}
	}
	return nil, nil
}

// askAll asks every field in order; ask asks field i. Their result is
// the decline or cancel that stopped the user, nil when the answer is in.
func (s *session) askAll(ctx context.Context, f *form) (*mcp.ElicitResult, error) {
	for i := range f.schema.Order {
		if res, err := s.ask(ctx, f, i); res != nil || err != nil {
			return res, err
		}
	}
	return nil, nil
}

func (s *session) ask(ctx context.Context, f *form, i int) (*mcp.ElicitResult, error) {
	action, err := s.askField(ctx, f, i)
	return result(action), err
}

func result(action string) *mcp.ElicitResult {
	if action == "" {
		return nil
	}
	return &mcp.ElicitResult{Action: action}
}

// askField prompts for field i until the answer fits. It returns a
// non-empty action when the user stops (decline or cancel; end of input
// is cancel).
func (s *session) askField(ctx context.Context, f *form, i int) (action string, err error) {
	if i < 0 {
		return "", nil
	}
	name := f.schema.Order[i]
	p := f.schema.Properties[name]
	req := ""
	if f.required(name) {
		req = " *"
	}
	fmt.Fprintf(s.out, "\n%d/%d %s%s (%s)\n", i+1, len(f.schema.Order), clean(f.label(name)), req, clean(name))
	if p.Description != "" {
		fmt.Fprintf(s.out, "    %s\n", indent(p.Description, "    "))
	}
	fmt.Fprintf(s.out, "    %s\n", hint(p, true))
	for j, v := range p.Enum {
		fmt.Fprintf(s.out, "      %d) %s\n", j+1, choiceLabel(p, j, v))
	}
	for {
		cur := ""
		if _, ok := f.answers[name]; ok {
			cur = " [" + f.show(name) + "]"
		}
		l, err := s.prompt(ctx, "  >"+cur+" ")
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(s.out)
			return mcp.ActionCancel, nil
		}
		if err != nil {
			return "", err
		}
		// The candidate replaces the current answer only once it fits, so
		// a bad line never overwrites a good default.
		v, had := f.answers[name]
		if action, ok := refusal(l, false); ok {
			return action, nil
		}
		switch strings.TrimSpace(l) {
		case escNone:
			v, had = nil, false
		case "":
			// Keep the current (default or earlier) answer.
		default:
			var msg string
			if v, msg = parseAnswer(p, l); msg != "" {
				fmt.Fprintf(s.out, "    %s: %s\n", clean(f.label(name)), msg)
				continue
			}
			had = true
		}
		if !had {
			v = nil
		}
		if msg := f.problemFor(name, v); msg != "" {
			fmt.Fprintf(s.out, "    %s\n", msg)
			continue
		}
		setAnswer(f, name, v)
		return "", nil
	}
}

// problem checks the current answer of one field against the schema
// (ELI-C-06) and returns the message, or "".
func (f *form) problem(name string) string { return f.problemFor(name, f.answers[name]) }

// problemFor checks v as the answer of one field (nil: no answer).
func (f *form) problemFor(name string, v any) string {
	_, err := f.schema.ValidateContent(map[string]any{name: v})
	var ve *elicit.ValidationError
	if errors.As(err, &ve) {
		for _, pr := range ve.Problems {
			if pr.Property == name {
				return clean(pr.Message)
			}
		}
	}
	return ""
}

func (f *form) required(name string) bool {
	for _, r := range f.schema.Required {
		if r == name {
			return true
		}
	}
	return false
}

func (f *form) index(name string) int {
	for i, n := range f.schema.Order {
		if n == name {
			return i
		}
	}
	return -1
}

func (f *form) label(name string) string { return labelOf(f.schema.Properties[name], name) }

// labelOf names a property for the user: its title, else its name.
func labelOf(p *elicit.Property, name string) string {
	if p.Title != "" {
		return p.Title
	}
	return name
}

// show renders the current answer of a field for the review: strings
// quoted (so spaces and escapes are visible), choices by their titles.
func (f *form) show(name string) string {
	v, ok := f.answers[name]
	if !ok {
		return "(no answer)"
	}
	p := f.schema.Properties[name]
	switch x := v.(type) {
	case string:
		if p.Enum != nil {
			return clean(titleOf(p, x))
		}
		return clean(strconv.Quote(x))
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []string:
		if len(x) == 0 {
			return "(none)"
		}
		ts := make([]string, len(x))
		for i, it := range x {
			ts[i] = titleOf(p, it)
		}
		return clean(strings.Join(ts, ", "))
	}
	return clean(fmt.Sprint(v))
}

// hint says what a field takes, from its schema; typed says how to type a
// choice (line mode) rather than pick it (terminal forms).
func hint(p *elicit.Property, typed bool) string {
	var h string
	switch p.Type {
	case "string":
		switch {
		case p.Enum != nil && typed:
			h = "choose one: type its number or its value"
		case p.Enum != nil:
			h = "choose one"
		case p.Format == "email":
			h = "an email address"
		case p.Format == "uri":
			h = "an absolute URI, e.g. https://example.com/"
		case p.Format == "date":
			h = "a date, YYYY-MM-DD"
		case p.Format == "date-time":
			h = "a date and time, e.g. 2026-07-28T09:30:00Z"
		default:
			h = "text"
		}
		if p.MinLength != nil || p.MaxLength != nil {
			h += ", " + bounds(intPtrF(p.MinLength), intPtrF(p.MaxLength)) + " characters"
		}
	case "number", "integer":
		h = "a number"
		if p.Type == "integer" {
			h = "a whole number"
		}
		if p.Minimum != nil || p.Maximum != nil {
			h += ", " + bounds(p.Minimum, p.Maximum)
		}
	case "boolean":
		h = "yes or no"
	case "array":
		h = "choose any (x or space to toggle)"
		if typed {
			h = "choose any: numbers or values separated by commas"
		}
		if p.MinItems != nil || p.MaxItems != nil {
			h += ", " + bounds(intPtrF(p.MinItems), intPtrF(p.MaxItems)) + " of them"
		}
	}
	return h
}

func intPtrF(n *int) *float64 {
	if n == nil {
		return nil
	}
	f := float64(*n)
	return &f
}

func bounds(lo, hi *float64) string {
	fs := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return fs(*lo) + " to " + fs(*hi)
	case lo != nil:
		return "at least " + fs(*lo)
	}
	return "at most " + fs(*hi)
}

func choiceLabel(p *elicit.Property, i int, v string) string {
	if p.EnumTitles != nil && p.EnumTitles[i] != "" && p.EnumTitles[i] != v {
		return clean(p.EnumTitles[i]) + " (" + clean(v) + ")"
	}
	return clean(v)
}

func titleOf(p *elicit.Property, v string) string {
	for i, e := range p.Enum {
		if e == v && p.EnumTitles != nil && p.EnumTitles[i] != "" {
			return p.EnumTitles[i]
		}
	}
	return v
}

// parseAnswer reads a typed line as a value of p's type. It returns a
// message instead when the line cannot be read as one; the schema's own
// rules are checked afterwards (form.problem).
func parseAnswer(p *elicit.Property, line string) (any, string) {
	if !utf8.ValidString(line) {
		// JSON would carry it as U+FFFD: the server would store other
		// text than the review showed.
		return nil, "this is not valid UTF-8 text (check the terminal's encoding); type it again"
	}
	t := strings.TrimSpace(line)
	switch p.Type {
	case "string":
		if p.Enum != nil {
			if v, ok := pickChoice(p, t); ok {
				return v, ""
			}
			return nil, fmt.Sprintf("type a number from 1 to %d, or one of the values", len(p.Enum))
		}
		return line, ""
	case "number", "integer":
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, "must be a number"
		}
		return f, ""
	case "boolean":
		switch strings.ToLower(t) {
		case "yes", "y", "true", "1":
			return true, ""
		case "no", "n", "false", "0":
			return false, ""
		}
		return nil, "type yes or no"
	case "array":
		out := []string{}
		for _, part := range strings.Split(t, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			v, ok := pickChoice(p, part)
			if !ok {
				return nil, fmt.Sprintf("%q is not a choice: use numbers from 1 to %d, or the values", clean(part), len(p.Enum))
			}
			out = append(out, v)
		}
		return out, ""
	}
	return nil, "this client cannot take this field"
}

// pickChoice maps a typed choice (its number, value, or title ignoring
// case) to its value.
func pickChoice(p *elicit.Property, t string) (string, bool) {
	if i, err := strconv.Atoi(t); err == nil && i >= 1 && i <= len(p.Enum) {
		return p.Enum[i-1], true
	}
	for _, v := range p.Enum {
		if v == t {
			return v, true
		}
	}
	for i, v := range p.Enum {
		if p.EnumTitles != nil && strings.EqualFold(p.EnumTitles[i], t) {
			return v, true
		}
	}
	return "", false
}
