// Command elicit is a terminal MCP host for revision 2026-07-28: it lists
// and calls a server's tools over Streamable HTTP, or over the standard
// streams of a server it launches (--command, or the command after --;
// stdio), and puts the user in
// charge of everything the server asks on the way (elicitation in form and
// URL mode, and the deprecated sampling and roots), through package
// consent.
//
//	elicit tools --url U [--token T | --no-login] [--client-id ID] [--json] [--open] [--plain]
//	elicit call TOOL --url U [--arg k=v]... [--args JSON] [--token T | --no-login] [--client-id ID] [--json] [--root PATH]... [--open] [--plain]
//	elicit tools|call ... --command "PROGRAM ARGS" | -- PROGRAM ARGS...   (a local server on stdio)
//	elicit login --url U [--client-id ID] [--open] [--plain]
//	elicit logout --url U
//	elicit check --url U --tool NAME [--args JSON] [--token A | --login] [--other-token B] [--other-tool NAME] [--fetch-links P] [--allow-effects] [--json] [--timeout D]
//
// Without --token, a server that answers 401 is signed in to with OAuth
// 2.1 (MCP authorization, package mcpclient/oauth): the authorization URL
// is shown like a URL-mode link and opened only after a yes, the browser
// comes back to a loopback redirect, and the token is cached per server
// (a 0600 file in $ELICIT_CONFIG_DIR/oauth, else in elicit/oauth under the
// user's configuration directory) until elicit logout.
//
// check tests the server's elicitation safety (package check), completing
// nothing unless --allow-effects is given; its exit
// status is 0 when no case failed and one passed, 1 when one failed, 2 for
// usage errors and 3 when the check could not start (unreachable, token
// refused, not MCP, no such tool) or tested nothing.
//
// The final result's text content is printed; --json prints the whole
// result instead, alone on stdout, and the questions go to stderr. Every
// string from the server or its certificate, errors included, is printed
// through one sanitizer (internal/termtext): control, bidi and invisible
// characters are shown as escapes, in JSON as \u escapes. The token may also come from $ELICIT_TOKEN, so it does
// not show in the process list.
//
// Exit status: 0 success; 1 the tool reported an error (isError); 2 usage
// error; 3 the call failed (server down, protocol or version error, a
// capability the server needs and this client did not declare, unknown
// tool or arguments refused, a refused or declined sampling or roots
// request) or was interrupted; 4 you cancelled the task the call became
// (Esc or Ctrl-C; the server was sent tasks/cancel, and "Cancelled."
// printed); 5 elicit stopped following the task without learning its end
// (the server unreachable past mcpclient.TaskRetryWindow, an error to a
// poll, a second Ctrl-C): its id is printed, it may still be running,
// and calling again starts another task.
//
// A tool may run as a task of the tasks extension (io.modelcontextprotocol/tasks,
// which call declares): elicit follows it, shows its id and then its
// status and statusMessage (one updating line in interactive mode, a
// line per change otherwise; with --json on stderr; escaped and cut to
// maxStatusColumns in every mode), and answers its questions like any
// others. While it works, Esc (interactive mode), Ctrl-C, SIGTERM or
// SIGHUP (the terminal closed) cancels it; at one of its questions in
// interactive mode, Esc and Ctrl-C dismiss the question, as at any form.
// A second signal while the server is being told quits at once (exit 5).
//
// When stdin and stdout are terminals, questions are terminal forms;
// otherwise (or with --plain) they are numbered lines on stdout, answered
// line by line on stdin, with choices typed as words.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/mcp-elicit/elicit/check"
	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

// Exit statuses.
const (
	exitOK        = 0
	exitToolError = 1
	exitUsage     = 2
	exitFailed    = 3
	exitCancelled = 4
	// exitTaskUnknown: elicit stopped following the call's task without
	// learning its end (mcpclient.TaskError); the task may still run.
	exitTaskUnknown = 5
)

func main() {
	ctx, stop := interruptContext()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interrupt, when set, is offered each Ctrl-C (SIGINT), SIGTERM and
// SIGHUP (the terminal was closed) first; it returns true when it took
// care of it (a call's wait for a page or a task was cancelled, see
// waitView.interrupt), and then the program goes on.
var interrupt atomic.Pointer[func() bool]

// interruptContext is signal.NotifyContext for SIGINT, SIGTERM and
// SIGHUP, except that a signal the interrupt hook takes does not end the
// context: so closing the terminal or a kill cancels a task as Ctrl-C
// does, rather than leaving it to run on the server.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for range sigs {
			if f := interrupt.Load(); f != nil && (*f)() {
				continue
			}
			cancel()
			return
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

const usage = `usage:
  elicit tools --url URL [--token T | --no-login] [--json] [--open] [--plain]
  elicit call TOOL --url URL [--arg k=v]... [--args JSON] [--token T | --no-login]
              [--json] [--root PATH]... [--open] [--plain]
  elicit tools|call ... --command "PROGRAM ARGS"   (a local server on stdio)
  elicit tools|call ... -- PROGRAM ARGS...
  elicit login --url URL [--client-id ID] [--open] [--plain]
  elicit logout --url URL
  elicit check --url URL --tool NAME [--args JSON] [--token A | --login]
              [--other-token B] [--other-tool NAME] [--fetch-links P]
              [--allow-effects] [--json] [--timeout D]

  --url URL     the server's MCP endpoint, e.g. http://127.0.0.1:3000/mcp
  --command C   launch the server C (a program and its arguments, split at
                spaces; after -- instead, each argument as given) and talk
                to it over its standard input and output; its log (stderr)
                is shown here. It is stopped when elicit ends
  --token T     bearer token (default $ELICIT_TOKEN); without one, a server
                that answers 401 is signed in to (OAuth): the sign-in page
                is shown, and opened only after you say yes; the token is
                cached per server until elicit logout
  --no-login    never sign in: a 401 is an error
  --client-id ID  a client id registered at the server's authorization
                server (its secret in $ELICIT_CLIENT_SECRET); without one
                elicit registers itself where the server allows it
  --json        print the raw result as JSON (questions then go to stderr)
  --arg k=v     one tool argument; a string unless the tool's input schema
                says number, integer, boolean, array or object (then v is
                JSON). Repeatable; overrides --args
  --args JSON   the tool arguments as one JSON object
  --root PATH   a folder the server may be told about (roots, deprecated);
                asked before sharing. Repeatable
  --open        open an accepted URL or sign-in page in the system browser
                (xdg-open/open); without it the URL is printed for you to open
  --plain       line mode even on a terminal

Tasks: call declares the tasks extension (io.modelcontextprotocol/tasks),
so a server may run the call as a task. elicit then prints the task's id
and a status line: the task's status and the server's message, escaped
like all server text and cut to 200 columns. On a terminal the line is
updated in place (cut to its width); with --plain or off a terminal each
change is a line; with --json the lines go to stderr. The task's questions
are asked as in any call. While the task works, Esc (on a terminal,
without --plain), Ctrl-C, SIGTERM or SIGHUP (the terminal was closed)
cancels it: elicit sends tasks/cancel, prints "Cancelled." once the
server acknowledged, and exits 4; a second one meanwhile quits at once
(exit 5). At one of the task's questions on a terminal, Esc or Ctrl-C
dismisses that question, as at any form (the server decides what
follows); in line mode (--plain, or off a terminal) Ctrl-C cancels the
task there too, and :cancel dismisses the question. If the server stops
answering (errors or unreachable for over 2 minutes), elicit stops
following the task, prints its id and exits 5: the task may still be
running and ends by itself; calling again starts another one.

Exit status (elicit check has its own: elicit check -h):
  0  success
  1  the tool reported an error (isError); its text was printed
  2  usage error
  3  the call failed (server down or not MCP, another protocol version,
     HTTP 401/403 or a failed sign-in, a client capability the server
     needs, unknown tool or arguments refused, a refused or declined
     sampling or roots request) or was interrupted by a Ctrl-C that had
     no task or wait to cancel
  4  you cancelled the task the call became (Esc, Ctrl-C, SIGTERM, SIGHUP)
  5  elicit stopped following the call's task without learning its end
     (the server failed or was unreachable too long, or a second Ctrl-C):
     the task, whose id was printed, may still be running on the server
     and ends by itself; calling again starts another task
`

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// A launched server's log and the client's notes reach stderr from
	// their own goroutines; an *os.File takes concurrent writes (and stays
	// one, for the terminal check of --json's prompts).
	if _, ok := stderr.(*os.File); !ok {
		stderr = &lockedWriter{w: stderr}
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage) // asked for: stdout, so it pipes to a pager
		return exitOK
	}
	cmd, rest := args[0], args[1:]
	if cmd == "check" {
		return runCheck(ctx, rest, stdin, stdout, stderr)
	}
	opts, err := parseFlags(cmd, rest)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "elicit: %s\n\n%s", termtext.Line(err.Error()), usage)
		return exitUsage
	}
	h := &host{opts: opts, stdin: stdin, stdout: stdout, stderr: stderr}
	defer h.close()
	switch cmd {
	case "tools":
		err = h.tools(ctx)
	case "call":
		err = h.call(ctx)
	case "login":
		err = h.login(ctx)
	case "logout":
		err = h.logout(ctx)
	}
	var (
		toolErr *toolError
		taskErr *mcpclient.TaskError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &toolErr):
		return exitToolError
	case errors.As(err, &taskErr):
		fmt.Fprintf(stderr, "elicit: %s\n", termtext.Line(taskExplained(taskErr, opts.server(), opts.token != "")))
		return exitTaskUnknown
	case errors.Is(err, errCancelledByUser):
		return exitCancelled // call printed "Cancelled."
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "elicit: %s\n", termtext.Line(err.Error()))
		return exitUsage
	}
	// The print boundary: whatever the error chain carries (a server's
	// message or version list, a certificate's DNS names in an x509 error)
	// is cleaned here, once.
	fmt.Fprintf(stderr, "elicit: %s\n", termtext.Line(explain(err, opts.server(), opts.token != "")))
	return exitFailed
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// errUsage marks errors in what the user asked for (bad --arg, …).
var errUsage = errors.New("usage")

// toolError is a complete result with isError: its text was printed.
type toolError struct{}

func (*toolError) Error() string { return "the tool reported an error" }

// options are the parsed command line.
type options struct {
	cmd       string
	tool      string
	url       string
	command   []string // the server to launch (--command, or after --)
	token     string
	json      bool
	args      []string // k=v
	argsJSON  string
	roots     []string
	open      bool
	plain     bool
	argsGiven bool
	clientID  string
	noLogin   bool
}

// server names the server for messages: its URL, or the command.
func (o *options) server() string {
	if o.command != nil {
		return "the command " + strings.Join(o.command, " ")
	}
	return o.url
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parseFlags parses a subcommand's flags; flags and the TOOL operand may
// come in any order.
func parseFlags(cmd string, args []string) (*options, error) {
	o := &options{cmd: cmd, token: os.Getenv("ELICIT_TOKEN")}
	fs := flag.NewFlagSet("elicit "+cmd, flag.ContinueOnError)
	// The caller prints the error and the usage: the usage to stdout for
	// -h, both to stderr after a bad flag.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.url, "url", "", "MCP endpoint URL")
	var command string
	if cmd == "tools" || cmd == "call" {
		fs.StringVar(&command, "command", "", "the server to launch (stdio)")
		fs.StringVar(&o.token, "token", o.token, "bearer token")
		fs.BoolVar(&o.json, "json", false, "print the raw result")
		fs.BoolVar(&o.noLogin, "no-login", false, "never sign in")
	}
	if cmd != "logout" {
		fs.StringVar(&o.clientID, "client-id", "", "pre-registered OAuth client id")
		fs.BoolVar(&o.open, "open", false, "open accepted URLs in the system browser")
		fs.BoolVar(&o.plain, "plain", false, "line mode even on a terminal")
	}
	switch cmd {
	case "tools", "login", "logout":
	case "call":
		fs.Var((*listFlag)(&o.args), "arg", "argument k=v (repeatable)")
		fs.StringVar(&o.argsJSON, "args", "", "arguments as a JSON object")
		fs.Var((*listFlag)(&o.roots), "root", "a folder to offer as a root (repeatable)")
	default:
		return nil, fmt.Errorf("unknown command %q", cmd)
	}
	args, after, err := splitServerCommand(args)
	if err != nil {
		return nil, err
	}
	operands, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	switch {
	case cmd == "call" && len(operands) != 1:
		return nil, errors.New("call needs exactly one TOOL name")
	case cmd != "call" && len(operands) != 0:
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(operands, " "))
	}
	if err := o.setServer(command, after); err != nil {
		return nil, err
	}
	if cmd == "call" {
		o.tool = operands[0]
	}
	return o, nil
}

// splitServerCommand splits args at the first --: everything after it is
// the server's command line.
func splitServerCommand(args []string) (before, after []string, err error) {
	for i, a := range args {
		if a == "--" {
			if len(args[i+1:]) == 0 {
				return nil, nil, errors.New("-- must be followed by the server's command")
			}
			return args[:i], args[i+1:], nil
		}
	}
	return args, nil, nil
}

// setServer sets the server to talk to: the command line of --command or
// after --, or --url (an http(s) URL), exactly one of them.
func (o *options) setServer(command string, after []string) error {
	switch {
	case command != "" && after != nil:
		return errors.New("give the server's command once: --command or after --")
	case command != "":
		if o.command = strings.Fields(command); len(o.command) == 0 {
			return errors.New("--command is empty")
		}
	case after != nil && o.cmd != "tools" && o.cmd != "call":
		return fmt.Errorf("%s takes no server command", o.cmd)
	case after != nil:
		o.command = after
	}
	switch {
	case o.url != "" && o.command != nil:
		return errors.New("--url and a command exclude each other: one server at a time")
	case o.command != nil:
		return nil
	case o.url == "":
		if o.cmd == "tools" || o.cmd == "call" {
			return errors.New("--url (or --command) is required")
		}
		return errors.New("--url is required")
	case o.noLogin && o.clientID != "":
		return errors.New("--client-id is for signing in, which --no-login forbids")
	}
	// A password in --url is never printed (check.Config.Redact masks it),
	// and never sent: net/http would send it as HTTP Basic credentials.
	cfg := &check.Config{URL: o.url}
	if cfg.HasUserinfo() {
		return fmt.Errorf("--url %q carries a user name or password; MCP servers take a bearer token: put credentials in --token", cfg.Redact(o.url))
	}
	if !isHTTPURL(o.url) {
		return fmt.Errorf("--url %q is not an http(s) URL such as http://127.0.0.1:3000/mcp", cfg.Redact(o.url))
	}
	return nil
}

// parseInterspersed parses args with fs, flags and operands in any
// order, and returns the operands.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return operands, nil
		}
		operands = append(operands, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// isHTTPURL reports whether s is an absolute http(s) URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// buildArgs merges --args and --arg into the tool arguments. A k=v value
// is a string unless the tool's input schema gives the property a
// non-string type; then v must be JSON of that type.
func buildArgs(o *options, inputSchema json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if o.argsJSON != "" {
		if err := json.Unmarshal([]byte(o.argsJSON), &args); err != nil || args == nil {
			return nil, fmt.Errorf("%w: --args must be a JSON object", errUsage)
		}
	}
	types := propertyTypes(inputSchema)
	for _, kv := range o.args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: --arg %q is not k=v", errUsage, kv)
		}
		switch t := types[k]; t {
		case "", "string":
			args[k] = v
		default:
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				return nil, fmt.Errorf("%w: --arg %s: the tool takes %s %s, and %q is not JSON", errUsage, k, article(t), t, v)
			}
			args[k] = x
		}
	}
	return args, nil
}

// propertyTypes reads the "type" of each top-level property of a JSON
// Schema; a type list or a missing type reads as "" (taken as a string).
func propertyTypes(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	out := map[string]string{}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	for name, p := range s.Properties {
		if t, ok := p.Type.(string); ok {
			out[name] = t
		}
	}
	return out
}

func article(t string) string {
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an"
	}
	return "a"
}

// printJSON writes v indented, its strings made safe for a terminal
// (termtext.JSON): control, bidi and other invisible characters are
// \u escapes, so the line reads as it is and decodes to the same values.
func printJSON(w io.Writer, v any) error { return termtext.WriteJSON(w, v) }

// sortedKeys returns m's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
