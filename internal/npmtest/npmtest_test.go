package npmtest

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a testing.TB that notes how the test would have ended.
type recorder struct {
	testing.TB
	ended string // "fatal: …", "skip: …" or ""
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.ended = "fatal: " + fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.ended = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) {
	r.ended = "skip: " + fmt.Sprint(args...)
	runtime.Goexit()
}

// TestRequire: without npm, Install skips, unless ELICIT_TS_TEST=require
// (CI), which makes it a failure naming the variable.
func TestRequire(t *testing.T) {
	if testing.Short() {
		t.Skip("Install skips every test in -short unless required")
	}
	tests := []struct {
		require string
		want    string
	}{
		{"", "skip: npm is not on PATH; set ELICIT_TS_TEST=require to make this a failure"},
		{"1", "skip: npm is not on PATH; set ELICIT_TS_TEST=require to make this a failure"},
		{"require", "fatal: ELICIT_TS_TEST=require, but npm is not on PATH"},
	}
	for _, tt := range tests {
		t.Run("ELICIT_TS_TEST="+tt.require, func(t *testing.T) {
			t.Setenv(RequireEnv, tt.require)
			t.Setenv("PATH", t.TempDir())
			t.Setenv(CacheEnv, t.TempDir())
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				Install(r, "@modelcontextprotocol/client@2.4.0")
				r.ended = "returned"
			}()
			<-done
			if r.ended != tt.want {
				t.Fatalf("Install ended with %q, want %q", r.ended, tt.want)
			}
		})
	}
}
