package legacy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/wiretest"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// TestTranscripts replays testdata/transcripts: one HTTP exchange of a
// 2025-11-25 client (or a 2026 one) with the endpoint that serves both,
// on a loopback server. The "request" section is sent as written; its
// response ("response", rewritten by go test -update) is compared byte
// for byte after wiretest's normalisation, without the Date header.
//
//   - "session", when present, is an initialize body: it and
//     notifications/initialized are sent first, as alice, and «session» in
//     the request stands for the session id they opened.
//   - "answer", when present, is what the client POSTs on that session
//     when the response stream carries a request of the server (such as
//     elicitation/create); «id» stands for that request's id. The answer
//     POST's own response is "answer.response".
func TestTranscripts(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr *wiretest.Transcript) {
		hs := httptest.NewServer(transcriptEndpoint(t))
		defer hs.Close()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		session := ""
		if init, ok := tr.Section("session"); ok {
			session = openSession(t, c, hs.URL, init)
		}
		req, err := wiretest.ParseRequest(bytes.ReplaceAll(tr.Input(t, "request"), []byte("«session»"), []byte(session)))
		if err != nil {
			t.Fatal(err)
		}
		resp := send(t, c, hs.URL, req)
		defer resp.Body.Close()
		answer, _ := tr.Section("answer")
		body, answered := readAnswering(t, resp.Body, func(id json.RawMessage) []byte {
			if answer == nil {
				t.Fatalf("the server asked something and the transcript has no answer")
			}
			a := bytes.ReplaceAll(bytes.ReplaceAll(answer, []byte("«id»"), id), []byte("«session»"), []byte(session))
			ar, _ := wiretest.ParseRequest(a)
			ans := send(t, c, hs.URL, ar)
			defer ans.Body.Close()
			b, _ := io.ReadAll(ans.Body)
			return wiretest.FormatHTTPResponse(ans.StatusCode, ans.Header, b, "Date")
		})
		tr.Check(t, "response", wiretest.FormatHTTPResponse(resp.StatusCode, resp.Header, body, "Date"))
		tr.Check(t, "answer.response", answered)
	})
}

// send sends a request parsed from a transcript to the test server.
func send(t *testing.T, c *http.Client, base string, r *http.Request) *http.Response {
	t.Helper()
	payload, _ := io.ReadAll(r.Body)
	req, err := http.NewRequest(r.Method, base+r.URL.Path, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = r.Header
	req.Host = r.Host
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// openSession initializes a session as alice and returns its id.
func openSession(t *testing.T, c *http.Client, base string, init []byte) string {
	t.Helper()
	post := func(session string, body []byte) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(bytes.TrimSpace(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", init)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	if resp := post(id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return id
}

// readAnswering reads a response body to its end; each server request
// in an SSE event is answered with answer while the stream stays open.
// It returns the body and what the answers got back.
func readAnswering(t *testing.T, r io.Reader, answer func(id json.RawMessage) []byte) (body, answered []byte) {
	t.Helper()
	var out, got bytes.Buffer
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		out.Write(line)
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(data, &m) == nil && m.Method != "" && m.ID != nil {
				got.Write(answer(m.ID))
			}
		}
		if err != nil {
			return out.Bytes(), got.Bytes()
		}
	}
}

// transcriptEndpoint serves, to clients of both eras, behind the demo
// bearer authentication:
//   - greet, which asks a form (who) and greets, or says "No name" on a
//     decline or cancel;
//   - link, which asks a URL-mode elicitation.
func transcriptEndpoint(t *testing.T) http.Handler {
	t.Helper()
	s := mcpserver.New(mcp.Implementation{Name: "transcripts", Version: "1.0.0"}, &mcpserver.Options{Logger: quiet, Instructions: "Call greet to be greeted."})
	wiretest.AddGreet(s)
	s.AddTool(&mcp.Tool{Name: "link", Description: "Connects an account."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.Elicitation("connect").Outcome == elicit.Accepted {
			return mcpserver.Text("connected"), nil
		}
		return mcpserver.Ask().ElicitURL("connect", "Connect your account.", "https://127.0.0.1/connect/abc"), nil
	})
	modern := streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "transcripts"}, Logger: quiet})
	h := legacy.NewHandler(s, modern, &legacy.Options{Logger: quiet, URLPolls: -1})
	t.Cleanup(func() { _ = h.Close() })
	return h
}
