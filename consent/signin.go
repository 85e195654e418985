package consent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// ErrSignInDeclined is returned (wrapped) by Terminal.SignIn when the user
// does not agree to sign in: the request that needed it
// fails.
var ErrSignInDeclined = errors.New("consent: the user declined to sign in")

// SignInRequest is an MCP authorization request to show the user
// (basic/authorization.mdx §Authorization Flow Steps): the server wants a
// token, and the authorization server's page is where the user gets it.
type SignInRequest struct {
	// URL is the authorization URL, shown in full.
	URL string
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// Resource is what the token is for (the MCP server's resource
	// identifier).
	Resource string
	// Scopes are the permissions asked for; empty when none are named.
	Scopes []string
	// RedirectURL is where the browser comes back (a loopback address of
	// this program).
	RedirectURL string
}

// RenderSignIn writes the consent screen of a sign-in the way RenderURL
// does for URL mode: which server asks (ELI-C-01), the authorization
// server and the permissions asked, the complete URL with its registrable
// domain highlighted (ANSI bold when ansi is true, [brackets] otherwise),
// the domain on its own line, and every warning InspectURL found, plus one
// when the page is not on the site of the endpoint that asks. Server text
// is cleaned of control and bidi characters. It returns the first write
// error.
func RenderSignIn(w io.Writer, who mcpclient.Asker, req *SignInRequest, rep *URLReport, ansi bool) error {
	ew := &errWriter{w: w}
	writeAsker(ew, who, "The server asks you to sign in (MCP authorization).")
	fmt.Fprintf(ew, "  Sign in at: %s (the server's authorization server)\n", clean(req.Issuer))
	scopes := "(none named)"
	if len(req.Scopes) > 0 {
		scopes = clean(strings.Join(req.Scopes, " "))
	}
	fmt.Fprintf(ew, "  For:        %s\n  Scopes:     %s\n", clean(req.Resource), scopes)
	fmt.Fprintf(ew, "  URL:        %s\n", rep.Highlight(marker(ansi)))
	fmt.Fprintf(ew, "  Domain:     %s\n", domainLine(rep))
	writeWarnings(ew, who, rep, "The sign-in page")
	fmt.Fprintf(ew, "  Nothing has been opened. Sign in only if you trust this page: it gets your account's consent.\n")
	return ew.err
}

// SignIn shows req (RenderSignIn) and asks whether to sign in there. Only
// after a yes is the page opened (with Opener when AllowOpen
// is set) or printed for the user to open; then it returns, and the
// caller waits for the browser to come back to req.RedirectURL. In line
// mode only yes and no are words (typed in full); no, :decline, :cancel,
// end of input, Esc or Ctrl-C is ErrSignInDeclined. A URL that InspectURL
// refuses is never shown as a link; that is ErrRefusedRequest. It shares
// the Terminal's input with Handlers, so prompts never overlap.
func (t *Terminal) SignIn(ctx context.Context, who mcpclient.Asker, req *SignInRequest) error {
	s := t.session()
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, err := InspectURL(req.URL)
	if err != nil {
		writeAsker(s.out, who, "The server asked you to sign in at a URL this client refuses to offer.")
		fmt.Fprintf(s.out, "  Refused:  %s\n", clean(err.Error()))
		return fmt.Errorf("%w: the sign-in URL: %v", ErrRefusedRequest, err)
	}
	if err := RenderSignIn(s.out, who, req, rep, s.ansi); err != nil {
		return err
	}
	var answer string
	if t.Interactive {
		answer, err = s.huhChoice(ctx, "Sign in at this page?", []huh.Option[string]{
			huh.NewOption("Yes — sign in at this page", "yes"),
			huh.NewOption("No — do not sign in", "no"),
		})
	} else {
		answer, err = s.choose(ctx, "Type yes to sign in at this page, or no to stop:", []string{"yes", "no"},
			[]string{mcp.ActionDecline, mcp.ActionCancel}, "no")
	}
	if err != nil {
		return err
	}
	if answer != "yes" {
		fmt.Fprintf(s.out, "Not signed in.\n")
		return ErrSignInDeclined
	}
	s.openOrShow(ctx, rep.URL, "Open this URL in your browser to sign in:")
	fmt.Fprintf(s.out, "Waiting for the browser to come back to %s (Ctrl-C to stop)…\n", clean(req.RedirectURL))
	return nil
}

// openOrShow opens url when AllowOpen is set and says so; otherwise, or
// when no browser opens, it prints show and the URL for the user to open.
// Call it only after the user's yes.
func (s *session) openOrShow(ctx context.Context, url, show string) {
	if s.t.AllowOpen {
		err := s.open(ctx, url)
		if err == nil {
			fmt.Fprintf(s.out, "Opened in your browser:\n  %s\n", url)
			return
		}
		fmt.Fprintf(s.out, "Could not open a browser (%s).\n", clean(err.Error()))
	}
	fmt.Fprintf(s.out, "%s\n  %s\n", show, url)
}
