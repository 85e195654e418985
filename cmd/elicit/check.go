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

Exit status: 0 no case failed and at least one passed; 1 a case failed;
2 usage error; 3 the check could not run (server unreachable, token
refused, not an MCP endpoint, tool or other tool not listed) or tested
nothing (every case not applicable or could not test).
`

// runCheck is "elicit check"; it returns the exit status.
func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg := check.Config{Token: os.Getenv("ELICIT_TOKEN"), OtherToken: os.Getenv("ELICIT_OTHER_TOKEN")}
	var argsJSON, fetchLinks, clientID string
	var asJSON, login bool
	timeout := 5 * time.Minute
	fs := flag.NewFlagSet("elicit check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Usage goes to stdout for -h, to stderr after the flag package's error.
	fs.Usage = func() {}
	fs.StringVar(&cfg.URL, "url", "", "MCP endpoint URL")
	fs.StringVar(&cfg.Tool, "tool", "", "tool to check")
	fs.StringVar(&argsJSON, "args", "", "tool arguments as a JSON object")
	fs.StringVar(&cfg.Token, "token", cfg.Token, "bearer token")
	fs.StringVar(&cfg.OtherToken, "other-token", cfg.OtherToken, "a second user's bearer token")
	fs.BoolVar(&login, "login", false, "sign in as elicit call does")
	fs.StringVar(&clientID, "client-id", "", "pre-registered OAuth client id (with --login)")
	fs.StringVar(&cfg.OtherTool, "other-tool", "", "tool to replay the state against")
	fs.StringVar(&fetchLinks, "fetch-links", string(check.FetchSafe), "which URL-mode links to open: never, safe or any")
	fs.BoolVar(&cfg.AllowEffects, "allow-effects", false, "let the check complete the tool (its effect, many times)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.DurationVar(&timeout, "timeout", timeout, "overall time limit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, checkUsage)
			return exitOK
		}
		fmt.Fprint(stderr, checkUsage)
		// The flag package printed the error; --json may come after the
		// bad flag, so it is looked for in args.
		if asJSON || jsonRequested(args) {
			writeJSONError(stdout, "usage", cfg.Redact(err.Error()))
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintf(stderr, "elicit check: %s\n\n%s", termtext.Line(msg), checkUsage)
		if asJSON {
			writeJSONError(stdout, "usage", msg)
		}
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case cfg.URL == "":
		return usageErr("--url is required")
	case cfg.Tool == "":
		return usageErr("--tool is required")
	case cfg.OtherToken != "" && cfg.OtherToken == cfg.Token:
		return usageErr("--other-token must differ from --token")
	case cfg.HasUserinfo():
		// net/http would send it as HTTP Basic credentials.
		return usageErr("--url %q carries a user name or password; MCP servers take a bearer token: put credentials in --token", cfg.Redact(cfg.URL))
	case timeout <= 0:
		return usageErr("--timeout must be more than 0, such as 5m")
	case login && cfg.Token != "":
		return usageErr("--login and --token (or $ELICIT_TOKEN) both say who to act as: give one")
	case clientID != "" && !login:
		return usageErr("--client-id is for --login")
	}
	switch p := check.LinkPolicy(fetchLinks); p {
	case check.FetchNever, check.FetchSafe, check.FetchAny:
		cfg.FetchLinks = p
	default:
		return usageErr("--fetch-links must be never, safe or any")
	}
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("--url %q is not an http(s) URL such as http://127.0.0.1:3000/mcp", cfg.Redact(cfg.URL))
	}
	if argsJSON != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(argsJSON), &m); err != nil || m == nil {
			return usageErr("--args must be a JSON object")
		}
		cfg.Args = json.RawMessage(argsJSON)
	}
	cfg.Logger = stderrLogger(stderr)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if login {
		tok, err := checkSignIn(ctx, cfg.URL, clientID, stdin, stderr)
		if err == nil && tok == "" {
			fmt.Fprintf(stderr, "elicit check: the server did not ask to sign in; checking without a token\n")
		}
		if err != nil {
			msg := explain(err, cfg.Redact(cfg.URL), false)
			fmt.Fprintf(stderr, "elicit check: %s\n", termtext.Line(msg))
			if asJSON {
				writeJSONError(stdout, "sign-in-failed", msg)
			}
			return exitFailed
		}
		cfg.Token = tok
	}
	rep, err := check.Run(ctx, cfg)
	if err != nil {
		kind, msg := checkError(err, &cfg)
		fmt.Fprintf(stderr, "elicit check: %s\n", termtext.Line(msg))
		if asJSON {
			writeJSONError(stdout, kind, msg)
		}
		return exitFailed
	}
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "elicit check: %s\n", termtext.Line(err.Error()))
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
		fmt.Fprintf(stderr, "elicit check: nothing was tested: no case passed or failed (%s)\n", why)
		return exitFailed
	}
	return exitOK
}

// checkError returns the kind (a check.Kind constant, or "failed") and
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
		kind, msg = "failed", explain(err, cfg.Redact(cfg.URL), cfg.Token != "")
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
