package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/internal/pagetest"
	"github.com/mcp-elicit/elicit/internal/progtest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// maxHandlerLines is the promise of the README and docs/go-sdk-comparison.md:
// two tools, one typed form and one URL step with sign-in, in at most 40
// lines of handler code.
const maxHandlerLines = 40

// The handler code is every top-level declaration but the imports and
// main (the wiring: listener, data directory, HTTP routes): the types,
// texts, handler and registration of the two tools.
func TestHandlerCode(t *testing.T) {
	handler := progtest.CodeLines(t, "main.go", progtest.HandlerCode)
	wiring := progtest.CodeLines(t, "main.go", progtest.IsMain)
	t.Logf("handler code: %d lines; main (wiring): %d lines (blank and comment lines not counted)", handler, wiring)
	if handler > maxHandlerLines {
		t.Errorf("handler code is %d lines, more than %d", handler, maxHandlerLines)
	}
}

// user is an MCP client signed in as name (demo bearer token) whose form
// and URL answers come from the functions given; a nil one declares no
// such capability.
func user(endpoint, name string, form, link func(p *mcp.ElicitRequestParams) *mcp.ElicitResult) *mcpclient.Client {
	h := &mcpclient.Handlers{}
	if form != nil {
		h.ElicitForm = func(ctx context.Context, _ mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return form(p), nil
		}
	}
	if link != nil {
		h.ElicitURL = func(ctx context.Context, _ mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return link(p), nil
		}
	}
	return mcpclient.New(endpoint, &mcpclient.Options{Token: name, Handlers: h})
}

func answer(action string, content map[string]any) func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
	return func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: action, Content: content}
	}
}

func never(t *testing.T) func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
	return func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
		t.Errorf("asked %q", p.Message)
		return &mcp.ElicitResult{Action: mcp.ActionCancel}
	}
}

func call(t *testing.T, c *mcpclient.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(t.Context(), tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func wantText(t *testing.T, res *mcp.CallToolResult, isError bool, text string) {
	t.Helper()
	if res.IsError != isError || len(res.Content) != 1 || res.Content[0].Text != text {
		t.Fatalf("result %+v, want isError=%v %q", res, isError, text)
	}
}

// The program as a user runs it, driven by mcpclient: the URL step with
// its page finished over HTTP, and the form.
func TestTwoTools(t *testing.T) {
	t.Setenv("DATA", t.TempDir())
	endpoint := progtest.Start(t)
	texts := connect.DefaultTexts("your billing account", "connect_billing")
	charge := map[string]any{"charge": "ch_1234"}
	checkNotConnected(t, endpoint, texts, charge)
	checkConnecting(t, endpoint, texts, charge)
	checkRefundForm(t, endpoint, texts, charge)
}

// checkNotConnected: before alice connects billing, nobody signed in gets
// 401, refund asks nothing, a client without URL mode is refused, and
// declining or cancelling the step stores nothing.
func checkNotConnected(t *testing.T, endpoint string, texts connect.StepTexts, charge map[string]any) {
	t.Helper()
	// Nobody signed in: 401 before anything runs.
	var authErr *mcpclient.AuthError
	if _, err := user(endpoint, "", nil, nil).CallTool(t.Context(), "refund", charge); !errors.As(err, &authErr) || authErr.StatusCode != 401 {
		t.Fatalf("anonymous: %v", err)
	}
	// Refund needs billing connected, and asks nothing until it is.
	wantText(t, call(t, user(endpoint, "alice", never(t), nil), "refund", charge), true, TextNotConnected)
	// A client without URL mode is refused before a link is made.
	_, err := user(endpoint, "alice", never(t), nil).CallTool(t.Context(), "connect_billing", nil)
	var missing *mcpclient.MissingCapabilityError
	if !errors.As(err, &missing) || missing.RequiredCapabilities.Elicitation == nil || missing.RequiredCapabilities.Elicitation.URL == nil {
		t.Fatalf("without URL mode: %v", err)
	}

	// Decline and cancel end the step with different words; nothing is stored.
	wantText(t, call(t, user(endpoint, "alice", nil, answer(mcp.ActionDecline, nil)), "connect_billing", nil), true, texts.Declined)
	wantText(t, call(t, user(endpoint, "alice", nil, answer(mcp.ActionCancel, nil)), "connect_billing", nil), true, texts.Cancelled)
	wantText(t, call(t, user(endpoint, "alice", never(t), nil), "refund", charge), true, TextNotConnected)
}

// checkConnecting: the link goes to the server's own page. Bob, given
// alice's link, is refused there; alice signs in, types the key, then
// accepts. Bob's billing stays his own, not connected.
func checkConnecting(t *testing.T, endpoint string, texts connect.StepTexts, charge map[string]any) {
	t.Helper()
	alice := user(endpoint, "alice", nil, func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
		if !strings.HasPrefix(p.URL, strings.TrimSuffix(endpoint, "/mcp")+"/ui/") || p.Message != texts.Ask {
			t.Errorf("asked %q at %s", p.Message, p.URL)
		}
		if err := pagetest.New().FinishKey(p.URL, "bob", "sk_bob_key"); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
			t.Errorf("bob at alice's page: %v, want HTTP 403", err)
		}
		if err := pagetest.New().FinishKey(p.URL, "alice", "sk_live_alice_key"); err != nil {
			t.Errorf("alice at her page: %v", err)
		}
		return &mcp.ElicitResult{Action: mcp.ActionAccept}
	})
	wantText(t, call(t, alice, "connect_billing", nil), false, texts.Connected)
	wantText(t, call(t, alice, "connect_billing", nil), false, texts.AlreadyConnected)
	// Bob's billing is his own, and not connected.
	wantText(t, call(t, user(endpoint, "bob", never(t), nil), "refund", charge), true, TextNotConnected)
}

// checkRefundForm: with billing connected, alice's refund form accepted,
// declined, cancelled, and asked again after an answer that breaks it;
// arguments the schema refuses never reach her.
func checkRefundForm(t *testing.T, endpoint string, texts connect.StepTexts, charge map[string]any) {
	t.Helper()
	asked := 0
	refund := func(answers ...*mcp.ElicitResult) *mcpclient.Client {
		asked = 0
		return user(endpoint, "alice", func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
			asked++
			if asked == 1 && p.Message != "Refund charge ch_1234: how much, and why?" {
				t.Errorf("asked %q", p.Message)
			}
			return answers[min(asked, len(answers))-1]
		}, nil)
	}
	res := call(t, refund(&mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"amount": 12.5, "reason": "duplicate"}}), "refund", charge)
	var got Refunded
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &got); err != nil || res.IsError || got != (Refunded{Charge: "ch_1234", Amount: 12.5, Reason: "duplicate"}) {
		t.Fatalf("refunded: %+v (%s)", res, raw)
	}
	wantText(t, call(t, refund(&mcp.ElicitResult{Action: mcp.ActionDecline}), "refund", charge), true, TextDeclined)
	wantText(t, call(t, refund(&mcp.ElicitResult{Action: mcp.ActionCancel}), "refund", charge), true, TextCancelled)
	if TextDeclined == TextCancelled || texts.Declined == texts.Cancelled {
		t.Error("decline and cancel read the same")
	}
	// An answer that breaks the form is asked again; the second counts.
	res = call(t, refund(
		&mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"amount": 0, "reason": "duplicate"}},
		&mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"amount": 3, "reason": "fraudulent"}},
	), "refund", charge)
	if res.IsError || asked != 2 || !strings.Contains(string(mustJSON(t, res.StructuredContent)), `"reason":"fraudulent"`) {
		t.Fatalf("after a re-ask (%d questions): %+v", asked, res)
	}
	// Arguments the schema refuses never reach the user.
	if _, err := user(endpoint, "alice", never(t), nil).CallTool(t.Context(), "refund", map[string]any{"charge": "1234"}); err == nil {
		t.Fatal("a charge id that breaks the pattern was accepted")
	}
}

// Questions in progress survive a restart: a refund asked by one process
// is answered to another on the same DATA (the requestState key ring is
// kept there). The client reaches both at one address, through a proxy
// switched while the user fills in the form.
func TestTwoToolsRestart(t *testing.T) {
	t.Setenv("DATA", t.TempDir())
	before, after := progtest.Start(t), progtest.Start(t)
	var target atomic.Pointer[url.URL]
	setTarget := func(endpoint string) {
		u, err := url.Parse(strings.TrimSuffix(endpoint, "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		target.Store(u)
	}
	setTarget(before)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target.Load()) }})
	defer proxy.Close()

	alice := user(proxy.URL+"/mcp", "alice", nil, func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
		if err := pagetest.New().FinishKey(p.URL, "alice", "sk_live_alice_key"); err != nil {
			t.Errorf("alice at her page: %v", err)
		}
		return &mcp.ElicitResult{Action: mcp.ActionAccept}
	})
	wantText(t, call(t, alice, "connect_billing", nil), false, connect.DefaultTexts("your billing account", "connect_billing").Connected)

	alice = user(proxy.URL+"/mcp", "alice", func(p *mcp.ElicitRequestParams) *mcp.ElicitResult {
		setTarget(after) // the restart, while the form is open
		return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"amount": 7, "reason": "requested_by_customer"}}
	}, nil)
	res := call(t, alice, "refund", map[string]any{"charge": "ch_5678"})
	if res.IsError || !strings.Contains(string(mustJSON(t, res.StructuredContent)), `"amount":7`) {
		t.Fatalf("refund answered after a restart: %+v", res)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
