package stdio_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/internal/wiretest"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/stdio"
)

// TestTranscripts replays testdata/transcripts: the "input" section's
// lines are what the client writes on the server's standard input, one at
// a time, each but a blank line or a notification waiting for its one
// answer; then the input is closed. "output" is every line Serve wrote,
// byte for byte after package wiretest's normalisation (go test -update
// rewrites it). Each transcript has a new Serve for alice with the legacy
// bridge, or without it when the "options" section says modern-only.
func TestTranscripts(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr *wiretest.Transcript) {
		o := &stdio.Options{Principal: "alice", Logger: quiet, Legacy: &legacy.Options{Logger: quiet}}
		if opts, ok := tr.Section("options"); ok && strings.TrimSpace(string(opts)) == "modern-only" {
			o.Legacy = nil
		}
		c := start(t, newServer(newProbe()), o)
		var out bytes.Buffer
		for _, line := range strings.Split(strings.TrimSuffix(string(tr.Input(t, "input")), "\n"), "\n") {
			c.send(line)
			if !answered(line) {
				continue
			}
			out.WriteString(c.recv().Raw + "\n")
		}
		c.in.Close()
		rest, _ := io.ReadAll(c.out)
		out.Write(rest)
		tr.Check(t, "output", out.Bytes())
	})
}

// answered reports whether a line gets one answer: all but a blank line
// and a notification (an object with a method and no id).
func answered(line string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if strings.TrimSpace(line) == "" {
		return false
	}
	return json.Unmarshal([]byte(line), &m) != nil || m.Method == nil || m.ID != nil
}
