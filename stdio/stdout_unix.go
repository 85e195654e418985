//go:build unix

package stdio

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TakeStdout returns a private copy of the process's standard output and
// points file descriptor 1 and os.Stdout at standard error, so that only
// the holder of the copy writes to the real output (ServeProcess calls it;
// a program that serves with Serve calls it first, before anything else
// could print). Call it once.
func TakeStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("stdio: duplicating standard output: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stdio: moving standard output aside: %w", err)
	}
	// The old *os.File of fd 1 stays reachable: its finalizer would close
	// fd 1, which a socket could then take, and a stray print would go
	// to that socket.
	movedStdout = os.Stdout
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(fd), "stdout"), nil
}

// movedStdout keeps the process's first os.Stdout (now fd 1, which points
// at standard error) from being finalized.
var movedStdout *os.File
