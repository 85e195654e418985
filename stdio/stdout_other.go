//go:build !unix

package stdio

import "os"

// takeStdout returns standard output and points os.Stdout at standard
// error (the file descriptor itself cannot be moved here).
func takeStdout() (*os.File, error) {
	out := os.Stdout
	os.Stdout = os.Stderr
	return out, nil
}
