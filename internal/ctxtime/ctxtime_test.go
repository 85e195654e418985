package ctxtime

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(context.Background(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep: %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("Sleep with a context ending first: %v after %v", err, time.Since(start))
		}
	})
}

func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+time.Second)
		defer cancel()
		start := time.Now()
		var at []time.Duration
		Every(ctx, time.Minute, func(context.Context) { at = append(at, time.Since(start)) })
		want := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}
		if len(at) != len(want) || at[0] != want[0] || at[1] != want[1] || at[2] != want[2] {
			t.Fatalf("calls at %v, want %v", at, want)
		}
		if time.Since(start) != 3*time.Minute+time.Second {
			t.Fatalf("returned after %v, want when the context ended", time.Since(start))
		}
	})
}
