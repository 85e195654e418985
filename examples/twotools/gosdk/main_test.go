package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/internal/progtest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// The go-sdk version behaves as twotools does for the same calls, so the
// comparison in docs/go-sdk-comparison.md compares working programs.
func TestGoSDKTwoTools(t *testing.T) {
	endpoint := progtest.Start(t)
	call := func(name, tool string, args map[string]any, form, link func(*mcp.ElicitRequestParams) *mcp.ElicitResult) (*mcp.CallToolResult, error) {
		h := &mcpclient.Handlers{}
		if form != nil {
			h.ElicitForm = func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				return form(p), nil
			}
		}
		if link != nil {
			h.ElicitURL = func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				return link(p), nil
			}
		}
		return mcpclient.New(endpoint, &mcpclient.Options{Token: name, Handlers: h}).CallTool(t.Context(), tool, args)
	}
	want := func(res *mcp.CallToolResult, err error, isError bool, text string) {
		t.Helper()
		if err != nil || res.IsError != isError || !strings.Contains(res.Content[0].Text, text) {
			t.Fatalf("got %+v %v, want isError=%v %q", res, err, isError, text)
		}
	}
	answer := func(action string, content map[string]any) func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
		return func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: action, Content: content}
		}
	}
	charge := map[string]any{"charge": "ch_1234"}

	// 401, as plain text without a Bearer challenge (go-sdk adds one only
	// with RequireBearerTokenOptions), so the client cannot tell it is MCP.
	if _, err := call("", "refund", charge, nil, nil); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("anonymous: %v", err)
	}

	res, err := call("alice", "refund", charge, answer("cancel", nil), nil)
	want(res, err, true, TextNotConnected)
	_, err = call("alice", "connect_billing", nil, answer("cancel", nil), nil)
	var missing *mcpclient.MissingCapabilityError
	if !errors.As(err, &missing) {
		t.Fatalf("without URL mode: %v", err)
	}
	res, err = call("alice", "connect_billing", nil, nil, answer("decline", nil))
	want(res, err, true, TextLinkDeclined)
	res, err = call("alice", "connect_billing", nil, nil, func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
		if err := typeKey(p.URL, "bob"); err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("bob at alice's page: %v", err)
		}
		if err := typeKey(p.URL, "alice"); err != nil {
			t.Errorf("alice at her page: %v", err)
		}
		return &mcp.ElicitResult{Action: "accept"}
	})
	want(res, err, false, TextConnected)

	res, err = call("alice", "refund", charge, answer("decline", nil), nil)
	want(res, err, true, TextDeclined)
	res, err = call("alice", "refund", charge, answer("cancel", nil), nil)
	want(res, err, true, TextCancelled)
	asked := 0
	res, err = call("alice", "refund", charge, func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
		if asked++; asked == 1 {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"amount": 0, "reason": "duplicate"}}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"amount": 3, "reason": "fraudulent"}}
	}, nil)
	if err != nil || res.IsError || asked != 2 || !strings.Contains(fmt.Sprint(res.StructuredContent), "fraudulent") {
		t.Fatalf("after a re-ask (%d questions): %+v %v", asked, res, err)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// typeKey signs in as name at link's page and types a key, in a fresh
// browser.
func typeKey(link, name string) error {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	u, err := url.Parse(link)
	if err != nil {
		return err
	}
	flow := u.Query().Get("flow")
	base := u.Scheme + "://" + u.Host
	do := func(resp *http.Response, err error) (string, error) {
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
		}
		return string(b), nil
	}
	body, err := do(c.PostForm(base+"/ui/login", url.Values{"username": {name}, "flow": {flow}}))
	if err != nil {
		return err
	}
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("no key form: %s", body)
	}
	_, err = do(c.PostForm(base+"/ui/key", url.Values{"api_key": {"sk_" + name}, "flow": {flow}, "csrf": {m[1]}}))
	return err
}

// docs/go-sdk-comparison.md states the line counts of both programs as
// they are: handler code (all but imports and main) and main.
func TestComparisonLineCounts(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/go-sdk-comparison.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(what string, elicit, gosdk int) string {
		return fmt.Sprintf("| %s | %d | %d |", what, elicit, gosdk)
	}
	for _, r := range []string{
		row("handler code", progtest.CodeLines(t, "../main.go", progtest.HandlerCode), progtest.CodeLines(t, "main.go", progtest.HandlerCode)),
		row("`main` (wiring)", progtest.CodeLines(t, "../main.go", progtest.IsMain), progtest.CodeLines(t, "main.go", progtest.IsMain)),
	} {
		if !strings.Contains(string(doc), r) {
			t.Errorf("docs/go-sdk-comparison.md lacks the row %q", r)
		}
	}
}
