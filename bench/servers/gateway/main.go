// Command gateway is a benchmark server: the elicit benchmark server
// (bench/internal/impl/elicitsrv, the same tools as bench/servers/elicit)
// on a loopback listener of its own, with package gateway in front of it,
// both in this process. The load goes to the gateway; the ratio to
// bench/servers/elicit in the same mcpbench run is the gateway's cost:
//
//	mcpbench -servers elicit,gateway -scenarios call,mrtr
//
// It serves MCP at http://ADDR/mcp and /debug/stats plus pprof on a side
// listener, and prints "mcp=ADDR debug=ADDR" on stdout.
package main

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"

	"github.com/mcp-elicit/elicit/bench/internal/impl/elicitsrv"
	"github.com/mcp-elicit/elicit/bench/internal/srvkit"
	"github.com/mcp-elicit/elicit/gateway"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(http.Serve(ln, elicitsrv.Handler())) }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := gateway.New(gateway.Options{Logger: quiet,
		Upstreams: []gateway.Upstream{{Name: "elicit", URL: "http://" + ln.Addr().String() + "/mcp", Revision: gateway.Revision2026,
			// The default transport keeps 2 idle connections per host;
			// the load has up to 64 at once.
			HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}}})
	if err != nil {
		log.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	srvkit.Main("gateway", g.Handler(&gateway.HandlerOptions{Logger: quiet}))
}
