package mcpclient_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-elicit/elicit/internal/wiretest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// TestTranscripts replays testdata/transcripts. Each pins one request
// the client sends (section "request", rewritten by go test -update):
//   - "calls" lists what the client is asked to do, one per line:
//     "tools/list", "server/discover", "tools/call NAME ARGS",
//     "prompts/get NAME ARGS", "resources/read URI";
//   - "answer.1", "answer.2", … are the server's answers to the client's
//     requests before the pinned one, in order: an HTTP response, or just
//     a JSON-RPC body (200, application/json); «id» stands for the id of
//     the request answered;
//   - "user" is what the user answers, by input request key, as the
//     result JSON of that request (the default declines a form, accepts
//     a URL, and fails sampling and roots);
//   - "capabilities" lists the handlers set: form, url, sampling, roots
//     (default "form url");
//   - "version", when present, is Options.ProtocolVersion.
//
// The pinned request gets a complete result, and the client's own
// outcome is not part of the transcript.
func TestTranscripts(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr *wiretest.Transcript) {
		var answers [][]byte
		for i := 1; ; i++ {
			a, ok := tr.Section("answer." + strconv.Itoa(i))
			if !ok {
				break
			}
			answers = append(answers, a)
		}
		srv := &scripted{t: t, answers: answers}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		c := mcpclient.New(hs.URL+"/mcp", &mcpclient.Options{Token: "alice", Handlers: transcriptHandlers(t, tr),
			ClientInfo: mcp.Implementation{Name: "transcripts", Version: "1.0.0"}, StateOnlyDelay: -1, ProtocolVersion: version(tr),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		for _, line := range strings.Split(strings.TrimSpace(string(tr.Input(t, "calls"))), "\n") {
			do(context.Background(), t, c, line)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.pinned == nil {
			t.Fatalf("the client sent only %d requests, all answered by the script", srv.n)
		}
		tr.Check(t, "request", srv.pinned)
	})
}

// do runs one line of "calls"; its result does not matter.
func do(ctx context.Context, t *testing.T, c *mcpclient.Client, line string) {
	t.Helper()
	verb, rest, _ := strings.Cut(line, " ")
	name, args, _ := strings.Cut(rest, " ")
	var err error
	switch verb {
	case "tools/list":
		_, err = c.ListTools(ctx)
	case "server/discover":
		_, err = c.Discover(ctx)
	case "tools/call":
		_, err = c.CallTool(ctx, name, json.RawMessage(args))
	case "prompts/get":
		var m map[string]string
		if args != "" {
			if err := json.Unmarshal([]byte(args), &m); err != nil {
				t.Fatal(err)
			}
		}
		_, err = c.GetPrompt(ctx, name, m)
	case "resources/read":
		_, err = c.ReadResource(ctx, name)
	default:
		t.Fatalf("unknown call %q", line)
	}
	t.Logf("%s: %v", line, err)
}

// transcriptHandlers answers input requests from the "user" section.
func transcriptHandlers(t *testing.T, tr *wiretest.Transcript) *mcpclient.Handlers {
	user := map[string]json.RawMessage{}
	if b, ok := tr.Section("user"); ok {
		if err := json.Unmarshal(b, &user); err != nil {
			t.Fatalf("user: %v", err)
		}
	}
	answer := func(key string, v any, fallback string) error {
		raw, ok := user[key]
		if !ok {
			raw = json.RawMessage(fallback)
		}
		return json.Unmarshal(raw, v)
	}
	elicit := func(fallback string) func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
		return func(_ context.Context, _ mcpclient.Asker, key string, _ *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			var r mcp.ElicitResult
			return &r, answer(key, &r, fallback)
		}
	}
	caps := "form url"
	if b, ok := tr.Section("capabilities"); ok {
		caps = string(b)
	}
	h := &mcpclient.Handlers{}
	for _, c := range strings.Fields(caps) {
		switch c {
		case "form":
			h.ElicitForm = elicit(`{"action":"decline"}`)
		case "url":
			h.ElicitURL = elicit(`{"action":"accept"}`)
		case "sampling":
			h.Sampling = func(_ context.Context, _ mcpclient.Asker, key string, _ *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
				var r mcp.CreateMessageResult
				return &r, answer(key, &r, `null`)
			}
		case "roots":
			h.Roots = func(_ context.Context, _ mcpclient.Asker, key string) (*mcp.ListRootsResult, error) {
				var r mcp.ListRootsResult
				return &r, answer(key, &r, `null`)
			}
		default:
			t.Fatalf("unknown capability %q", c)
		}
	}
	return h
}

// scripted answers the client's requests from the script, records the
// first request past it, and answers that one and any later one with an
// empty complete result.
type scripted struct {
	t       *testing.T
	answers [][]byte
	mu      sync.Mutex
	n       int
	pinned  []byte
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	s.mu.Lock()
	s.n++
	n := s.n
	if n == len(s.answers)+1 {
		s.pinned = clientRequest(r, body)
	}
	s.mu.Unlock()
	if n > len(s.answers) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[]}}`, env.ID)
		return
	}
	a := bytes.ReplaceAll(s.answers[n-1], []byte("«id»"), env.ID)
	if !bytes.HasPrefix(a, []byte("HTTP/1.1 ")) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(a)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(a)), r)
	if err != nil {
		s.t.Errorf("answer.%d: %v", n, err)
		return
	}
	payload, _ := io.ReadAll(resp.Body)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(payload)
}

// clientRequest writes what the client sent: the request line, its
// headers sorted (without the Go transport's own User-Agent and
// Accept-Encoding, with Content-Length), and the body.
func clientRequest(r *http.Request, body []byte) []byte {
	h := r.Header.Clone()
	h.Del("User-Agent")
	h.Del("Accept-Encoding")
	h.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return wiretest.FormatRequest(r.Method, r.URL.Path, h, body, keys...)
}

func version(tr *wiretest.Transcript) string {
	v, _ := tr.Section("version")
	return strings.TrimSpace(string(v))
}
