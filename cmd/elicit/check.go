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
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/check"
	"github.com/mcp-elicit/elicit/internal/termtext"
)

const checkUsage = `usage:
  elicit check --url URL --tool NAME [--args JSON] [--token A | --login]
               [--other-token B] [--other-tool NAME] [--fetch-links P]
               [--allow-effects] [--json] [--timeout D]

Calls the tool until it asks for input, then tries what an attacker or a
careless client would: a missing mode, decline and cancel, a tampered or
replayed requestState, missing, extra and misplaced answers, answers that
break the form schema; and inspects what it asked: secrets in forms, unsafe
URL-mode links. Each case gets a verdict: pass, fail, not applicable, could
not test (with the reason) or not run.

By default the check completes nothing: it never sends an answer that could
finish the tool (an accept with form content), so a real draft stays unsent
and nothing is created. It declines, cancels, tampers and accepts URL-mode
requests (consent only). The two cases that need a completed accept
(form-invalid-answers, replay-completed) are "not run". The report says
what the check did and what it left behind, and the tool's annotations.

  --url URL           the server's MCP endpoint, with no user:password
                      (credentials go in --token)
  --tool NAME         a tool that asks for input when called
  --args JSON         the tool arguments as one JSON object (default {})
  --token A           bearer token of the user to act as (default $ELICIT_TOKEN)
  --login             act as the user signed in (OAuth) as elicit call does:
                      the cached sign-in, or a new one when the server asks
                      (the prompts go to stderr); not with --token
  --client-id ID      with --login: a pre-registered client id, as for
                      elicit call
  --other-token B     a second user's token, to replay A's state as B
                      (default $ELICIT_OTHER_TOKEN)
  --other-tool NAME   the tool to replay the state against (default: one the
                      server marks read-only or non-destructive; no other
                      tool is ever called); it must be listed, and is called
                      with {} or, when it requires arguments, with --args
  --fetch-links P     which URL-mode links to open for url-no-login: never,
                      safe (default: on the endpoint's origin, or https links
                      that pass url-safe and are not on an internal or
                      special-purpose address), or any
  --allow-effects     let the check complete the tool, many times over (each
                      time with its effect: a draft prepared, a report sent);
                      only against test data
  --json              print the report as JSON; when there is no report (a
                      usage error too), a JSON error object
                      {"error":{"kind":K,"message":M}}, K "usage" for exit 2
  --timeout D         give up after D, more than 0 (default 5m)

Exit status:
  0  no case failed and at least one passed
  1  a case failed
  2  usage error
  3  the check could not run (server unreachable, token refused, not an
     MCP endpoint, tools/list failed, tool or other tool not listed,
     sign-in failed, interrupted, timed out) or tested nothing (every
     case not applicable or could not test)
`

// runCheck is "elicit check"; it returns the exit status.
func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &checkCmd{cfg: check.Config{Token: os.Getenv("ELICIT_TOKEN"), OtherToken: os.Getenv("ELICIT_OTHER_TOKEN")},
		timeout: 5 * time.Minute, stdout: stdout, stderr: stderr}
	if code, ok := c.parse(args); !ok {
		return code
	}
	c.cfg.Logger = stderrLogger(stderr)
	// A held URL-mode retry can keep the check quiet for a minute each.
	c.cfg.Progress = func(msg string) { fmt.Fprintf(stderr, "elicit check: %s\n", msg) }
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.login {
		tok, err := checkSignIn(ctx, c.cfg.URL, c.clientID, stdin, stderr)
		if err != nil {
			return c.fail(kindSignInFailed, explain(err, c.cfg.Redact(c.cfg.URL), false))
		}
		if tok == "" {
			fmt.Fprintf(stderr, "elicit check: the server did not ask to sign in; checking without a token\n")
		}
		c.cfg.Token = tok
	}
	rep, err := check.Run(ctx, c.cfg)
	if err != nil {
		kind, msg := checkError(err, &c.cfg)
		return c.fail(kind, msg)
	}
	return c.report(rep)
}

// checkCmd is one elicit check run: its configuration and where it writes.
type checkCmd struct {
	cfg                            check.Config
	argsJSON, fetchLinks, clientID string
	asJSON, login                  bool
	timeout                        time.Duration
	stdout, stderr                 io.Writer
}

// parse reads the flags into c and checks them; when it fails (ok false)
// it has written why, and code is the exit code.
func (c *checkCmd) parse(args []string) (code int, ok bool) {
	fs := flag.NewFlagSet("elicit check", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	// Usage goes to stdout for -h, to stderr after the flag package's error.
	fs.Usage = func() {}
	fs.StringVar(&c.cfg.URL, "url", "", "MCP endpoint URL")
	fs.StringVar(&c.cfg.Tool, "tool", "", "tool to check")
	fs.StringVar(&c.argsJSON, "args", "", "tool arguments as a JSON object")
	fs.StringVar(&c.cfg.Token, "token", c.cfg.Token, "bearer token")
	fs.StringVar(&c.cfg.OtherToken, "other-token", c.cfg.OtherToken, "a second user's bearer token")
	fs.BoolVar(&c.login, "login", false, "sign in as elicit call does")
	fs.StringVar(&c.clientID, "client-id", "", "pre-registered OAuth client id (with --login)")
	fs.StringVar(&c.cfg.OtherTool, "other-tool", "", "tool to replay the state against")
	fs.StringVar(&c.fetchLinks, "fetch-links", string(check.FetchSafe), "which URL-mode links to open: never, safe or any")
	fs.BoolVar(&c.cfg.AllowEffects, "allow-effects", false, "let the check complete the tool (its effect, many times)")
	fs.BoolVar(&c.asJSON, "json", false, "print the report as JSON")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "overall time limit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, checkUsage)
			return exitOK, false
		}
		fmt.Fprint(c.stderr, checkUsage)
		// The flag package printed the error; --json may come after the
		// bad flag, so it is looked for in args.
		if c.asJSON || jsonRequested(args) {
			writeJSONError(c.stdout, kindUsage, c.cfg.Redact(err.Error()))
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		return c.usage("unexpected arguments: %s", strings.Join(fs.Args(), " ")), false
	}
	if msg := c.problem(); msg != "" {
		return c.usage("%s", msg), false
	}
	c.cfg.FetchLinks = check.LinkPolicy(c.fetchLinks)
	if c.argsJSON != "" {
		c.cfg.Args = json.RawMessage(c.argsJSON)
	}
	return exitOK, true
}

// problem says what is wrong with the flags, "" when nothing is.
func (c *checkCmd) problem() string {
	cfg := &c.cfg
	switch {
	case cfg.URL == "":
		return "--url is required"
	case cfg.Tool == "":
		return "--tool is required"
	case cfg.OtherToken != "" && cfg.OtherToken == cfg.Token:
		return "--other-token must differ from --token"
	case cfg.HasUserinfo():
		// net/http would send it as HTTP Basic credentials.
		return fmt.Sprintf("--url %q carries a user name or password; MCP servers take a bearer token: put credentials in --token", cfg.Redact(cfg.URL))
	case c.timeout <= 0:
		return "--timeout must be more than 0, such as 5m"
	case c.login && cfg.Token != "":
		return "--login and --token (or $ELICIT_TOKEN) both say who to act as: give one"
	case c.clientID != "" && !c.login:
		return "--client-id is for --login"
	}
	switch check.LinkPolicy(c.fetchLinks) {
	case check.FetchNever, check.FetchSafe, check.FetchAny:
	default:
		return "--fetch-links must be never, safe or any"
	}
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("--url %q is not an http(s) URL such as http://127.0.0.1:3000/mcp", cfg.Redact(cfg.URL))
	}
	if c.argsJSON != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.argsJSON), &m); err != nil || m == nil {
			return "--args must be a JSON object"
		}
	}
	return ""
}

// usage reports a usage error (in JSON too with --json) and returns its exit code.
func (c *checkCmd) usage(format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(c.stderr, "elicit check: %s\n\n%s", termtext.Line(msg), checkUsage)
	if c.asJSON {
		writeJSONError(c.stdout, kindUsage, msg)
	}
	return exitUsage
}

// fail reports why no report could be made and returns exitFailed.
func (c *checkCmd) fail(kind, msg string) int {
	fmt.Fprintf(c.stderr, "elicit check: %s\n", termtext.Line(msg))
	if c.asJSON {
		writeJSONError(c.stdout, kind, msg)
	}
	return exitFailed
}

// report writes the report and returns the exit code it calls for: a
// failed case is exitToolError, and a run that tested nothing fails.
func (c *checkCmd) report(rep *check.Report) int {
	var err error
	if c.asJSON {
		err = rep.WriteJSON(c.stdout)
	} else {
		err = rep.WriteText(c.stdout)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "elicit check: %s\n", termtext.Line(err.Error()))
		return exitFailed
	}
	if rep.Failed() {
		return exitToolError
	}
	if !rep.Tested() {
		// A gate must not go green on a run that proved nothing (a bad
		// token, a tool that asked for no input).
		why := "the reasons are in the report; if the tool asked this user nothing, as for one already connected, check it as a fresh user with another --token"
		if rep.DiscoveryError != "" {
			why = "server/discover failed: the server does not speak MCP 2026-07-28 here"
		}
		fmt.Fprintf(c.stderr, "elicit check: nothing was tested: no case passed or failed (%s)\n", why)
		return exitFailed
	}
	return exitOK
}

// checkError returns the kind (a check.Kind constant, or kindFailed) and
// the message of Run's error, with the tokens and the URL's password
// redacted: a server may echo the Authorization header in its errors. The
// message may quote the server; it is cleaned where it is printed.
func checkError(err error, cfg *check.Config) (kind, msg string) {
	var se *check.StartError
	switch {
	case errors.As(err, &se) && se.Kind != check.KindUnreachable:
		kind, msg = se.Kind, se.Message
		if se.Kind == check.KindTokenRefused && cfg.Token == "" {
			msg += "; pass --token or set ELICIT_TOKEN"
		}
	case se != nil:
		kind, msg = se.Kind, explain(err, cfg.Redact(cfg.URL), cfg.Token != "")
	default:
		kind, msg = kindFailed, explain(err, cfg.Redact(cfg.URL), cfg.Token != "")
	}
	return kind, cfg.Redact(msg)
}

// jsonRequested reports whether args, which did not parse, ask for --json
// before any "--" terminator.
func jsonRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-json", "--json", "-json=true", "--json=true", "-json=1", "--json=1":
			return true
		}
	}
	return false
}

// Kinds of the JSON error object of elicit check --json that are not
// check.Kind constants. docs/elicit.md lists every kind the command can
// print; TestCheckErrorKindsDocumented keeps it so, and wants every kind
// passed to fail and writeJSONError named by a constant.
const (
	kindUsage        = "usage"          // exit 2: flags or arguments
	kindSignInFailed = "sign-in-failed" // --login could not sign in
	kindFailed       = "failed"         // any other error before the report
)

// writeJSONError prints {"error":{"kind":K,"message":M}} on w, so a
// --json consumer always gets one JSON document on stdout.
func writeJSONError(w io.Writer, kind, msg string) {
	var doc struct {
		Error struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
	}
	doc.Error.Kind, doc.Error.Message = kind, msg
	_ = termtext.WriteJSON(w, doc)
}
