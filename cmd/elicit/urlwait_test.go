package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
)

// waitFor polls out until re matches (or fails after 10 s) and returns the
// first submatch, or the match.
func waitFor(t *testing.T, out *syncBuffer, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[len(m)-1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s in the output:\n%s", re, out)
	return ""
}

var (
	linkRe    = regexp.MustCompile(`URL:\s+(http://127\.0\.0\.1:\d+/ui/set_api_key\?flow=[0-9a-f]{32})`)
	waitingRe = regexp.MustCompile(regexp.QuoteMeta(waitingText))
)

// The user accepts and says "finished" before the page is: the server
// holds the retry, the host says it waits for the browser, and the call
// ends as soon as the page is finished (one question, no "still waiting"),
// or, on Ctrl-C, with the server's cancel text.
func TestCallURLWaitsForTheBrowser(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
		code   int
		want   string
	}{
		{"finished in the browser", false, exitOK, billing.TextConnected},
		{"Ctrl-C while waiting", true, exitToolError, billing.TextCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := newServer(t)
			inR, inW := io.Pipe()
			defer inW.Close()
			stdout := &syncBuffer{}
			done := make(chan int, 1)
			go func() {
				done <- run(context.Background(), []string{"call", billing.ToolName, "--url", base + "/mcp", "--token", "alice"}, inR, stdout, io.Discard)
			}()
			link := waitFor(t, stdout, linkRe)
			io.WriteString(inW, "accept\n\n") // consent, then Enter although the page is not done
			waitFor(t, stdout, waitingRe)
			if tc.cancel {
				f := interrupt.Load()
				if f == nil || !(*f)() {
					t.Fatal("Ctrl-C was not taken by the waiting call")
				}
			} else {
				completePage(t, base, link, "alice", "sk_test_wait_0123456789")
			}
			code := <-done
			out := stdout.String()
			if code != tc.code || lastOf(out) != tc.want {
				t.Fatalf("exit %d, want %d and %q:\n%s", code, tc.code, tc.want, out)
			}
			if strings.Count(out, "URL:") != 1 || strings.Contains(out, "still waiting") || strings.Count(out, waitingText) != 1 {
				t.Fatalf("want one question and one waiting line:\n%s", out)
			}
			if interrupt.Load() != nil {
				t.Fatal("the interrupt hook outlived the call")
			}
		})
	}
}
