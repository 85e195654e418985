package consent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// ErrDeclined is returned (wrapped) by the sampling and roots handlers when
// the user refuses: those requests have no "decline" answer, so the call
// is not retried (MRTR-C-10) and CallTool returns the error.
var ErrDeclined = errors.New("consent: the user declined")

// ErrRefusedRequest is returned (wrapped) when a request is refused before
// the user is asked: a sampling request without maxTokens, a roots request
// when a host root is not a file:// URI. Like ErrDeclined it ends the call.
var ErrRefusedRequest = errors.New("consent: request refused")

// Terminal answers a server's input requests on a text terminal, with the
// user in charge of every answer. Set the fields, then pass Handlers() as
// mcpclient.Options.Handlers. The zero value reads os.Stdin and writes
// os.Stdout in line mode.
//
// Every prompt starts by saying which server asks: the endpoint host (the
// only verified part) and the name it gives itself (ELI-C-01).
//
//   - URL mode: the complete URL, its registrable domain highlighted, and
//     warnings (InspectURL, RenderURL); nothing is fetched or opened before
//     the user's explicit accept (SEC-U-C-01, SEC-U-C-02). On accept the
//     page is opened with xdg-open or open only when AllowOpen is set,
//     otherwise the URL is printed for the user to open. Accept (consent
//     only), decline and cancel are distinct answers. A URL that
//     InspectURL refuses (javascript:, data:, file:, a user name before
//     the host, …) is never shown as a link: the user is told why and the
//     answer is decline.
//   - Form mode: every primitive of the spec, defaults pre-filled
//     (ELI-C-05), answers checked as they are typed and again against the
//     whole schema before sending (ELI-C-06, with elicit.Schema), a review
//     step before submit (ELI-C-03), decline and cancel as separate
//     choices (ELI-C-02). A form that asks for something that looks like a
//     secret gets a warning (ELI-S-01 forbids it).
//   - Sampling (deprecated): the request is shown for review; with no
//     model bundled the user may type the reply, or decline (ErrDeclined).
//     A request without maxTokens is refused (ErrRefusedRequest); model
//     preferences are shown as hints only.
//   - Roots (deprecated): only the roots in Roots, and only after the user
//     agrees; otherwise ErrDeclined.
//
// In line mode (Interactive false, for pipes, tests and scripts) prompts
// are numbered lines on Out and answers are read line by line from In;
// choices are typed words, in full (accept, submit, edit, …): anything
// else, "yes" included, is asked again with the words that are taken.
// At every prompt :decline refuses and :cancel (or a line holding only
// Esc) dismisses; at a choice prompt the plain words decline and cancel
// do too. End of input cancels an elicitation, never accepts it, and
// declines sampling and roots. In interactive mode the same steps are
// terminal forms (github.com/charmbracelet/huh); Esc or Ctrl-C cancels
// every one of them.
//
// Prompts never overlap: the handlers take turns.
type Terminal struct {
	// In is where answers are read; nil means os.Stdin.
	In io.Reader
	// Out is where prompts are written; nil means os.Stdout. The
	// registrable domain is shown in ANSI bold when Out is a terminal, in
	// [brackets] otherwise.
	Out io.Writer
	// Interactive selects terminal forms instead of line mode. Set it when
	// both In and Out are terminals (IsTerminal).
	Interactive bool
	// Roots are the only roots ever answered to roots/list, each a
	// file:// URI (RootFromPath). Empty means the roots capability is not
	// declared at all.
	Roots []mcp.Root
	// AllowOpen lets an accepted URL be opened in the system browser
	// (Opener). When false the URL is printed for the user to open.
	AllowOpen bool
	// Opener opens url in the user's browser, outside this program so it
	// cannot see the page (SEC-U-C-04). Nil means xdg-open, or open on
	// macOS. Called only when AllowOpen is set and the user accepted.
	Opener func(ctx context.Context, url string) error

	once sync.Once
	sess *session // shared by Handlers and SignIn: one reader of In
}

// Handlers returns the handlers for mcpclient.Options.Handlers: ElicitForm,
// ElicitURL and Sampling always, Roots only when t.Roots is not empty (so
// the roots capability is declared only when there is something to share).
// The handlers (and SignIn) share one reader of t.In and take turns; the
// Terminal must not be changed afterwards.
func (t *Terminal) Handlers() *mcpclient.Handlers {
	s := t.session()
	h := &mcpclient.Handlers{
		ElicitForm: s.saidRefusal(s.elicitForm),
		ElicitURL:  s.saidRefusal(s.elicitURL),
		Sampling:   s.sampling,
	}
	if len(t.Roots) > 0 {
		h.Roots = s.roots
	}
	return h
}

// elicitHandler is the shape of mcpclient.Handlers.ElicitForm and ElicitURL.
type elicitHandler = func(ctx context.Context, a mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error)

// saidRefusal wraps an elicitation handler so that, in line mode, a
// decline or cancel is confirmed by a line of the host's own ("Declined.",
// "Cancelled.", or "Cancelled (end of input)." when input ended): the
// user sees what was sent. Interactive prompts show it themselves.
func (s *session) saidRefusal(h elicitHandler) elicitHandler {
	return func(ctx context.Context, a mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
		res, err := h(ctx, a, key, p)
		if err != nil || res == nil || s.t.Interactive {
			return res, err
		}
		switch {
		case res.Action == mcp.ActionDecline:
			fmt.Fprintln(s.out, "Declined.")
		case res.Action == mcp.ActionCancel && s.ended.Load():
			fmt.Fprintln(s.out, "Cancelled (end of input).")
		case res.Action == mcp.ActionCancel:
			fmt.Fprintln(s.out, "Cancelled.")
		}
		return res, err
	}
}

// session returns the Terminal's one session, made on first use.
func (t *Terminal) session() *session {
	t.once.Do(func() {
		s := &session{t: t, in: t.In, out: t.Out, asked: map[string]string{}}
		if s.in == nil {
			s.in = os.Stdin
		}
		if s.out == nil {
			s.out = os.Stdout
		}
		s.ansi = IsTerminal(s.out) && os.Getenv("TERM") != "dumb"
		s.echo = !IsTerminal(s.in)
		t.sess = s
	})
	return t.sess
}

// IsTerminal reports whether v is an *os.File open on a terminal (a
// character device other than /dev/null).
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// session is the state shared by one Terminal's handlers.
type session struct {
	t    *Terminal
	in   io.Reader
	out  io.Writer
	ansi bool
	echo bool // input is not a terminal: end each answered prompt with a newline

	mu    sync.Mutex        // one prompt at a time
	asked map[string]string // input key → URL last shown, to say "still waiting"

	start sync.Once
	lines chan lineOrErr
	ended atomic.Bool // readLine has returned io.EOF
}

type lineOrErr struct {
	s   string
	err error
}

// readLine returns the next line of input without its line ending; io.EOF
// when input has ended; ctx.Err() when ctx ends first. One goroutine reads
// ahead at most one line, so a blocked read never blocks cancellation.
func (s *session) readLine(ctx context.Context) (string, error) {
	s.start.Do(func() {
		s.lines = make(chan lineOrErr)
		go func() {
			defer close(s.lines)
			br := bufio.NewReader(s.in)
			for {
				l, err := br.ReadString('\n')
				if l != "" {
					s.lines <- lineOrErr{s: strings.TrimRight(l, "\r\n")}
				}
				if err != nil {
					s.lines <- lineOrErr{err: err}
					return
				}
			}
		}()
	})
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.ended.Store(true)
			return "", io.EOF
		}
		if errors.Is(l.err, io.EOF) {
			s.ended.Store(true)
		}
		if s.echo && l.err == nil {
			// Nothing echoed the typed line: keep the transcript readable.
			fmt.Fprintln(s.out)
		}
		return l.s, l.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// prompt writes text (no newline added) and reads one line.
func (s *session) prompt(ctx context.Context, text string) (string, error) {
	if s.echo {
		text = strings.TrimRight(text, " ") // the newline comes after the read
	}
	fmt.Fprint(s.out, text)
	return s.readLine(ctx)
}

// Line-mode words that stop a prompt, the same at every prompt: field
// prompts take them with a colon so that the plain words stay usable as
// answers. A line holding only Esc (typed as ^[ before Enter) is :cancel.
const (
	escDecline = ":decline"
	escCancel  = ":cancel"
	escKey     = "\x1b"
)

// refusal reads a typed line as :decline or :cancel (Esc too); plain
// says whether the bare words count as well (at a choice prompt, where no
// answer can be spelled like them).
func refusal(line string, plain bool) (action string, ok bool) {
	w := strings.ToLower(strings.TrimSpace(line))
	switch {
	case w == escDecline, plain && w == mcp.ActionDecline:
		return mcp.ActionDecline, true
	case w == escCancel, w == escKey, plain && w == mcp.ActionCancel:
		return mcp.ActionCancel, true
	}
	return "", false
}

// choose asks until the answer is one of the words, typed in full
// (letter case and surrounding blanks aside), or one of the refusals
// (mcp.ActionDecline, mcp.ActionCancel) as refusal reads them; it returns
// the word or the refusal's action. Nothing else is taken ("yes" is not
// accept): the user is told what is. End of input returns eof.
func (s *session) choose(ctx context.Context, question string, words, refusals []string, eof string) (string, error) {
	choices := append([]string(nil), words...)
	for _, r := range refusals {
		choices = append(choices, ":"+r)
	}
	for {
		l, err := s.prompt(ctx, question+" ")
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(s.out)
			return eof, nil
		}
		if err != nil {
			return "", err
		}
		w := strings.ToLower(strings.TrimSpace(l))
		for _, c := range words {
			if w == c {
				return c, nil
			}
		}
		if a, ok := refusal(l, true); ok && slices.Contains(refusals, a) {
			return a, nil
		}
		fmt.Fprintf(s.out, "Please type %s.\n", orList(choices))
	}
}

func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// open opens url with the configured or the system opener.
func (s *session) open(ctx context.Context, url string) error {
	if s.t.Opener != nil {
		return s.t.Opener(ctx, url)
	}
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	// No shell: the URL is one argument, and it starts with "http", so it
	// cannot be read as an option. The opener's output is not ours to show.
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() //nolint:errcheck // the browser outlives us; nothing to report
	return nil
}
