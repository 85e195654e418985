package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// hostileText is what a hostile server puts in a field: a screen clear, an
// OSC title change, an OSC 8 hyperlink, a CSI colour, a C1 CSI, bidi
// overrides and isolates, the bidi marks, NUL, BEL, backspace, CR, a zero
// width space, a Hangul filler and a line separator. The tag, at both
// ends, tells where the field was printed.
func hostileText(tag string) string {
	return tag + "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\x1b[31mred" +
		"\u009b1m\u202eesrever\u202c\u2066iso\u2069\u200e\u200f\u061c\x00\x07\x08\rover\u200b\u3164\u2028" + tag
}

// hostileASCII is the part of hostileText a certificate's DNS names can
// hold (IA5String is ASCII).
func hostileASCII(tag string) string {
	return tag + "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\x00\x07\x08\rover" + tag
}

// hostileFields are the fields a server (or its certificate) controls.
// Each row puts hostile text in that one field, and the walk runs every
// print path of elicit and elicit check against it. hidden, when set,
// says why no print path shows the field today; every other field must
// show up (escaped) somewhere, so the walk is known to reach it.
var hostileFields = []struct {
	field  string
	hidden string
}{
	{field: "serverInfo.name"},
	{field: "serverInfo.title"},
	{field: "serverInfo.version"},
	{field: "tool.name"},
	{field: "tool.title"},
	{field: "tool.description"},
	{field: "tool.dropped.name"}, // logged
	{field: "form.message"},
	{field: "form.property.name"},
	{field: "form.property.title"},
	{field: "form.property.description"},
	{field: "form.enum.value"},
	{field: "form.enum.title"},
	{field: "form.default", hidden: "a default holding control or invisible formatting characters does not fit its property (elicit's text rule), so the form is refused as unusable and its default never shown"},
	{field: "input.key"},
	{field: "form.schema.bad"}, // an unusable form: the property name is in the error
	{field: "url.message"},
	{field: "url.url", hidden: "a URL with control characters is refused and never shown"},
	{field: "url.url.visible"}, // only invisible and bidi characters: shown percent-encoded
	{field: "url.page", hidden: "elicit check judges the page it fetches but quotes at most a fixed success phrase of it"},
	{field: "sampling.message"},
	{field: "sampling.systemPrompt"},
	{field: "sampling.modelHint"},
	{field: "result.text"},
	{field: "result.link"},
	{field: "result.structured"},
	{field: "rpc.error.message"},
	{field: "rpc.error.data", hidden: "the data of an ordinary JSON-RPC error is not shown"},
	{field: "rpc.-32021.data"},
	{field: "rpc.-32022.data.supported"},
	{field: "progress.message", hidden: "elicit shows no progress yet"},
	{field: "task.id"},
	{field: "task.status"}, // an unknown status: shown, then the call fails on it
	{field: "task.statusMessage"},
	{field: "sse.request.method"}, // logged
	{field: "http.body"},
	{field: "http.content-type"},
	{field: "http.content-type.obs-text"},
	{field: "http.www-authenticate"},
	{field: "http.www-authenticate.obs-text"},
	{field: "tls.dnsname"},
}

// printPaths are the commands of the walk; --url and --token are added.
var printPaths = []struct {
	name  string
	args  []string
	stdin string
}{
	{"tools", []string{"tools"}, ""},
	{"tools --json", []string{"tools", "--json"}, ""},
	{"call form", []string{"call", "form", "--plain"}, "\n\nsubmit\n"},
	{"call form --json", []string{"call", "form", "--plain", "--json"}, "\n\nsubmit\n"},
	{"call url", []string{"call", "url", "--plain"}, "accept\n\n"},
	{"call url --json", []string{"call", "url", "--plain", "--json"}, "accept\n\n"},
	{"call sample", []string{"call", "sample", "--plain"}, "reply\nok\n.\nsend\n"},
	{"call result", []string{"call", "result"}, ""},
	{"call result --arg", []string{"call", "result", "--arg", "x=1"}, ""},
	{"call result --json", []string{"call", "result", "--json"}, ""},
	{"call task", []string{"call", "task", "--plain"}, ""},
	{"call task --json", []string{"call", "task", "--plain", "--json"}, ""},
	{"check form", []string{"check", "--tool", "form"}, ""},
	{"check form --json", []string{"check", "--tool", "form", "--json"}, ""},
	{"check url", []string{"check", "--tool", "url"}, ""},
	{"check url --json", []string{"check", "--tool", "url", "--json"}, ""},
}

// TestHostileServer walks every print path of elicit and elicit check
// with hostile text in every field a server controls, one field at a
// time: no control, bidi or invisible character, and no byte that is not
// UTF-8, may reach stdout or stderr raw, in text or --json mode.
func TestHostileServer(t *testing.T) {
	for i, row := range hostileFields {
		t.Run(row.field, func(t *testing.T) {
			tag := fmt.Sprintf("HOSTILE%02dQ", i)
			endpoint := startHostile(t, row.field, tag)
			seen := false
			for _, p := range printPaths {
				args := append(append([]string{}, p.args...), "--url", endpoint, "--token", "alice")
				code, out, errOut := elicit(t, p.stdin, args...)
				for _, s := range []struct{ name, text string }{{"stdout", out}, {"stderr", errOut}} {
					if bad := rawUnsafe(s.text); bad != "" {
						t.Errorf("%s: %s carries %s raw (exit %d):\n%q", p.name, s.name, bad, code, s.text)
					}
					seen = seen || strings.Contains(s.text, tag)
				}
			}
			switch {
			case !seen && row.hidden == "":
				t.Errorf("no print path showed %s: the walk does not reach it", row.field)
			case seen && row.hidden != "":
				t.Errorf("%s is shown now (it was hidden: %s): drop hidden from its row", row.field, row.hidden)
			}
		})
	}
}

// rawUnsafe names the first character of out that a terminal must not get
// raw (newline and tab aside), or returns "".
func rawUnsafe(out string) string {
	for i, r := range out {
		if r == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd") {
			return fmt.Sprintf("the byte %#x (not UTF-8) at %d", out[i], i)
		}
		if r != '\n' && r != '\t' && termtext.Escaped(r) {
			return fmt.Sprintf("%U at %d", r, i)
		}
	}
	return ""
}

// startHostile serves a hostile MCP server on loopback that puts
// hostileText(tag) in field, and returns its endpoint. For tls.dnsname it
// serves https with a self-signed certificate whose DNS names are hostile,
// reached as localhost, which the certificate does not name.
func startHostile(t *testing.T, field, tag string) string {
	t.Helper()
	h := &hostile{field: field, text: hostileText(tag)}
	if field != "tls.dnsname" {
		return serveHostile(t, h)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{hostileCert(t, hostileASCII(tag))}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	return "https://localhost:" + port + "/mcp"
}

// serveHostile serves h over http on loopback and returns its endpoint.
func serveHostile(t *testing.T, h *hostile) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.Start()
	t.Cleanup(ts.Close)
	h.origin = ts.URL
	return ts.URL + "/mcp"
}

// hostileCert makes a self-signed certificate for dnsName (and not for
// localhost).
func hostileCert(t *testing.T, dnsName string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{dnsName, "b." + dnsName}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("a certificate with hostile DNS names: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// hostile is the server: ordinary answers, with the hostile text in one
// field.
type hostile struct {
	field, text string
	origin      string
}

// headerText is the hostile text for a header: all of it (the client
// refuses the response, and its error quotes the header line), or for
// the .obs-text rows only what a header may carry (no C0 controls, DEL or
// C1 controls), so the header reaches the client's errors.
func (h *hostile) headerText() string {
	if strings.HasSuffix(h.field, ".obs-text") {
		return withoutControls(h.text)
	}
	return h.text
}

// withoutControls drops the C0 and C1 controls and DEL from s.
func withoutControls(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// pick returns the hostile text when field is the hostile one, else benign.
func (h *hostile) pick(field, benign string) string {
	if h.field == field {
		return h.text
	}
	return benign
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/page" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		body := h.pick("url.page", "Sign in to connect your account.")
		if h.field == "url.page" {
			body += "\x9b2J" // and a byte that is not UTF-8
		}
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>%s</p><form method=post action=/login><input name=password type=password></form>", body, body)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name           string                     `json:"name"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	switch h.field {
	case "http.body":
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, h.text+"\x9b2J")
		return
	case "http.content-type", "http.content-type.obs-text":
		w.Header().Set("Content-Type", "text/x-"+h.headerText())
		io.WriteString(w, "{}")
		return
	case "http.www-authenticate", "http.www-authenticate.obs-text":
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+h.headerText()+`", error="invalid_token"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		h.reply(w, req.ID, nil, &rpcErr{Code: -32001, Message: "unauthorized"})
		return
	case "rpc.-32022.data.supported":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		h.reply(w, req.ID, nil, &rpcErr{Code: -32022, Message: "Unsupported protocol version",
			Data: map[string]any{"supported": []string{h.text, "1999-01-01"}, "requested": "2026-07-28"}})
		return
	}
	switch req.Method {
	case "server/discover":
		h.reply(w, req.ID, h.result(map[string]any{"supportedVersions": []string{"2026-07-28"},
			"capabilities": map[string]any{"tools": map[string]any{}}}), nil)
	case "tools/list":
		tools := []map[string]any{
			{"name": "form", "description": "asks a form", "inputSchema": map[string]any{"type": "object"}},
			{"name": "url", "description": "asks to open a page", "inputSchema": map[string]any{"type": "object"}},
			{"name": "sample", "description": "asks for a model reply", "inputSchema": map[string]any{"type": "object"}},
			{"name": "task", "description": "runs as a task", "inputSchema": map[string]any{"type": "object"}},
			{"name": "result", "description": "answers at once", "annotations": map[string]any{"readOnlyHint": true},
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}}},
			{"name": h.pick("tool.name", "other"), "title": h.pick("tool.title", "Other"),
				"description": h.pick("tool.description", "Another tool\nwith two lines"), "inputSchema": map[string]any{"type": "object"}},
		}
		if h.field == "tool.dropped.name" {
			tools = append(tools, map[string]any{"name": h.text, "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"a": map[string]any{"type": "object", "x-mcp-header": "A"}}}})
		}
		h.reply(w, req.ID, h.result(map[string]any{"tools": tools}), nil)
	case "tools/call":
		h.call(w, req.ID, req.Params.Name, req.Params.InputResponses)
	case "tasks/get":
		h.reply(w, req.ID, h.result(h.task("completed")), nil)
	case "tasks/cancel":
		h.reply(w, req.ID, h.result(map[string]any{}), nil)
	default:
		h.reply(w, req.ID, nil, &rpcErr{Code: -32601, Message: "method not found"})
	}
}

func (h *hostile) call(w http.ResponseWriter, id json.RawMessage, name string, answers map[string]json.RawMessage) {
	switch h.field {
	case "rpc.error.message", "rpc.error.data":
		h.reply(w, id, nil, &rpcErr{Code: -32603, Message: h.pick("rpc.error.message", "internal error"),
			Data: map[string]any{"detail": h.pick("rpc.error.data", "none")}})
		return
	case "rpc.-32021.data":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		h.reply(w, id, nil, &rpcErr{Code: -32021, Message: "Missing required client capability",
			Data: map[string]any{"requiredCapabilities": map[string]any{"experimental": map[string]any{h.text: map[string]any{}}}}})
		return
	}
	if name == "task" {
		h.reply(w, id, h.result(h.task("working")), nil)
		return
	}
	key := h.pick("input.key", "ask")
	var ask map[string]any
	switch name {
	case "form":
		plan := h.pick("form.enum.value", "basic")
		props := map[string]any{
			"plan": map[string]any{"type": "string", "title": "Plan", "default": plan, "oneOf": []map[string]any{
				{"const": plan, "title": h.pick("form.enum.title", "Basic")}, {"const": "pro", "title": "Pro"}}},
			h.pick("form.property.name", "note"): map[string]any{"type": "string", "title": h.pick("form.property.title", "Note"),
				"description": h.pick("form.property.description", "A short note\non two lines"), "default": h.pick("form.default", "hello")},
		}
		if h.field == "form.schema.bad" {
			props[h.text] = map[string]any{"type": "object"}
		}
		ask = map[string]any{"method": "elicitation/create", "params": map[string]any{"mode": "form",
			"message": h.pick("form.message", "Choose a plan"), "requestedSchema": map[string]any{"type": "object", "properties": props}}}
	case "url":
		u := h.origin + "/page?flow=1"
		switch h.field {
		case "url.url":
			u = h.origin + "/page?flow=" + h.text
		case "url.url.visible":
			u = h.origin + "/page/" + withoutControls(h.text)
		}
		ask = map[string]any{"method": "elicitation/create", "params": map[string]any{"mode": "url",
			"message": h.pick("url.message", "Open the page to connect"), "url": u}}
	case "sample":
		ask = map[string]any{"method": "sampling/createMessage", "params": map[string]any{"maxTokens": 50,
			"systemPrompt":     h.pick("sampling.systemPrompt", "Be brief."),
			"modelPreferences": map[string]any{"hints": []map[string]any{{"name": h.pick("sampling.modelHint", "small")}}},
			"messages":         []map[string]any{{"role": "user", "content": map[string]any{"type": "text", "text": h.pick("sampling.message", "Summarise.")}}}}}
	}
	if _, answered := answers[key]; ask != nil && !answered {
		h.reply(w, id, h.result(map[string]any{"resultType": "input_required",
			"inputRequests": map[string]any{key: ask}, "requestState": "s1"}), nil)
		return
	}
	res := map[string]any{"isError": false, "content": []map[string]any{
		{"type": "text", "text": h.pick("result.text", "done")},
		{"type": "resource_link", "name": h.pick("result.link", "report"), "uri": "https://example.com/" + h.pick("result.link", "r")},
	}}
	if h.field == "result.structured" {
		res["content"] = []any{}
		res["structuredContent"] = map[string]any{"summary": h.text}
	}
	if h.field == "progress.message" || h.field == "sse.request.method" {
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		}
		if h.field == "progress.message" {
			event(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": "elicit-1", "progress": 1, "message": h.text}})
		} else {
			event(map[string]any{"jsonrpc": "2.0", "id": 99, "method": h.text, "params": map[string]any{}})
		}
		event(map[string]any{"jsonrpc": "2.0", "id": id, "result": h.result(res)})
		return
	}
	h.reply(w, id, h.result(res), nil)
}

// task is the task the "task" tool's call becomes (tasks extension): a
// CreateTaskResult while status is "working", the tasks/get answer with
// the tool's result once "completed". The hostile text may be its id,
// its status (the tasks/get one) or its status message.
func (h *hostile) task(status string) map[string]any {
	m := map[string]any{"taskId": h.pick("task.id", "7461736b2d6f662d7468652d686f7374"),
		"status": status, "statusMessage": h.pick("task.statusMessage", "Exporting"),
		"createdAt": "2026-07-28T09:00:00.000Z", "lastUpdatedAt": "2026-07-28T09:00:00.000Z", "pollIntervalMs": 1}
	switch status {
	case "working":
		m["resultType"] = "task"
	case "completed":
		m["status"] = h.pick("task.status", "completed")
		m["result"] = map[string]any{"content": []map[string]any{{"type": "text", "text": "done"}}}
	}
	return m
}

// result adds what every result carries, serverInfo included.
func (h *hostile) result(m map[string]any) map[string]any {
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = "complete"
	}
	m["ttlMs"], m["cacheScope"] = 0, "private"
	m["_meta"] = map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{
		"name": h.pick("serverInfo.name", "hostile"), "title": h.pick("serverInfo.title", "Hostile server"),
		"version": h.pick("serverInfo.version", "6.6.6")}}
	return m
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (h *hostile) reply(w http.ResponseWriter, id json.RawMessage, result any, e *rpcErr) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		msg["error"] = e
	} else {
		msg["result"] = result
	}
	_ = json.NewEncoder(w).Encode(msg)
}

// TestTaskStatusCapped: a hostile server's task status message of a
// megabyte, of ten thousand lines, of wide characters or of escapes is
// shown as one line of at most maxStatusColumns columns ending in "…",
// in line mode (stdout) and with --json (stderr) alike.
func TestTaskStatusCapped(t *testing.T) {
	messages := map[string]struct{ msg, shown string }{ // shown: how the message starts on screen
		"1 MB":         {strings.Repeat("A", 1<<20), "AAAA"},
		"10,000 lines": {strings.Repeat("line of a status\n", 10000), `line of a status\nline`},
		"wide":         {strings.Repeat("日本", 50000), "日本日本"},
		"escapes":      {strings.Repeat("\x1b[2J\u202e", 50000), `\x1b[2J\u202e\x1b`},
	}
	for name, m := range messages {
		msg := m.msg
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", name, asJSON), func(t *testing.T) {
				endpoint := serveHostile(t, &hostile{field: "task.statusMessage", text: msg})
				args := []string{"call", "task", "--plain", "--url", endpoint, "--token", "alice"}
				if asJSON {
					args = append(args, "--json")
				}
				code, out, errOut := elicit(t, "", args...)
				view := out
				if asJSON {
					view = errOut
				}
				if code != exitOK || len(view) > 2000 {
					t.Fatalf("exit %d, %d bytes shown (stdout %d, stderr %d bytes)", code, len(view), len(out), len(errOut))
				}
				if bad := rawUnsafe(view); bad != "" {
					t.Fatalf("the view carries %s raw", bad)
				}
				var status []string
				for _, l := range strings.Split(view, "\n") {
					if strings.HasPrefix(l, "Task ") {
						status = append(status, l)
					}
				}
				want := []string{"Task working: ", "Task completed: "}
				if len(status) != len(want) {
					t.Fatalf("status lines %q, want %d", status, len(want))
				}
				for i, l := range status {
					if !strings.HasPrefix(l, want[i]+m.shown) || !strings.HasSuffix(l, "…") || columnsOf(l) > maxStatusColumns {
						t.Errorf("status line of %d columns: %q; want %q… cut to at most %d columns", columnsOf(l), l, want[i], maxStatusColumns)
					}
				}
			})
		}
	}
}

// TestTaskStatusCappedOnTerminal: the status line rewritten in place is
// cut to maxStatusColumns too, and to the terminal's width when smaller
// (the width may be unknown: 0).
func TestTaskStatusCappedOnTerminal(t *testing.T) {
	msg := strings.Repeat("A", 1<<20)
	for _, tc := range []struct{ cols, want int }{{0, maxStatusColumns}, {80, 79}, {1000, maxStatusColumns}} {
		var out strings.Builder
		v := &waitView{out: &out, tty: true, cols: func() int { return tc.cols }, quit: make(chan struct{})}
		v.onTask(mcpclient.TaskUpdate{TaskID: "t1", Status: mcp.TaskWorking, StatusMessage: msg, Polls: 1})
		line, ok := strings.CutPrefix(out.String(), "\r\x1b[K")
		if !ok || strings.Contains(line, "\n") || columnsOf(line) != tc.want || !strings.HasSuffix(line, "…") {
			t.Errorf("%d columns: %q; want %d columns ending in …", tc.cols, out.String(), tc.want)
		}
	}
}

// TestTaskStatusCapDocumented: the help and docs/elicit.md give the cap
// the code applies.
func TestTaskStatusCapDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/elicit.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("cut to %d columns", maxStatusColumns)
	for name, text := range map[string]string{"elicit --help": usage, "docs/elicit.md": string(doc)} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), want) {
			t.Errorf("%s does not say the status line is %s", name, want)
		}
	}
}
