// Command ceiling is a benchmark server: the ceiling: a bare net/http handler doing the same JSON decode and encode as an MCP server and nothing else.
//
// It serves MCP at http://ADDR/mcp and /debug/stats plus pprof on a side
// listener, and prints "mcp=ADDR debug=ADDR" on stdout. mcpbench starts it
// as a child process with GOMAXPROCS set.
//
//	ceiling [-addr 127.0.0.1:0] [-debug 127.0.0.1:0]
package main

import (
	"github.com/mcp-elicit/elicit/bench/internal/impl/ceiling"
	"github.com/mcp-elicit/elicit/bench/internal/srvkit"
)

func main() { srvkit.Main("ceiling", ceiling.Handler()) }
