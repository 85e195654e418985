// Package mcptest holds helpers for the module's tests: an in-memory
// network for tests that run in a testing/synctest bubble, and the
// request _meta literal the 2026-07-28 revision puts on every request.
package mcptest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
)

// PipeServer serves h on an in-memory network and returns a client whose
// requests, whatever their URL, reach h: use a loopback URL such as
// "http://127.0.0.1/mcp" so that Host checks pass. Connections are
// net.Pipe pairs, so a test can run h, its client and their timers in a
// testing/synctest bubble, where a real socket would keep the fake clock
// from advancing (I/O on it is not durably blocking). The cleanup closes
// the server; call PipeServer inside the bubble.
func PipeServer(t testing.TB, h http.Handler) *http.Client {
	t.Helper()
	pn := &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(pn)
	t.Cleanup(func() { srv.Close() })
	return &http.Client{Transport: &http.Transport{DialContext: pn.dial, DisableKeepAlives: true}}
}

// pipeNet is a net.Listener whose connections dial hands over.
type pipeNet struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.closeOnce.Do(func() { close(p.done) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return pipeAddr{} }

// dial hands the listener the server's end of a new pipe.
func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// BubbleGoroutines counts the goroutines of the running synctest bubbles
// (their stack headers say "synctest bubble"); with one bubble at a time,
// those of the test. Unlike runtime.NumGoroutine it leaves out goroutines
// outside the test, such as the one running finalizers, which come and
// go. Call it after synctest.Wait.
func BubbleGoroutines() int {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for line := range bytes.Lines(buf) {
		if bytes.HasPrefix(line, []byte("goroutine ")) && bytes.Contains(line, []byte("synctest bubble")) {
			n++
		}
	}
	return n
}
