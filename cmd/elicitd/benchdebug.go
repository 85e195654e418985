//go:build benchdebug

package main

// Built with the benchdebug tag (scripts/bench builds elicitd so), elicitd
// serves net/http/pprof and expvar (/debug/vars: runtime.MemStats) on the
// loopback address ELICITD_BENCH_DEBUG names, for the benchmark harness's
// allocation counts, CPU profiles and goroutine dumps. Ordinary builds have
// none of it.

import (
	_ "expvar" // /debug/vars on http.DefaultServeMux
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // /debug/pprof/ on http.DefaultServeMux
	"os"
)

func init() {
	addr := os.Getenv("ELICITD_BENCH_DEBUG")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !isLoopback(host) {
		fmt.Fprintf(os.Stderr, "elicitd: ELICITD_BENCH_DEBUG=%s is not a loopback host:port\n", addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "elicitd: ELICITD_BENCH_DEBUG: %v\n", err)
		os.Exit(2)
	}
	go func() { _ = http.Serve(ln, http.DefaultServeMux) }()
}
