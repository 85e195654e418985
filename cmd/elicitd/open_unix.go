//go:build unix

package main

import (
	"os"
	"syscall"
)

// openNonblocking opens path for reading without waiting (a FIFO swapped
// in after the type check does not hang the start).
func openNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
