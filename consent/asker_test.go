package consent

import (
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// TestAskerLinesCommand: for a server the host launched, the verified
// part is the command line, shown cleaned.
func TestAskerLinesCommand(t *testing.T) {
	endpoint, name := AskerLines(mcpclient.Asker{Command: "/usr/bin/elicitd --stdio\x1b[2J", Server: &mcp.Implementation{Name: "elicitd", Version: "1"}})
	if !strings.HasPrefix(endpoint, "/usr/bin/elicitd --stdio") || !strings.HasSuffix(endpoint, "the local program this host started") || strings.ContainsRune(endpoint, 0x1b) {
		t.Fatalf("endpoint line %q", endpoint)
	}
	if !strings.Contains(name, `"elicitd 1"`) {
		t.Fatalf("name line %q", name)
	}
}
