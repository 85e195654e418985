package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

// A restarted process gets a new default key, so a state sealed before the
// restart is refused there, and the log gives the true reason: a key this
// process does not have (unknown_key), not a forged state (tampered).
func TestDefaultKeyAfterRestart(t *testing.T) {
	var logs bytes.Buffer
	start := func(logger *slog.Logger) rpc {
		s := New(mcp.Implementation{Name: "test", Version: "1"}, &Options{Logger: logger})
		s.AddTool(&mcp.Tool{Name: "ask_form", Description: "form"}, func(ctx context.Context, r *Request) (Reply, error) {
			return Ask().ElicitForm("opts", "Pick a level", json.RawMessage(formSchema)), nil
		})
		return rpc{s, "alice"}
	}
	before := start(slog.New(slog.DiscardHandler))
	r, err := before.call(t, toolCall("ask_form", `{"elicitation":{}}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	state, _ := r["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState: %v", r)
	}

	after := start(slog.New(slog.NewTextHandler(&logs, nil)))
	_, err = after.call(t, toolCall("ask_form", `{"elicitation":{}}`, retry(state, `{"opts":{"action":"decline"}}`)))
	if err == nil || err.Code != -32602 {
		t.Fatalf("old state after a restart: %v", err)
	}
	if !strings.Contains(logs.String(), "reason=unknown_key") {
		t.Errorf("log after a restart: %s", logs.String())
	}
	// The ids differ from run to run; the ring names them for operators.
	a, b := before.s.sealer.KeyIDs()[0], after.s.sealer.KeyIDs()[0]
	if a == b || !strings.HasPrefix(a, "ephemeral-") {
		t.Errorf("default key ids %q and %q", a, b)
	}
}
