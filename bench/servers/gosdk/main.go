// Command gosdk is a benchmark server: go-sdk v1.8.0 in stateless mode with the benchmark tools.
//
// It serves MCP at http://ADDR/mcp and /debug/stats plus pprof on a side
// listener, and prints "mcp=ADDR debug=ADDR" on stdout. mcpbench starts it
// as a child process with GOMAXPROCS set.
//
//	gosdk [-addr 127.0.0.1:0] [-debug 127.0.0.1:0]
package main

import (
	"github.com/mcp-elicit/elicit/bench/internal/impl/gosdksrv"
	"github.com/mcp-elicit/elicit/bench/internal/srvkit"
)

func main() { srvkit.Main("gosdk", gosdksrv.Handler()) }
