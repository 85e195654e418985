package consent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/huh"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// HumanModel is the model name of a sampling reply the user typed: no
// model is bundled with this client.
const HumanModel = "human"

// bytesPerToken estimates token counts: a typed reply longer than
// maxTokens*bytesPerToken is sent back for shortening (SAMP-C-05).
const bytesPerToken = 4

// sampling implements mcpclient.Handlers.Sampling (deprecated feature,
// client/sampling.mdx): review the request, then type a reply or decline
// (SAMP-C-04). A request without maxTokens is refused before asking.
func (s *session) sampling(ctx context.Context, who mcpclient.Asker, key string, p *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if p.MaxTokens <= 0 {
		writeAsker(s.out, who, "The server asked for a model reply (sampling) without maxTokens; refused.")
		return nil, fmt.Errorf("%w: sampling request %q has no maxTokens", ErrRefusedRequest, key)
	}
	writeAsker(s.out, who, "The server asks for a model reply (sampling, a deprecated feature).")
	fmt.Fprintf(s.out, "  Max tokens: %d\n", p.MaxTokens)
	if h := hints(p.ModelPreferences); h != "" {
		fmt.Fprintf(s.out, "  Model preferences (hints only, not followed): %s\n", h)
	}
	if p.Temperature != nil {
		fmt.Fprintf(s.out, "  Temperature (hint only): %s\n", strconv.FormatFloat(*p.Temperature, 'f', -1, 64))
	}
	if p.SystemPrompt != "" {
		fmt.Fprintf(s.out, "  System prompt: %s\n", indent(p.SystemPrompt, "    "))
	}
	fmt.Fprintf(s.out, "  Messages:\n")
	for _, m := range p.Messages {
		fmt.Fprintf(s.out, "    %s: %s\n", clean(m.Role), indent(describe(m.Content), "      "))
	}
	fmt.Fprintf(s.out, "  No model is bundled with this client: you may type the reply yourself, or decline.\n")

	limit := p.MaxTokens * bytesPerToken
	for {
		reply, action, err := s.typeReply(ctx)
		if err != nil || action != "" {
			if err == nil {
				err = fmt.Errorf("%w: sampling request %q", ErrDeclined, key)
			}
			return nil, err
		}
		if len(reply) > limit {
			fmt.Fprintf(s.out, "The reply is %d bytes; maxTokens %d allows about %d. Please shorten it.\n", len(reply), p.MaxTokens, limit)
			continue
		}
		text, _ := json.Marshal(mcp.TextContent(reply))
		return &mcp.CreateMessageResult{Role: "assistant", Content: text, Model: HumanModel, StopReason: "endTurn"}, nil
	}
}

// typeReply asks for the reply and its review; action is "decline" when
// the user refuses (end of input included).
func (s *session) typeReply(ctx context.Context) (reply, action string, err error) {
	if s.t.Interactive {
		first, err := s.huhChoice(ctx, "Reply to this request?", []huh.Option[string]{
			huh.NewOption("Reply — type the answer myself", "reply"),
			huh.NewOption("Decline — do not answer", mcp.ActionDecline),
		})
		if err != nil || first != "reply" {
			return "", mcp.ActionDecline, err
		}
		for {
			err := s.runHuh(ctx, huh.NewGroup(huh.NewText().Title("Your reply").Value(&reply)))
			if errors.Is(err, huh.ErrUserAborted) {
				return "", mcp.ActionDecline, nil
			}
			if err != nil {
				return "", "", err
			}
			fmt.Fprintf(s.out, "\nReview the reply:\n  %s\n", indent(reply, "  "))
			next, err := s.huhChoice(ctx, "Send this reply?", []huh.Option[string]{
				huh.NewOption("Send", "send"), huh.NewOption("Edit", wordEdit), huh.NewOption("Decline", mcp.ActionDecline),
			})
			if err != nil || next == "send" {
				return reply, "", err
			}
			if next != wordEdit {
				return "", mcp.ActionDecline, nil
			}
		}
	}
	w, err := s.choose(ctx, "Type reply to write the reply, or "+escDecline+" to refuse:", []string{"reply"},
		[]string{mcp.ActionDecline}, mcp.ActionDecline)
	if err != nil || w != "reply" {
		return "", mcp.ActionDecline, err
	}
	for {
		fmt.Fprintf(s.out, "Type the reply; end it with a line holding only a dot (.):\n")
		var lines []string
		for {
			l, err := s.readLine(ctx)
			if errors.Is(err, io.EOF) {
				return "", mcp.ActionDecline, nil
			}
			if err != nil {
				return "", "", err
			}
			if l == "." {
				break
			}
			lines = append(lines, l)
		}
		reply = strings.Join(lines, "\n")
		fmt.Fprintf(s.out, "\nReview the reply:\n  %s\n", indent(reply, "  "))
		next, err := s.choose(ctx, "Type send to return it, edit to write it again, or "+escDecline+" to refuse:",
			[]string{"send", wordEdit}, []string{mcp.ActionDecline}, mcp.ActionDecline)
		if err != nil || next == "send" {
			return reply, "", err
		}
		if next != wordEdit {
			return "", mcp.ActionDecline, nil
		}
	}
}

// hints shows model preferences as advisory text (SAMP-C-05).
func hints(mp *mcp.ModelPreferences) string {
	if mp == nil {
		return ""
	}
	var parts []string
	var names []string
	for _, h := range mp.Hints {
		if h.Name != "" {
			names = append(names, clean(h.Name))
		}
	}
	if names != nil {
		parts = append(parts, "models like "+strings.Join(names, ", "))
	}
	for _, pr := range []struct {
		name string
		v    *float64
	}{{"cost", mp.CostPriority}, {"speed", mp.SpeedPriority}, {"intelligence", mp.IntelligencePriority}} {
		if pr.v != nil {
			parts = append(parts, pr.name+" priority "+strconv.FormatFloat(*pr.v, 'f', -1, 64))
		}
	}
	return strings.Join(parts, "; ")
}

// describe shows one sampling content block: text as text, anything else
// by its kind and size (never decoded or opened).
func describe(c mcp.Content) string {
	switch c.Type {
	case "text":
		return c.Text
	case "image", "audio":
		return fmt.Sprintf("[%s, %s, %d bytes of base64]", c.Type, c.MimeType, len(c.Data))
	case "resource":
		if c.Resource != nil {
			return "[resource " + c.Resource.URI + "]"
		}
	}
	return "[" + c.Type + " content]"
}

// roots implements mcpclient.Handlers.Roots (deprecated feature,
// client/roots.mdx): only the host's roots, only after the user agrees
// (ROOTS-C-02, ROOTS-C-03).
func (s *session) roots(ctx context.Context, who mcpclient.Asker, key string) (*mcp.ListRootsResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	for _, r := range s.t.Roots {
		if u, err := url.Parse(r.URI); err != nil || u.Scheme != "file" {
			return nil, fmt.Errorf("%w: root %q is not a file:// URI", ErrRefusedRequest, r.URI)
		}
	}
	writeAsker(s.out, who, "The server asks which folders you work in (roots, a deprecated feature).")
	fmt.Fprintf(s.out, "  It would be told:\n")
	for _, r := range s.t.Roots {
		if r.Name != "" {
			fmt.Fprintf(s.out, "    %s (%s)\n", clean(r.URI), clean(r.Name))
		} else {
			fmt.Fprintf(s.out, "    %s\n", clean(r.URI))
		}
	}
	fmt.Fprintf(s.out, "  Roots are a hint to the server; they grant it no access.\n")
	var w string
	var err error
	if s.t.Interactive {
		w, err = s.huhChoice(ctx, "Share these folders?", []huh.Option[string]{
			huh.NewOption("Share", "share"), huh.NewOption("Decline", mcp.ActionDecline),
		})
	} else {
		w, err = s.choose(ctx, "Type share to tell the server these folders, or "+escDecline+" to refuse:",
			[]string{"share"}, []string{mcp.ActionDecline}, mcp.ActionDecline)
	}
	if err != nil {
		return nil, err
	}
	if w != "share" {
		return nil, fmt.Errorf("%w: roots request %q", ErrDeclined, key)
	}
	return &mcp.ListRootsResult{Roots: append([]mcp.Root(nil), s.t.Roots...)}, nil
}

// RootFromPath makes a root from a local directory path: the absolute,
// cleaned path as a file:// URI (ROOTS-SC-01), named after its last
// element. It does not check that the directory exists.
func RootFromPath(path string) (mcp.Root, error) {
	if path == "" {
		return mcp.Root{}, errors.New("consent: empty root path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return mcp.Root{}, fmt.Errorf("consent: root %q: %w", path, err)
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/x → /C:/x
	}
	if !utf8.ValidString(p) {
		return mcp.Root{}, fmt.Errorf("consent: root %q is not valid UTF-8", path)
	}
	return mcp.Root{URI: (&url.URL{Scheme: "file", Path: p}).String(), Name: filepath.Base(abs)}, nil
}
