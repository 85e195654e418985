// Package srvkit is the common main of the benchmark servers: it serves
// the MCP handler on one loopback listener and a side debug listener with
// /debug/stats (runtime.MemStats, CPU time, GOMAXPROCS as JSON) and
// net/http/pprof, and prints both addresses on stdout for the harness.
package srvkit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// Stats is what /debug/stats returns.
type Stats struct {
	// GOMAXPROCS of the server process.
	GOMAXPROCS int `json:"gomaxprocs"`
	// Mallocs and TotalAlloc are the cumulative allocation count and bytes.
	Mallocs    uint64 `json:"mallocs"`
	TotalAlloc uint64 `json:"totalAlloc"`
	// HeapAlloc is the live heap (after a GC when ?gc=1), HeapInuse the
	// bytes in in-use spans, Sys all memory obtained from the OS.
	HeapAlloc uint64 `json:"heapAlloc"`
	HeapInuse uint64 `json:"heapInuse"`
	Sys       uint64 `json:"sys"`
	NumGC     uint32 `json:"numGC"`
	// CPUNanos is user+system CPU time of the process so far.
	CPUNanos int64 `json:"cpuNanos"`
	// Goroutines is runtime.NumGoroutine().
	Goroutines int `json:"goroutines"`
}

// ReadStats returns the process's statistics; with gc it first forces two
// collections (the second empties sync.Pool victim caches).
func ReadStats(gc bool) Stats {
	if gc {
		runtime.GC()
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	return Stats{GOMAXPROCS: runtime.GOMAXPROCS(0), Mallocs: m.Mallocs, TotalAlloc: m.TotalAlloc,
		HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, Sys: m.Sys, NumGC: m.NumGC, CPUNanos: cpu,
		Goroutines: runtime.NumGoroutine()}
}

// DebugHandler serves /debug/stats and /debug/pprof/.
func DebugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ReadStats(r.URL.Query().Get("gc") == "1"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return mux
}

// Main parses -addr and -debug, serves mcp at /mcp and the debug handler,
// prints "mcp=ADDR debug=ADDR" on stdout, and runs until SIGINT/SIGTERM.
// Both addresses must be loopback.
func Main(name string, mcp http.Handler) {
	MainWith(name, func() (http.Handler, func() error, error) { return mcp, nil, nil })
}

// MainWith is Main for a server with flags of its own: build, called once
// the flags are parsed, returns the handler and what to close at the end
// (nil for nothing).
func MainWith(name string, build func() (http.Handler, func() error, error)) {
	addr := flag.String("addr", "127.0.0.1:0", "MCP listen address (loopback)")
	debug := flag.String("debug", "127.0.0.1:0", "debug listen address for /debug/stats and pprof (loopback)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix(name + ": ")
	mcp, closeFn, err := build()
	if err != nil {
		log.Fatal(err)
	}
	if closeFn != nil {
		defer closeFn()
	}
	ln, err := listenLoopback(*addr)
	if err != nil {
		log.Fatal(err)
	}
	dln, err := listenLoopback(*debug)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	dsrv := &http.Server{Handler: DebugHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = dsrv.Serve(dln) }()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	fmt.Printf("mcp=%s debug=%s\n", ln.Addr(), dln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	_ = dsrv.Close()
}

func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %q is not a loopback IP", addr)
	}
	return net.Listen("tcp", addr)
}
