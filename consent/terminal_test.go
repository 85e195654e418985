package consent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

var (
	loopbackAsker = mcpclient.Asker{Endpoint: "http://127.0.0.1:3000/mcp",
		Server: &mcp.Implementation{Name: "elicitd", Version: "dev", Title: "Elicit reference server"}}
	exampleAsker = mcpclient.Asker{Endpoint: "https://mcp.example.com/mcp", Server: &mcp.Implementation{Name: "billing", Version: "1.0"}}
)

// lineTerminal returns line-mode handlers reading input and the buffer
// they write to.
func lineTerminal(input string, mod func(*Terminal)) (*mcpclient.Handlers, *strings.Builder) {
	out := &strings.Builder{}
	t := &Terminal{In: strings.NewReader(input), Out: out}
	if mod != nil {
		mod(t)
	}
	return t.Handlers(), out
}

// everyKind is a form with every primitive of docs/protocol.md §Form schema primitives.
func everyKind(t *testing.T) json.RawMessage {
	t.Helper()
	s, err := elicit.FormSchema(
		elicit.String("email").Title("Email").Format(elicit.FormatEmail).Required(),
		elicit.Number("ratio").Title("Ratio").Minimum(0).Maximum(1),
		elicit.Integer("count").Title("Count").Minimum(1).Maximum(10).Default(3),
		elicit.Boolean("notify").Title("Notify me").Default(true),
		elicit.Enum("color", "red", "green").Title("Colour"),
		elicit.TitledEnum("detail", elicit.Choice{Value: "summary", Title: "Summary"},
			elicit.Choice{Value: "detailed", Title: "Detailed"}).Title("Detail level").Default("summary").Required(),
		elicit.MultiEnum("tags", "a", "b", "c").Title("Tags").MaxItems(2),
		elicit.TitledMultiEnum("days", elicit.Choice{Value: "mon", Title: "Monday"},
			elicit.Choice{Value: "tue", Title: "Tuesday"}).Title("Days").Default([]string{"mon"}),
		elicit.String("when").Title("Date").Format(elicit.FormatDate),
		elicit.String("label").Title("Label").MinLength(1).MaxLength(5).Default("Q2"),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s.JSON()
}

func TestFormLineMode(t *testing.T) {
	schema := everyKind(t)
	all := map[string]any{"email": "bob@example.com", "ratio": 0.5, "count": 3.0, "notify": true, "color": "green",
		"detail": "summary", "tags": []string{"a", "c"}, "days": []string{"mon"}, "when": "2026-07-28", "label": "Q2"}
	for _, tc := range []struct {
		name    string
		input   string
		action  string
		content map[string]any
		out     []string // the output contains each
	}{
		{name: "valid, defaults kept",
			input:  "bob@example.com\n0.5\n\n\n2\n\n1,3\n\n2026-07-28\n\nsubmit\n",
			action: "accept", content: all,
			out: []string{"127.0.0.1:3000 — the endpoint you connected to", `"Elicit reference server" (elicitd dev) — self-reported, not verified`,
				"Message:  Tell us", "1/10 Email * (email)", "    an email address", "  > [3]\n", "      2) Detailed (detailed)",
				"  3. Count: 3", "  6. Detail level: Summary", "  7. Tags: a, c", "  8. Days: Monday", `  10. Label: "Q2"`}},
		{name: "invalid then corrected",
			input: "nope\nbob@example.com\n2\n0.5\n4.5\n3\nmaybe\nno\npurple\ngreen\ndetailed\n1,2,3\n1,3\n:none\n28/07/2026\n2026-07-28\nlonger than five\n\n" +
				"frobnicate\n7\n2\nsubmit\n",
			action:  "accept",
			content: map[string]any{"email": "bob@example.com", "ratio": 0.5, "count": 3.0, "notify": false, "color": "green", "detail": "detailed", "tags": []string{"b"}, "when": "2026-07-28", "label": "Q2"},
			out: []string{"Email (email): must be an email address", "Ratio (ratio): must be at most 1", "Count (count): must be a whole number", "Notify me: type yes or no",
				"Colour: type a number from 1 to 2, or one of the values", "Tags (tags): choose at most 2", "Date (when): must be a date (YYYY-MM-DD)",
				"Label (label): must be at most 5 characters", "Please type submit, a number from 1 to 10, edit, :decline or :cancel.", "  8. Days: (no answer)", "  7. Tags: b"}},
		// The review takes the field prompts' words, and the plain ones.
		{name: "decline at the review", input: "bob@example.com\n\n\n\n\n\n\n\n\n\n:decline\n", action: "decline",
			out: []string{"a number to change that answer, edit to go through them all, :decline to refuse, or :cancel to dismiss:"}},
		{name: "cancel at the review", input: "bob@example.com\n\n\n\n\n\n\n\n\n\n:cancel\n", action: "cancel"},
		{name: "plain decline at the review", input: "bob@example.com\n\n\n\n\n\n\n\n\n\ndecline\n", action: "decline"},
		{name: "Esc at the review", input: "bob@example.com\n\n\n\n\n\n\n\n\n\n\x1b\n", action: "cancel"},
		// Only submit sends: yes, y or s are asked again.
		{name: "yes is not submit", input: "bob@example.com\n\n\n\n\n\n\n\n\n\nyes\ns\n", action: "cancel",
			out: []string{"Please type submit, a number from 1 to 10, edit, :decline or :cancel."}},
		{name: "decline at a field", input: ":decline\n", action: "decline", out: []string{"\nDeclined.\n"}},
		{name: "Esc at a field", input: "\x1b\n", action: "cancel"},
		{name: "a plain word at a field is an answer", input: "cancel\n:cancel\n", action: "cancel", out: []string{"Email (email): must be an email address"}},
		{name: "cancel at a field", input: "bob@example.com\n:cancel\n", action: "cancel", out: []string{"\nCancelled.\n"}},
		{name: "end of input is cancel", input: "bob@example.com\n", action: "cancel", out: []string{"\nCancelled (end of input).\n"}},
		{name: "invalid UTF-8 is asked again", input: "bob@example.com\n\n\n\n\n\n\n\n\nab\xffcd\nabcd\nsubmit\n", action: "accept",
			content: map[string]any{"email": "bob@example.com", "count": 3.0, "notify": true, "detail": "summary", "days": []string{"mon"}, "label": "abcd"},
			out:     []string{"Label: this is not valid UTF-8 text"}},
		{name: "a required field cannot be skipped", input: "\n\n:cancel\n", action: "cancel", out: []string{"Email (email): missing; it is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, out := lineTerminal(tc.input, nil)
			res, err := h.ElicitForm(context.Background(), loopbackAsker, "k", &mcp.ElicitRequestParams{Message: "Tell us", RequestedSchema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.action || !reflect.DeepEqual(res.Content, tc.content) {
				t.Errorf("got %+v, want %s %v\n%s", res, tc.action, tc.content, out)
			}
			wantOutput(t, out.String(), tc.out, nil)
		})
	}
}

func TestFormSecretWarningAndBadSchema(t *testing.T) {
	h, out := lineTerminal(":decline\n", nil)
	res, err := h.ElicitForm(context.Background(), loopbackAsker, "k", &mcp.ElicitRequestParams{Message: "Enter your API key",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"api_key":{"type":"string"}},"required":["api_key"]}`)})
	if err != nil || res.Action != "decline" {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(out.String(), `seems to ask for a secret ("api_key")`) {
		t.Errorf("no secret warning:\n%s", out)
	}

	// Beyond English words: other languages, leetspeak, writeOnly, a
	// card number as default; an ordinary field is not named.
	h, out = lineTerminal(":decline\n", nil)
	res, err = h.ElicitForm(context.Background(), loopbackAsker, "k", &mcp.ElicitRequestParams{Message: "Zugang",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"pw":{"type":"string","title":"Passwort"},"t":{"type":"string","title":"t0ken"},` +
			`"v":{"type":"string","writeOnly":true},"c":{"type":"string","default":"4111 1111 1111 1111"},` +
			`"n":{"type":"string","title":"Numéro de carte"},"label":{"type":"string","title":"Label"}}}`)})
	if err != nil || res.Action != "decline" {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(out.String(), `seems to ask for a secret ("Passwort", "t0ken", "v", "c", "Numéro de carte")`) {
		t.Errorf("secret warning does not name exactly the five secret fields:\n%s", out)
	}

	h, _ = lineTerminal("", nil)
	_, err = h.ElicitForm(context.Background(), loopbackAsker, "k", &mcp.ElicitRequestParams{Message: "m",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"addr":{"type":"object"}}}`)})
	if !errors.Is(err, ErrUnusableForm) || !errors.Is(err, elicit.ErrBadSchema) {
		t.Fatalf("nested schema: %v", err)
	}
}

func TestURLConsentLineMode(t *testing.T) {
	const link = "https://mcp.example.com/ui/set_api_key?flow=ab12"
	for _, tc := range []struct {
		name   string
		input  string
		allow  bool
		action string
		opened bool
		out    []string
		notOut []string
	}{
		{name: "accept, opened by the user", input: "accept\n\n", action: "accept",
			out: []string{"Name:     \"billing 1.0\" — self-reported", "URL:      https://mcp.[example.com]/ui/set_api_key?flow=ab12",
				"Domain:   example.com", "Nothing has been opened or fetched.", "Open this URL in your browser yourself:\n  " + link + "\n"},
			notOut: []string{"Warnings:"}},
		{name: "accept, opened by the system", input: "ACCEPT\n\n", allow: true, action: "accept", opened: true,
			out: []string{"Type accept to consent to opening this page, :decline to refuse, or :cancel to dismiss:", "Opened in your browser:\n  " + link}},
		{name: "decline never opens", input: ":decline\n", allow: true, action: "decline"},
		{name: "cancel never opens", input: ":cancel\n", allow: true, action: "cancel"},
		{name: "plain decline", input: "decline\n", allow: true, action: "decline"},
		{name: "Esc is cancel", input: "\x1b\n", allow: true, action: "cancel"},
		// Only the word accept consents: yes, y, a are asked again.
		{name: "yes is not accept", input: "yes\ny\na\n:decline\n", allow: true, action: "decline",
			out: []string{"Please type accept, :decline or :cancel."}},
		{name: "end of input is cancel", input: "", allow: true, action: "cancel"},
		{name: "cancel after consenting", input: "accept\n:cancel\n", allow: true, action: "cancel", opened: true},
		{name: "end of input after consenting is cancel, not accept", input: "accept\n", allow: true, action: "cancel", opened: true},
		{name: "only Enter says the page is done", input: "accept\nok\n\n", action: "accept",
			out: []string{"Press Enter once you have finished on the page, or type :cancel to stop."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opened []string
			h, out := lineTerminal(tc.input, func(t *Terminal) {
				t.AllowOpen = tc.allow
				t.Opener = func(_ context.Context, u string) error { opened = append(opened, u); return nil }
			})
			res, err := h.ElicitURL(context.Background(), exampleAsker, "billing_key", &mcp.ElicitRequestParams{Mode: "url", Message: "Connect billing", URL: link})
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.action || res.Content != nil {
				t.Errorf("got %+v, want %s", res, tc.action)
			}
			if tc.opened != (len(opened) == 1) || (tc.opened && opened[0] != link) {
				t.Errorf("opened = %q", opened)
			}
			wantOutput(t, out.String(), tc.out, tc.notOut)
		})
	}
}

func TestURLConsentWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, url, message string
		action             string
		out                []string
		notOut             []string
	}{
		{name: "homograph on another site", url: "https://\u0430pple.com/login", message: "Sign in", action: "decline",
			out: []string{"URL:      https://[xn--pple-43d.com]/login", "Domain:   \u0430pple.com = xn--pple-43d.com (punycode)",
				"! The page is on xn--pple-43d.com, not on example.com, the server you connected to.",
				`! Mixed writing systems in the host: "аpple" mixes Cyrillic and Latin`}},
		{name: "javascript is refused without asking", url: "javascript:alert(1)", message: "Click", action: "decline",
			out:    []string{`Refused:  consent: URL refused: scheme "javascript" is not http or https`, "Answered decline."},
			notOut: []string{"Type accept"}},
		{name: "data is refused without asking", url: "data:text/html,<script>alert(1)</script>", message: "x", action: "decline",
			out: []string{`scheme "data"`}},
		{name: "a user name before the host is refused without asking", url: "https://mcp.example.com@evil.example/login", message: "Sign in", action: "decline",
			out:    []string{`Refused:  consent: URL refused: it has "mcp.example.com" before the host`, "the page is on evil.example", "Answered decline."},
			notOut: []string{"Type accept", "URL:  "}},
		{name: "a user name and password are refused, the password never shown", url: "https://alice:hunter2@mcp.example.com/x", message: "Go", action: "decline",
			out:    []string{`it has "alice" before the host`, "Answered decline."},
			notOut: []string{"hunter2", "Type accept"}},
		{name: "escape sequences in the message are shown, not run", url: "https://mcp.example.com/x", message: "Hi\x1b[2J\u202egnp.exe", action: "decline",
			out: []string{`Hi\x1b[2J\u202egnp.exe`}, notOut: []string{"\x1b", "\u202e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, out := lineTerminal("decline\n", nil)
			res, err := h.ElicitURL(context.Background(), exampleAsker, "k", &mcp.ElicitRequestParams{Mode: "url", Message: tc.message, URL: tc.url})
			if err != nil || res.Action != tc.action {
				t.Fatalf("%+v %v", res, err)
			}
			wantOutput(t, out.String(), tc.out, tc.notOut)
		})
	}
}

func TestURLAskedAgain(t *testing.T) {
	h, out := lineTerminal("accept\n\naccept\n\n", nil)
	p := &mcp.ElicitRequestParams{Mode: "url", Message: "m", URL: "http://127.0.0.1:3000/ui/set_api_key?flow=1"}
	for i := 0; i < 2; i++ {
		if res, err := h.ElicitURL(context.Background(), loopbackAsker, "billing_key", p); err != nil || res.Action != "accept" {
			t.Fatalf("%+v %v", res, err)
		}
	}
	if strings.Count(out.String(), "still waiting") != 1 {
		t.Errorf("want one 'still waiting' note:\n%s", out)
	}
	if strings.Contains(out.String(), "not on") {
		t.Errorf("loopback page for a loopback endpoint warned as another site:\n%s", out)
	}
}

func TestRenderURLANSI(t *testing.T) {
	r, err := InspectURL("https://a.b.example.co.uk/x")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := RenderURL(&b, exampleAsker, "m", r, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "https://a.b.\x1b[1mexample.co.uk\x1b[0m/x") {
		t.Errorf("no bold domain:\n%q", b.String())
	}
}

func TestContextEndsAPrompt(t *testing.T) {
	// An input that never ends: the handler must still return.
	r, w := io.Pipe()
	defer w.Close()
	out := &strings.Builder{}
	h := (&Terminal{In: r, Out: out}).Handlers()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.ElicitURL(ctx, loopbackAsker, "k", &mcp.ElicitRequestParams{Mode: "url", Message: "m", URL: "https://example.com/"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestSamplingLineMode(t *testing.T) {
	params := func(max int) *mcp.CreateMessageRequestParams {
		cost := 0.3
		return &mcp.CreateMessageRequestParams{MaxTokens: max, SystemPrompt: "Be brief.",
			Messages:         []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("What is 2+2?")}},
			ModelPreferences: &mcp.ModelPreferences{Hints: []mcp.ModelHint{{Name: "claude"}}, CostPriority: &cost}}
	}
	t.Run("typed reply", func(t *testing.T) {
		h, out := lineTerminal("reply\nFour.\n.\nsend\n", nil)
		res, err := h.Sampling(context.Background(), loopbackAsker, "s", params(50))
		if err != nil {
			t.Fatal(err)
		}
		if res.Role != "assistant" || res.Model != HumanModel || string(res.Content) != `{"type":"text","text":"Four."}` {
			t.Errorf("got %+v %s", res, res.Content)
		}
		for _, s := range []string{"Max tokens: 50", "Model preferences (hints only, not followed): models like claude; cost priority 0.3",
			"System prompt: Be brief.", "user: What is 2+2?"} {
			if !strings.Contains(out.String(), s) {
				t.Errorf("output lacks %q:\n%s", s, out)
			}
		}
	})
	t.Run("too long, then edited", func(t *testing.T) {
		h, out := lineTerminal("reply\n"+strings.Repeat("x", 9)+"\n.\nsend\nreply\nFour\n.\nsend\n", nil)
		res, err := h.Sampling(context.Background(), loopbackAsker, "s", params(2))
		if err != nil || string(res.Content) != `{"type":"text","text":"Four"}` {
			t.Fatalf("%+v %v", res, err)
		}
		if !strings.Contains(out.String(), "Please shorten it.") {
			t.Errorf("no shorten note:\n%s", out)
		}
	})
	t.Run("declined", func(t *testing.T) {
		h, out := lineTerminal("no\n:decline\n", nil)
		if _, err := h.Sampling(context.Background(), loopbackAsker, "s", params(50)); !errors.Is(err, ErrDeclined) {
			t.Fatalf("err = %v", err)
		}
		if !strings.Contains(out.String(), "Please type reply or :decline.") {
			t.Errorf("no is taken without saying what is:\n%s", out)
		}
	})
	t.Run("no maxTokens is refused without asking", func(t *testing.T) {
		h, out := lineTerminal("", nil)
		if _, err := h.Sampling(context.Background(), loopbackAsker, "s", params(0)); !errors.Is(err, ErrRefusedRequest) {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(out.String(), "Type reply") {
			t.Errorf("asked anyway:\n%s", out)
		}
	})
}

func TestRoots(t *testing.T) {
	if h := (&Terminal{}).Handlers(); h.Roots != nil || h.Capabilities().Roots != nil {
		t.Fatal("roots declared with no roots to give")
	}
	root, err := RootFromPath("/srv/projects/../work")
	if err != nil || root.URI != "file:///srv/work" || root.Name != "work" {
		t.Fatalf("RootFromPath = %+v, %v", root, err)
	}
	mod := func(t *Terminal) { t.Roots = []mcp.Root{root} }

	h, out := lineTerminal("share\n", mod)
	if caps := h.Capabilities(); caps.Roots == nil || !caps.ElicitationURL() || !caps.ElicitationForm() || caps.Sampling == nil {
		t.Fatalf("capabilities = %+v", caps)
	}
	res, err := h.Roots(context.Background(), loopbackAsker, "r")
	if err != nil || !reflect.DeepEqual(res.Roots, []mcp.Root{root}) {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(out.String(), "file:///srv/work (work)") {
		t.Errorf("roots not shown before sharing:\n%s", out)
	}

	// yes is not share: asked again, then end of input declines.
	h, out = lineTerminal("yes\n", mod)
	if _, err := h.Roots(context.Background(), loopbackAsker, "r"); !errors.Is(err, ErrDeclined) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out.String(), "Please type share or :decline.") {
		t.Errorf("yes was not asked again:\n%s", out)
	}
	h, _ = lineTerminal("share\n", func(t *Terminal) { t.Roots = []mcp.Root{{URI: "https://example.com/"}} })
	if _, err := h.Roots(context.Background(), loopbackAsker, "r"); !errors.Is(err, ErrRefusedRequest) {
		t.Fatalf("err = %v", err)
	}
}

// The host warns when the page is on another origin than the endpoint —
// scheme, host or port — even on the same site or the same computer, and
// when the URL carries what looks like a credential (the rule elicit
// check's url-safe case applies: elicit.SecretsInURL).
func TestURLConsentOriginAndCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint, url string
		want                []string
		notWant             []string
	}{
		{"another port on loopback", "http://127.0.0.1:4915/mcp", "http://127.0.0.1:3914/ui/set_api_key?flow=00",
			[]string{"! The page is on http://127.0.0.1:3914, not on http://127.0.0.1:4915, the server you connected to: another server on this computer."}, nil},
		{"same origin on loopback", "http://127.0.0.1:3914/mcp", "http://127.0.0.1:3914/ui/set_api_key?flow=00",
			nil, []string{"the server you connected to"}},
		{"another host of the same site", "https://mcp.example.com/mcp", "https://pay.example.com/connect",
			[]string{"! The page is on https://pay.example.com:443, not on https://mcp.example.com:443, the server you connected to (both are on the site example.com)."}, nil},
		{"another port of the same host", "https://mcp.example.com/mcp", "https://mcp.example.com:8443/connect",
			[]string{"not on https://mcp.example.com:443, the server you connected to"}, nil},
		{"http beside https", "https://mcp.example.com/mcp", "http://mcp.example.com/connect",
			[]string{"! The page is on http://mcp.example.com:80, not on https://mcp.example.com:443"}, nil},
		{"the default port written out", "https://mcp.example.com/mcp", "https://mcp.example.com:443/connect",
			nil, []string{"the server you connected to"}},
		{"credential-looking parameters", "https://mcp.example.com/mcp", "https://mcp.example.com/cb?access_token=abc&code=xyz",
			[]string{`! The URL carries what looks like a credential (the parameter "access_token", the parameter "code")`}, nil},
		{"a JWT in the path", "https://mcp.example.com/mcp", "https://mcp.example.com/x/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig",
			[]string{"(a JSON Web Token)"}, nil},
		{"a plain flow link", "https://mcp.example.com/mcp", "https://mcp.example.com/ui/set_api_key?flow=0123",
			nil, []string{"credential", "the server you connected to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, out := lineTerminal("decline\n", nil)
			who := mcpclient.Asker{Endpoint: tc.endpoint}
			if _, err := h.ElicitURL(context.Background(), who, "k", &mcp.ElicitRequestParams{Mode: "url", Message: "m", URL: tc.url}); err != nil {
				t.Fatal(err)
			}
			wantOutput(t, out.String(), tc.want, tc.notWant)
		})
	}
}

// wantOutput fails t unless out holds every string of want and none of
// notWant.
func wantOutput(t *testing.T, out string, want, notWant []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	for _, s := range notWant {
		if strings.Contains(out, s) {
			t.Errorf("output has %q:\n%s", s, out)
		}
	}
}
