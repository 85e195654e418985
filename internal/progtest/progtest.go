// Package progtest runs the example programs under examples/ as a user
// would: built with go build, started with ADDR=127.0.0.1:0, and reached
// at the endpoint URL they log. It is for tests only.
package progtest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// endpointRe matches the endpoint line, as log.Printf("MCP endpoint: %s")
// or streamhttp.ListenAndServe (`MCP endpoint url=...`) writes it.
var endpointRe = regexp.MustCompile(`MCP endpoint:? (?:url=)?(http://\S+)`)

// Start builds the main package in the test's working directory, runs it
// with ADDR=127.0.0.1:0 (the programs listen there, on a free port), and
// returns the endpoint URL it logs. The process is killed when the test
// ends. A program that exits before logging its endpoint fails the test
// with its output.
func Start(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the example program; skipped in -short")
	}
	bin := filepath.Join(t.TempDir(), "example")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ADDR=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	// Read until the endpoint line; the rest of the output is drained so
	// the program never blocks on a full pipe.
	lines := bufio.NewScanner(stderr)
	var seen strings.Builder
	url := ""
	for url == "" && lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
		if m := endpointRe.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(done)
	}()
	if url == "" {
		t.Fatalf("the program logged no endpoint; its output:\n%s", seen.String())
	}
	return url
}
