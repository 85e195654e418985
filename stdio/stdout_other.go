//go:build !unix

package stdio

import "os"

// TakeStdout returns standard output and points os.Stdout at standard
// error (the file descriptor itself cannot be moved here); see the unix
// version.
func TakeStdout() (*os.File, error) {
	out := os.Stdout
	os.Stdout = os.Stderr
	return out, nil
}
