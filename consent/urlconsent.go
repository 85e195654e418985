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

// wordContinue is typed (or Enter pressed) once the page is finished.
const wordContinue = "continue"

// elicitURL implements mcpclient.Handlers.ElicitURL.
func (s *session) elicitURL(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	rep, err := InspectURL(p.URL)
	if err != nil {
		// Never shown as a link; the client's refusal is final, so the
		// server hears decline rather than waiting for a retry.
		writeAsker(s.out, who, "The server asked you to open a URL this client refuses to offer.")
		fmt.Fprintf(s.out, "  Message:  %s\n  Refused:  %s\n  Answered decline.\n", indent(p.Message, "            "), clean(err.Error()))
		return &mcp.ElicitResult{Action: mcp.ActionDecline}, nil
	}
	if s.asked[key] == rep.Raw {
		fmt.Fprintf(s.out, "\nThe server is still waiting: it has not seen the page finished yet.\n")
	}
	s.asked[key] = rep.Raw
	if err := RenderURL(s.out, who, p.Message, rep, s.ansi); err != nil {
		return nil, err
	}

	var action string
	if s.t.Interactive {
		action, err = s.huhChoice(ctx, "Do you want to open this page?", []huh.Option[string]{
			huh.NewOption("Accept — I agree to open this page", mcp.ActionAccept),
			huh.NewOption("Decline — I refuse", mcp.ActionDecline),
			huh.NewOption("Cancel — not now", mcp.ActionCancel),
		})
	} else {
		action, err = s.choose(ctx, "Type accept to consent to opening this page, "+escDecline+" to refuse, or "+escCancel+" to dismiss:",
			[]string{mcp.ActionAccept}, []string{mcp.ActionDecline, mcp.ActionCancel}, mcp.ActionCancel)
	}
	if err != nil {
		return nil, err
	}
	if action != mcp.ActionAccept {
		return &mcp.ElicitResult{Action: action}, nil
	}

	// Consent given: now, and only now, the page may be opened.
	s.openOrShow(ctx, rep.URL, "Open this URL in your browser yourself:")

	// Accept means consent, not completion: let the user say when the page
	// is done so the retry is not sent too early (ELI-U-C-02).
	if s.t.Interactive {
		action, err = s.huhChoice(ctx, "When you have finished on the page:", []huh.Option[string]{
			huh.NewOption("Continue — I have finished on the page", mcp.ActionAccept),
			huh.NewOption("Cancel — stop here", mcp.ActionCancel),
		})
	} else {
		action, err = s.finished(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ElicitResult{Action: action}, nil
}

// finished waits, in line mode, for the user to say the page is done:
// Enter (or continue) is accept; :cancel cancels; end of input cancels,
// never accepts; anything else is asked again.
func (s *session) finished(ctx context.Context) (string, error) {
	for {
		l, err := s.prompt(ctx, "When you have finished on the page, press Enter to continue (or type "+escCancel+" to stop): ")
		switch {
		case errors.Is(err, io.EOF):
			fmt.Fprintln(s.out)
			return mcp.ActionCancel, nil
		case err != nil:
			return "", err
		}
		if w := strings.ToLower(strings.TrimSpace(l)); w == "" || w == wordContinue {
			return mcp.ActionAccept, nil
		}
		if a, ok := refusal(l, true); ok && a == mcp.ActionCancel {
			return a, nil
		}
		fmt.Fprintf(s.out, "Press Enter once you have finished on the page, or type %s to stop.\n", escCancel)
	}
}
