package mcpclient_test

import (
	"context"
	"testing"

	"github.com/mcp-elicit/elicit/mcpclient"
)

// With no held retry in flight, a PageWait reports none and Cancel does
// nothing (the host then lets Ctrl-C end the program). The held case is
// driven end to end by cmd/elicit's TestCallURLWaitsForTheBrowser.
func TestPageWaitIdle(t *testing.T) {
	_, w := mcpclient.WithPageWait(context.Background())
	if n := w.Waiting(); n != 0 {
		t.Fatalf("Waiting() = %d with nothing sent", n)
	}
	if w.Cancel() {
		t.Fatal("Cancel() took effect with nothing in flight")
	}
}
