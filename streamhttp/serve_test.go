package streamhttp_test

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// endpointLog is a slog.Handler that passes the url of the "MCP endpoint"
// record on.
type endpointLog struct {
	slog.Handler
	url chan string
}

func (endpointLog) Enabled(context.Context, slog.Level) bool { return true }

func (h endpointLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "MCP endpoint" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "url" {
				h.url <- a.Value.String()
			}
			return true
		})
	}
	return nil
}

func TestListenAndServe(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: []byte(`{"type":"object"}`)}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("hello"), nil
	})
	ctx, stop := context.WithCancel(context.Background())
	logs := endpointLog{Handler: slog.DiscardHandler, url: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- streamhttp.ListenAndServe(ctx, "127.0.0.1:0", s, &streamhttp.Options{Logger: slog.New(logs)})
	}()
	var endpoint string
	select {
	case endpoint = <-logs.url: // logged once the port is open
	case err := <-done:
		t.Fatalf("ListenAndServe returned %v before listening", err)
	}

	res, err := mcpclient.New(endpoint, nil).CallTool(ctx, "hello", nil)
	if err != nil || res.Content[0].Text != "hello" {
		t.Fatalf("call at %s: %+v %v", endpoint, res, err)
	}
	// The endpoint is /mcp and nothing else.
	resp, err := http.Get(endpoint + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /mcp/other: %d", resp.StatusCode)
	}

	// Ending ctx stops it cleanly.
	stop()
	if err := <-done; err != nil {
		t.Fatalf("after ctx ended: %v", err)
	}
	if _, err := http.Get(endpoint); err == nil {
		t.Fatal("still serving after ctx ended")
	}
}

func TestListenAndServeAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := mcpserver.New(mcp.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	err = streamhttp.ListenAndServe(context.Background(), ln.Addr().String(), s, &streamhttp.Options{Logger: slog.New(slog.DiscardHandler)})
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "listen" {
		t.Fatalf("on a taken address: %v", err)
	}
}

// A program that serves one MCP server and nothing else, until Ctrl-C.
func ExampleListenAndServe() {
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	// s.AddTool, mcpserver.AddTool: the tools.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := streamhttp.ListenAndServe(ctx, "127.0.0.1:8080", s, nil); err != nil {
		log.Fatal(err)
	}
}
