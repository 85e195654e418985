package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-elicit/elicit/consent"
	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpclient/oauth"
)

// host runs one command against one server.
type host struct {
	opts   *options
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	term    *consent.Terminal // made on first use (terminal)
	auth    *oauth.Authorizer // made on first use (authorizer)
	closers []func() error    // run at the end (close)
	// view, when set (call), is told of progress and of the task a call
	// became, and gets the terminal back before a sign-in prompt.
	view *waitView
}

// client makes the MCP client; handlers nil declares no client
// capabilities (tools/list needs none). With a command, it launches the
// server (its log goes to stderr, cleaned like every other print) and
// learns its era; h.close stops it. Otherwise, without --token or
// --no-login it signs in when the server asks (login.go). With h.view
// set, requests carry a progressToken and the view hears of progress and
// tasks.
func (h *host) client(ctx context.Context, handlers *mcpclient.Handlers) (*mcpclient.Client, error) {
	if h.opts.command != nil {
		cmd := exec.Command(h.opts.command[0], h.opts.command[1:]...)
		cmd.Stderr = termtext.Writer(h.stderr)
		c, err := mcpclient.NewCommand(ctx, cmd, h.clientOptions(handlers, nil))
		if err != nil {
			return nil, err
		}
		h.closers = append(h.closers, c.Close)
		return c, nil
	}
	if h.opts.token != "" || h.opts.noLogin {
		return h.newClient(handlers, nil), nil
	}
	var c *mcpclient.Client
	a, err := h.authorizer(func() mcpclient.Asker { return c.Asker() })
	if err != nil {
		return nil, err
	}
	c = h.newClient(handlers, a)
	return c, nil
}

// newClient makes the HTTP MCP client with a (nil for none) or --token.
func (h *host) newClient(handlers *mcpclient.Handlers, a *oauth.Authorizer) *mcpclient.Client {
	return mcpclient.New(h.opts.url, h.clientOptions(handlers, a))
}

// clientOptions are the MCP client's options, with a (nil for none) or
// --token. The tasks extension is declared: a tool may run as a task,
// which the client follows (and h.view shows).
func (h *host) clientOptions(handlers *mcpclient.Handlers, a *oauth.Authorizer) *mcpclient.Options {
	var authz mcpclient.Authorizer
	if a != nil {
		authz = a
	}
	o := &mcpclient.Options{
		// No overall timeout: a call waits for the user. Dialing and
		// response headers are bounded so a dead server is reported.
		HTTPClient: &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 2 * time.Minute,
		}},
		Token:      h.opts.token,
		Authorizer: authz,
		ClientInfo: mcp.Implementation{Name: "elicit", Version: version},
		Handlers:   handlers,
		Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil},
		Logger:     stderrLogger(h.stderr),
	}
	if h.view != nil {
		o.OnProgress, o.OnTaskUpdate = h.view.onProgress, h.view.onTask
	}
	return o
}

// stderrLogger writes the client's notes about server oddities (a tool
// dropped for bad x-mcp-header annotations, a request on a response
// stream) to w, without timestamps; the server's words in them are
// cleaned like every other print.
func stderrLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(termtext.Writer(w), &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

// tools lists the server's tools: name, title and the first line of the
// description; --json prints {"tools": [...]}, every page of tools/list.
func (h *host) tools(ctx context.Context) error {
	c, err := h.client(ctx, nil)
	if err != nil {
		return err
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	if h.opts.json {
		return printJSON(h.stdout, struct {
			Tools []*mcp.Tool `json:"tools"`
		}{tools})
	}
	for _, t := range tools {
		line := t.Name
		if t.Title != "" {
			line += " — " + t.Title
		}
		fmt.Fprintln(h.stdout, termtext.Line(line))
		if d, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n"); d != "" {
			fmt.Fprintf(h.stdout, "    %s\n", termtext.Line(d))
		}
	}
	return nil
}

// call calls one tool with the terminal answering every input request,
// then prints the result's text (or, with --json, the raw result).
func (h *host) call(ctx context.Context) error {
	// With --json, stdout carries the result only; the questions go to
	// stderr.
	term := h.terminal()
	out := h.promptOut()
	for _, p := range h.opts.roots {
		r, err := consent.RootFromPath(p)
		if err != nil {
			return fmt.Errorf("%w: --root: %w", errUsage, err)
		}
		term.Roots = append(term.Roots, r)
	}
	// While the call waits with nothing to ask (a task at work; a retry
	// that accepted a URL-mode step, held until the page is finished),
	// the view says so and lets Esc or Ctrl-C stop the wait instead of
	// ending the program.
	ctx, page := mcpclient.WithPageWait(ctx)
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	h.view = h.newWaitView(out, term, page, abort)
	defer h.view.pause()
	hook := h.view.interrupt
	interrupt.Store(&hook)
	defer interrupt.Store(nil)
	c, err := h.client(ctx, pauseFirst(term.Handlers(), h.view.pause))
	if err != nil {
		return err
	}
	args, err := h.callArgs(ctx, c)
	if err != nil {
		return err
	}
	res, err := h.callTool(ctx, c, args)
	h.view.pause()
	if errors.Is(context.Cause(ctx), errCancelledByUser) && !errors.Is(err, errQuit) {
		fmt.Fprintln(out, "Cancelled.")
		return errCancelledByUser
	}
	if err != nil {
		return err
	}
	if h.opts.json {
		if err := printJSON(h.stdout, res); err != nil {
			return err
		}
	} else {
		printContent(h.stdout, res)
	}
	if res.IsError {
		return &toolError{}
	}
	return nil
}

// newWaitView makes the call's wait view on out: one updating line and
// Esc in interactive mode; lines and Ctrl-C only otherwise.
func (h *host) newWaitView(out io.Writer, term *consent.Terminal, page *mcpclient.PageWait, abort context.CancelCauseFunc) *waitView {
	v := &waitView{out: out, page: page, abort: abort, quit: make(chan struct{}), cols: func() int { return 0 }}
	if term.Interactive {
		v.tty, v.esc = true, newEscWatch(h.stdin)
		v.cols = func() int { return columns(out) }
	}
	return v
}

// callArgs builds the tool's arguments; the input schema decides how
// --arg values are typed, so with --arg the tool is looked up.
func (h *host) callArgs(ctx context.Context, c *mcpclient.Client) (map[string]any, error) {
	var schema json.RawMessage
	if len(h.opts.args) > 0 {
		tools, err := c.ListTools(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if t.Name == h.opts.tool {
				schema = t.InputSchema
			}
		}
	}
	return buildArgs(h.opts, schema)
}

// errQuit: a second Ctrl-C while the server was being told of a
// cancelled task; elicit stops without waiting for its answer.
var errQuit = fmt.Errorf("%w: quit before the server acknowledged the cancel", context.Canceled)

// callTool calls the tool; a second Ctrl-C after a task was cancelled
// (the view's quit) returns errQuit at once, without waiting for the
// client to finish telling the server, in a *mcpclient.TaskError: the
// task may still be running.
func (h *host) callTool(ctx context.Context, c *mcpclient.Client, args map[string]any) (*mcp.CallToolResult, error) {
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.CallTool(ctx, h.opts.tool, args)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-h.view.quit:
		return nil, &mcpclient.TaskError{Tool: h.opts.tool, TaskID: h.view.taskID(), Err: errQuit}
	}
}

// waitingText is shown while the server holds a retry for a page.
const waitingText = "Waiting for you to finish in the browser…"

// printContent prints text blocks and names the others; with no content
// at all, the structured content as JSON. Server text goes through
// termtext: escape sequences in a result must not be able to redraw the
// terminal (--json gives the exact values).
func printContent(w io.Writer, res *mcp.CallToolResult) {
	safe := termtext.Line
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			fmt.Fprintln(w, termtext.Block(c.Text))
		case "image", "audio":
			fmt.Fprintf(w, "[%s, %s, %d bytes of base64: use --json to get it]\n", safe(c.Type), safe(c.MimeType), len(c.Data))
		case "resource_link":
			fmt.Fprintf(w, "[link %s %s]\n", safe(c.Name), safe(c.URI))
		case "resource":
			if c.Resource != nil && c.Resource.Text != "" {
				fmt.Fprintln(w, termtext.Block(c.Resource.Text))
			} else if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s: use --json to get it]\n", safe(c.Resource.URI))
			}
		default:
			fmt.Fprintf(w, "[%s content: use --json to get it]\n", safe(c.Type))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		_ = printJSON(w, res.StructuredContent)
	}
}

// explain turns a failed call into one clear sentence for the user. It
// may quote the server's own words (messages, versions, capability names,
// a certificate's names): the caller cleans the sentence when it prints it.
func explain(err error, endpoint string, hadToken bool) string {
	var (
		missing  *mcpclient.MissingCapabilityError
		version  *mcpclient.UnsupportedVersionError
		conn     *mcpclient.ConnectionError
		authErr  *mcpclient.AuthError
		notMCP   *mcpclient.NotMCPError
		protoErr *mcpclient.ProtocolError
		rpc      *mcpclient.RPCError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, consent.ErrDeclined), errors.Is(err, consent.ErrRefusedRequest):
		return fmt.Sprintf("%s; the call was not retried", err)
	case errors.As(err, &missing):
		return missingExplained(missing)
	case errors.As(err, &version):
		return fmt.Sprintf("the server at %s does not speak MCP %s: it serves %s", endpoint, mcp.ProtocolVersion, orNone(version.Supported))
	case errors.As(err, &conn):
		return connExplained(err, conn, endpoint)
	case errors.As(err, &authErr) && authErr.Err != nil:
		return signInExplained(authErr, endpoint)
	case errors.As(err, &authErr):
		return refusedExplained(authErr, endpoint, hadToken)
	case errors.As(err, &notMCP), errors.As(err, &protoErr):
		return strings.TrimPrefix(err.Error(), "mcpclient: ")
	case errors.Is(err, mcpclient.ErrRoundLimit), errors.Is(err, mcpclient.ErrStateOnlyLimit):
		return strings.TrimPrefix(err.Error(), "mcpclient: ") + "; the call was abandoned"
	case errors.As(err, &rpc):
		// RPCError.Error clips the server's message and strips control
		// characters.
		return strings.TrimPrefix(rpc.Error(), "mcpclient: ")
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return fmt.Sprintf("the MCP server at %s did not answer in time: %v", endpoint, err)
	}
	return err.Error()
}

// taskExplained: elicit stopped following the call's task without
// learning its end; it says which task, why, and what that means.
func taskExplained(te *mcpclient.TaskError, endpoint string, hadToken bool) string {
	why := "you quit before the server acknowledged the cancel"
	if !errors.Is(te.Err, errQuit) {
		why = explain(te.Err, endpoint, hadToken)
	}
	// The explanation may end a sentence of its own ("Is it running?").
	if !strings.HasSuffix(why, "?") && !strings.HasSuffix(why, ".") {
		why += "."
	}
	return fmt.Sprintf("stopped following task %s (%s): %s The task may still be running on the server and ends by itself "+
		"(when its work is done, or its time to live runs out); calling again starts another task", termtext.Clip(te.TaskID, 64), te.Tool, why)
}

// missingExplained: the server needs a client capability this client
// did not declare.
func missingExplained(missing *mcpclient.MissingCapabilityError) string {
	need, _ := json.Marshal(missing.RequiredCapabilities)
	msg := fmt.Sprintf("the server refused the call: it needs the client capability %s, which this client did not declare", need)
	if missing.RequiredCapabilities.Roots != nil {
		msg += "; pass --root PATH to offer a folder"
	}
	return msg
}

// connExplained: the server could not be reached, or the command serving
// it could not be used.
func connExplained(err error, conn *mcpclient.ConnectionError, endpoint string) string {
	switch {
	case strings.HasPrefix(endpoint, "the command "):
		return fmt.Sprintf("cannot use the MCP server started by %s: %v", endpoint, conn.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot reach the MCP server at %s: connection refused. Is it running?", endpoint)
	}
	return fmt.Sprintf("cannot reach the MCP server at %s: %v", endpoint, conn.Err)
}

// refusedExplained: the server answered HTTP 401 or 403 and no sign-in
// was attempted.
func refusedExplained(authErr *mcpclient.AuthError, endpoint string, hadToken bool) string {
	switch {
	case authErr.StatusCode == http.StatusForbidden:
		return fmt.Sprintf("the server at %s refused the request (HTTP 403): the token is not allowed to do this", endpoint)
	case hadToken:
		return fmt.Sprintf("the server at %s rejected the token (HTTP 401)", endpoint)
	}
	return fmt.Sprintf("the server at %s requires authorization (HTTP 401): sign in (leave out --no-login), or pass --token or set ELICIT_TOKEN", endpoint)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no version it names"
	}
	return strings.Join(list, ", ")
}
