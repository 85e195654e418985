//go:build !unix

package main

import "os"

// openNonblocking opens path for reading (no FIFOs to wait on here).
func openNonblocking(path string) (*os.File, error) { return os.Open(path) }
