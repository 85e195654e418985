package streamhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/wiretest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// TestTranscripts replays testdata/transcripts: one HTTP exchange each,
// against transcriptHandler, the response compared byte for byte after
// the normalisation of package wiretest (go test -update rewrites the
// responses). A "setup" section is sent first, and its requestState
// replaces «setup» in the request.
func TestTranscripts(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr *wiretest.Transcript) {
		h := transcriptHandler(t)
		state := ""
		if setup, ok := tr.Section("setup"); ok {
			rec := exchange(t, h, setup)
			if state = wiretest.StateOf(rec.Body.Bytes()); rec.Code != http.StatusOK || state == "" {
				t.Fatalf("setup: %d %s", rec.Code, rec.Body)
			}
		}
		rec := exchange(t, h, wiretest.Substitute(tr.Input(t, "request"), state))
		tr.Check(t, "response", wiretest.FormatResponse(rec))
	})
}

func exchange(t *testing.T, h http.Handler, raw []byte) *httptest.ResponseRecorder {
	t.Helper()
	req, err := wiretest.ParseRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// transcriptHandler serves the tools the transcripts call, behind the
// demo bearer authentication and a 2048-byte body limit:
//   - greet asks a form (who), then greets;
//   - report has x-mcp-header arguments region (string) and count (integer);
//   - progress sends two progress notifications before its result;
//   - link asks a URL-mode elicitation;
//   - flaky fails as a passing outage (mcpserver.ErrUnavailable).
func transcriptHandler(t *testing.T) http.Handler {
	t.Helper()
	sealer := wiretest.Sealer(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := mcpserver.New(mcp.Implementation{Name: "transcripts", Version: "1.0.0"}, &mcpserver.Options{Sealer: sealer, Logger: quiet})
	wiretest.AddGreet(s)
	s.AddTool(&mcp.Tool{Name: "report", Description: "A regional report.", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"}}}`)},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.Text("report ready"), nil
		})
	s.AddTool(&mcp.Tool{Name: "progress", Description: "Reports progress."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		for _, p := range []float64{1, 2} {
			if err := r.Progress(p, 2, ""); err != nil {
				return nil, err
			}
		}
		return mcpserver.Text("done"), nil
	})
	s.AddTool(&mcp.Tool{Name: "link", Description: "Connects an account."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Ask().ElicitURL("connect", "Connect your account.", "https://127.0.0.1/connect/abc"), nil
	})
	s.AddTool(&mcp.Tool{Name: "flaky", Description: "Its database is down."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return nil, errors.Join(mcpserver.ErrUnavailable, errors.New("connection refused"))
	})
	return streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "transcripts"}, MaxBodyBytes: 2048, Logger: quiet})
}
