//go:build unix

package stdio

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// takeStdout returns a private copy of standard output and points fd 1
// and os.Stdout at standard error.
func takeStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("stdio: duplicating standard output: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stdio: moving standard output aside: %w", err)
	}
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(fd), "stdout"), nil
}
