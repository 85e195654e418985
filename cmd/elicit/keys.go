package main

import (
	"io"
	"os"
	"sync"

	"github.com/muesli/cancelreader"

	"github.com/mcp-elicit/elicit/consent"
)

// escWatch reads the terminal's keys while elicit waits with nothing to
// ask (a task at work, a page being finished in the browser), so that Esc
// can cancel the wait as it cancels every prompt. Prompts read the same
// terminal, so the watch is stopped, and the terminal given back as it
// was, before each one: the read is a cancelreader, which a stop ends at
// once without taking a key. Safe for concurrent use.
type escWatch struct {
	in *os.File

	mu      sync.Mutex
	r       cancelreader.CancelReader // nil when not watching
	done    chan struct{}             // closed when the reading goroutine ends
	restore func()                    // the terminal's mode before the watch
}

// newEscWatch returns a watch of in, or nil when in is not a terminal
// (then only Ctrl-C cancels a wait).
func newEscWatch(in io.Reader) *escWatch {
	f, ok := in.(*os.File)
	if !ok || !consent.IsTerminal(f) {
		return nil
	}
	return &escWatch{in: f}
}

// start watches until stop, unless it already does: Esc calls onEsc, on
// the watch's goroutine, after the watch ended (it can call stop). Other
// keys are dropped. Where keys cannot be read one at a time (cbreak), it
// does nothing.
func (w *escWatch) start(onEsc func()) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r != nil {
		select {
		case <-w.done: // ended by an Esc: start again
			w.release()
		default:
			return
		}
	}
	restore, err := cbreak(w.in)
	if err != nil {
		return
	}
	r, err := cancelreader.NewReader(w.in)
	if err != nil {
		restore()
		return
	}
	w.r, w.done, w.restore = r, make(chan struct{}), restore
	go watchEsc(r, w.done, onEsc)
}

// watchEsc reads keys from r until Esc or a cancelled read; on Esc it
// closes done, then calls onEsc.
func watchEsc(r io.Reader, done chan struct{}, onEsc func()) {
	buf := make([]byte, 64)
	for {
		n, err := r.Read(buf)
		if err != nil {
			close(done)
			return
		}
		if onlyEsc(buf[:n]) {
			close(done)
			onEsc()
			return
		}
	}
}

// onlyEsc reports whether b is Esc pressed (once or more), not the start
// of a key's escape sequence such as an arrow's ESC [ A, which arrives in
// the same read.
func onlyEsc(b []byte) bool {
	for _, c := range b {
		if c != 0x1b {
			return false
		}
	}
	return len(b) > 0
}

// stop ends the watch and returns once the terminal is as it was before,
// so that a prompt can read it.
func (w *escWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r != nil {
		w.r.Cancel()
		<-w.done
		w.release()
	}
}

// release closes the ended reader and restores the terminal; w.mu held.
func (w *escWatch) release() {
	_ = w.r.Close()
	w.restore()
	w.r = nil
}
