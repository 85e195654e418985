package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/stdio"
)

// TestMain runs, when the test binary is started with
// STDIO_TEST_CHILD=1, a server process on ServeProcess instead of the
// tests: the process-level tests launch it.
func TestMain(m *testing.M) {
	if os.Getenv("STDIO_TEST_CHILD") == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child serves a tool that prints to standard output every way a careless
// program can, while answering.
func child() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s := mcpserver.New(mcp.Implementation{Name: "child", Version: "1"}, &mcpserver.Options{Logger: logger})
	s.AddTool(&mcp.Tool{Name: "stray"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		fmt.Println("stray fmt.Println")
		fmt.Fprintln(os.Stdout, "stray os.Stdout")
		_, _ = syscall.Write(1, []byte("stray fd 1\n"))
		return mcpserver.Text("clean"), nil
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := stdio.ServeProcess(ctx, s, &stdio.Options{Principal: "local", Logger: logger})
	logger.Info("child exiting", "err", err)
	if err != nil && ctx.Err() == nil {
		return 1
	}
	return 0
}

// startChild starts the test binary as the child server, with pipes to
// its stdin and stdout and its stderr collected.
func startChild(t *testing.T) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *strings.Builder) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a process")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STDIO_TEST_CHILD=1")
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, bufio.NewReader(out), stderr
}

// TestServeProcessGuardsStdout: a tool that prints to stdout in three ways
// during a call does not corrupt the stream: every line on the real
// standard output is a JSON-RPC message, and the stray text is on
// standard error. Closing standard input ends the process cleanly.
func TestServeProcessGuardsStdout(t *testing.T) {
	cmd, in, out, stderr := startChild(t)
	for i := 1; i <= 2; i++ {
		if _, err := io.WriteString(in, call(i, "stray", "", "")+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      int             `json:"id"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" || m.ID != i || !strings.Contains(string(m.Result), `"clean"`) {
			t.Fatalf("stdout line %d is not the answer: %q", i, line)
		}
	}
	in.Close()
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", err, stderr.String())
	}
	if len(rest) != 0 {
		t.Fatalf("more on stdout: %q", rest)
	}
	for _, want := range []string{"stray fmt.Println", "stray os.Stdout", "stray fd 1", "input ended"} {
		if strings.Count(stderr.String(), want) < 1 {
			t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestServeProcessSignal: SIGTERM ends the server process with status 0.
func TestServeProcessSignal(t *testing.T) {
	cmd, in, out, stderr := startChild(t)
	defer in.Close()
	// One answered request: the server is up and serving.
	if _, err := io.WriteString(in, call(1, "stray", "", "")+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopping") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}
