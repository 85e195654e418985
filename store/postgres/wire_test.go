package postgres

import (
	"context"
	"net"
	"sync"
)

// RoundTrips counts the round trips on the connections it dials (Dial is
// an Options.DialFunc): a write that follows a read, or is the first on
// its connection, waits for the server's answer once; writes in a row (a
// pipeline) count once. While held (Hold), every read waits.
type RoundTrips struct {
	mu         sync.Mutex
	n          int
	lastRead   bool
	gate, held chan struct{}
}

// Dial dials addr and counts the round trips on the connection.
func (rt *RoundTrips) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	rt.lastRead = true
	rt.mu.Unlock()
	return &countingConn{Conn: c, rt: rt}, nil
}

// Reset returns the round trips counted since the last Reset.
func (rt *RoundTrips) Reset() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := rt.n
	rt.n = 0
	return n
}

// Hold makes every read wait until release is called (release may be
// called more than once); held is closed when the first read waits.
func (rt *RoundTrips) Hold() (held <-chan struct{}, release func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	gate, h := make(chan struct{}), make(chan struct{})
	rt.gate, rt.held = gate, h
	var once sync.Once
	return h, func() {
		once.Do(func() {
			rt.mu.Lock()
			rt.gate = nil
			rt.mu.Unlock()
			close(gate)
		})
	}
}

type countingConn struct {
	net.Conn
	rt *RoundTrips
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.rt.mu.Lock()
	if c.rt.lastRead {
		c.rt.n++
		c.rt.lastRead = false
	}
	c.rt.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.rt.mu.Lock()
	gate, held := c.rt.gate, c.rt.held
	c.rt.held = nil
	c.rt.mu.Unlock()
	if gate != nil {
		if held != nil {
			close(held)
		}
		<-gate
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.rt.mu.Lock()
		c.rt.lastRead = true
		c.rt.mu.Unlock()
	}
	return n, err
}
