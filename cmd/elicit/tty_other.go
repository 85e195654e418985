//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package main

import (
	"errors"
	"os"
)

// cbreak is not available here: Esc is not read while elicit waits, and
// Ctrl-C cancels instead.
func cbreak(*os.File) (func(), error) {
	return nil, errors.New("no key-at-a-time terminal input on this system")
}

// columns is unknown here: 0.
func columns(any) int { return 0 }
