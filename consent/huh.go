package consent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
)

// noAnswer is the option value of "(no answer)" in optional selects; a
// NUL cannot be a choice a server sent in JSON text shown here.
const noAnswer = "\x00"

// keyHelp says, under every terminal form, how to cancel it.
const keyHelp = "Esc or Ctrl-C: cancel"

// keyMap is huh's default key map with Esc added to Ctrl-C as the key
// that ends a form unanswered (cancel is dismissing without a choice,
// such as closing the dialog or pressing Escape: client/elicitation.mdx
// §Response Actions, ELI-C-02). Filtering a list, whose keys include Esc, is off:
// Esc always cancels.
func keyMap() *huh.KeyMap {
	km := huh.NewDefaultKeyMap()
	km.Quit.SetKeys("esc", "ctrl+c")
	km.Quit.SetHelp("esc", "cancel")
	// No keys: the fields enable these bindings themselves, but none can match.
	km.Select.Filter.SetKeys()
	km.Select.SetFilter.SetKeys()
	km.Select.ClearFilter.SetKeys()
	km.MultiSelect.Filter.SetKeys()
	km.MultiSelect.SetFilter.SetKeys()
	km.MultiSelect.ClearFilter.SetKeys()
	return km
}

// runHuh runs one terminal form on the session's input and output. Esc
// or Ctrl-C returns huh.ErrUserAborted; an ended ctx returns ctx.Err().
func (s *session) runHuh(ctx context.Context, groups ...*huh.Group) error {
	for _, g := range groups {
		g.Description(keyHelp)
	}
	err := huh.NewForm(groups...).WithInput(s.in).WithOutput(s.out).WithShowHelp(true).WithKeyMap(keyMap()).RunWithContext(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// keyCancelled leaves, in the transcript, that the form after what was
// cancelled with a key (the form clears itself when it ends).
func (s *session) keyCancelled(what string) {
	fmt.Fprintf(s.out, "%s Cancelled (Esc or Ctrl-C).\n", what)
}

// huhChoice asks one question with fixed options; Esc or Ctrl-C is cancel.
func (s *session) huhChoice(ctx context.Context, title string, opts []huh.Option[string]) (string, error) {
	var v string
	err := s.runHuh(ctx, huh.NewGroup(huh.NewSelect[string]().Title(title).Options(opts...).Value(&v)))
	if errors.Is(err, huh.ErrUserAborted) {
		s.keyCancelled(title)
		return mcp.ActionCancel, nil
	}
	if err != nil {
		return "", err
	}
	// The form clears itself when done: leave the choice in the transcript.
	for _, o := range opts {
		if o.Value == v {
			fmt.Fprintf(s.out, "%s %s\n", title, o.Key)
		}
	}
	return v, nil
}

// formHuh fills the form with terminal forms: a first choice (fill in,
// decline, cancel), the fields, then the review (submit, edit, decline,
// cancel) until the answers pass the schema.
func (s *session) formHuh(ctx context.Context, f *form) (*mcp.ElicitResult, error) {
	first, err := s.huhChoice(ctx, "Fill in this form?", []huh.Option[string]{
		huh.NewOption("Fill in the form", wordEdit),
		huh.NewOption("Decline — I refuse", mcp.ActionDecline),
		huh.NewOption("Cancel — not now", mcp.ActionCancel),
	})
	if err != nil || first != wordEdit {
		return result(first), err
	}
	for {
		fields, commits := s.huhFields(f)
		err := s.runHuh(ctx, huh.NewGroup(fields...))
		if errors.Is(err, huh.ErrUserAborted) {
			s.keyCancelled("Form:")
			return result(mcp.ActionCancel), nil
		}
		if err != nil {
			return nil, err
		}
		for _, c := range commits {
			c()
		}
		var review strings.Builder
		for i, name := range f.schema.Order {
			fmt.Fprintf(&review, "%d. %s: %s\n", i+1, clean(f.label(name)), f.show(name))
		}
		fmt.Fprintf(s.out, "\nReview your answers:\n%s", review.String())
		next, err := s.huhChoice(ctx, "Send these answers?", []huh.Option[string]{
			huh.NewOption("Submit — send these answers", wordSubmit),
			huh.NewOption("Edit the answers", wordEdit),
			huh.NewOption("Decline — I refuse", mcp.ActionDecline),
			huh.NewOption("Cancel — not now", mcp.ActionCancel),
		})
		if err != nil {
			return nil, err
		}
		switch next {
		case wordSubmit:
			content, err := f.schema.ValidateContent(f.answers)
			if err == nil {
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
			}
			fmt.Fprintf(s.out, "Not sent: %s\n", clean(err.Error()))
		case wordEdit:
		default:
			return result(next), nil
		}
	}
}

// huhFields builds one terminal field per property, pre-filled with the
// current answer (the default at first, ELI-C-05) and checked against the
// schema as the user types (ELI-C-06). Each commit copies a field's value
// into f.answers after the form ran.
func (s *session) huhFields(f *form) ([]huh.Field, []func()) {
	var fields []huh.Field
	var commits []func()
	for _, name := range f.schema.Order {
		field, commit := newHuhProperty(f, name).field()
		if field != nil {
			fields, commits = append(fields, field), append(commits, commit)
		}
	}
	return fields, commits
}

// huhProperty is one property on its way to a terminal field.
type huhProperty struct {
	f           *form
	name        string
	p           *elicit.Property
	title, desc string
	cur         any  // the current answer
	has         bool // whether there is one
}

func newHuhProperty(f *form, name string) *huhProperty {
	p := f.schema.Properties[name]
	title := clean(f.label(name))
	if f.required(name) {
		title += " *"
	}
	desc := hint(p, false)
	if p.Description != "" {
		desc = SafeText(p.Description) + "\n" + desc
	}
	cur, has := f.answers[name]
	return &huhProperty{f: f, name: name, p: p, title: title, desc: desc, cur: cur, has: has}
}

// field picks the terminal field for the property's type: typed text for
// strings and numbers, yes/no for a boolean (with "no answer" when it is
// optional and unanswered), a select for one choice, a multi-select.
func (hp *huhProperty) field() (huh.Field, func()) {
	switch p := hp.p; {
	case p.Type == "string" && p.Enum == nil, p.Type == "number", p.Type == "integer":
		return hp.input()
	case p.Type == "boolean" && (hp.has || hp.f.required(hp.name)):
		b, _ := hp.cur.(bool)
		return huh.NewConfirm().Title(hp.title).Description(hp.desc).Affirmative("Yes").Negative("No").Value(&b),
			func() { hp.f.answers[hp.name] = b }
	case p.Type == "boolean":
		return hp.optionalBoolean()
	case p.Type == "string":
		return hp.choice()
	case p.Type == "array":
		return hp.multiSelect()
	}
	return nil, nil
}

// check is the schema's verdict on v, as the field's validation error.
func (hp *huhProperty) check(v any) error {
	if msg := hp.f.problemFor(hp.name, v); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// set stores v, or "no answer" for nil.
func (hp *huhProperty) set(v any) {
	if v == nil {
		setAnswer(hp.f, hp.name, nil)
		return
	}
	hp.f.answers[hp.name] = v
}

func (hp *huhProperty) input() (huh.Field, func()) {
	text := ""
	if hp.has {
		text = hp.f.show(hp.name)
		if str, ok := hp.cur.(string); ok {
			text = str
		}
	}
	read := func(t string) (any, error) {
		if t == "" {
			return nil, nil
		}
		v, msg := parseAnswer(hp.p, t)
		if msg != "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	in := huh.NewInput().Title(hp.title).Description(hp.desc).Value(&text).
		Validate(func(t string) error {
			v, err := read(t)
			if err != nil {
				return err
			}
			return hp.check(v)
		})
	return in, func() { setAnswer(hp.f, hp.name, must(read(text))) }
}

func (hp *huhProperty) optionalBoolean() (huh.Field, func()) {
	v := noAnswer
	sel := huh.NewSelect[string]().Title(hp.title).Description(hp.desc).Options(
		huh.NewOption("Yes", "yes"), huh.NewOption("No", "no"), huh.NewOption("(no answer)", noAnswer)).Value(&v)
	return sel, func() {
		if v == noAnswer {
			hp.set(nil)
		} else {
			hp.set(v == "yes")
		}
	}
}

func (hp *huhProperty) choice() (huh.Field, func()) {
	v, _ := hp.cur.(string)
	if !hp.has {
		v = noAnswer
	}
	opts := choiceOptions(hp.p, nil)
	if !hp.f.required(hp.name) {
		opts = append(opts, huh.NewOption("(no answer)", noAnswer))
	}
	sel := huh.NewSelect[string]().Title(hp.title).Description(hp.desc).Options(opts...).Value(&v).
		Validate(func(v string) error {
			if v == noAnswer {
				return hp.check(nil)
			}
			return hp.check(v)
		})
	return sel, func() {
		if v == noAnswer {
			hp.set(nil)
		} else {
			hp.set(v)
		}
	}
}

func (hp *huhProperty) multiSelect() (huh.Field, func()) {
	vs, _ := hp.cur.([]string)
	vs = append([]string(nil), vs...)
	ms := huh.NewMultiSelect[string]().Title(hp.title).Description(hp.desc).Value(&vs).Options(choiceOptions(hp.p, vs)...).
		Validate(func(v []string) error { return hp.check(v) })
	if hp.p.MaxItems != nil && *hp.p.MaxItems > 0 {
		ms = ms.Limit(*hp.p.MaxItems)
	}
	return ms, func() {
		if len(vs) == 0 {
			hp.set(nil) // nothing chosen: no answer rather than []
		} else {
			hp.set(append([]string{}, vs...))
		}
	}
}

func must(v any, _ error) any { return v }

// setAnswer records v, or no answer for nil.
func setAnswer(f *form, name string, v any) {
	if v == nil {
		delete(f.answers, name)
		return
	}
	f.answers[name] = v
}

// choiceOptions lists an enum's choices, titled where the schema titles
// them, with the values in selected marked.
func choiceOptions(p *elicit.Property, selected []string) []huh.Option[string] {
	opts := make([]huh.Option[string], len(p.Enum))
	for i, v := range p.Enum {
		o := huh.NewOption(choiceLabel(p, i, v), v)
		for _, sv := range selected {
			if sv == v {
				o = o.Selected(true)
			}
		}
		opts[i] = o
	}
	return opts
}
