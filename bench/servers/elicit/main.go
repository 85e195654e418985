// Command elicit is a benchmark server: elicit's core (mcpserver behind streamhttp) with the benchmark tools.
//
// It serves MCP at http://ADDR/mcp and /debug/stats plus pprof on a side
// listener, and prints "mcp=ADDR debug=ADDR" on stdout. mcpbench starts it
// as a child process with GOMAXPROCS set.
//
//	elicit [-addr 127.0.0.1:0] [-debug 127.0.0.1:0]
package main

import (
	"github.com/mcp-elicit/elicit/bench/internal/impl/elicitsrv"
	"github.com/mcp-elicit/elicit/bench/internal/srvkit"
)

func main() { srvkit.Main("elicit", elicitsrv.Handler()) }
