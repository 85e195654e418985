package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// BenchmarkWrite is one CompleteOperation with one record through the
// writer: one caller at a time (each write its own transaction, no
// savepoint), and 8 callers per CPU at once (writes share transactions,
// a savepoint each).
func BenchmarkWrite(b *testing.B) {
	for _, bc := range []struct {
		name        string
		parallelism int // RunParallel goroutines per GOMAXPROCS; 0: serial
	}{{"serial", 0}, {"parallel", 8}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "elicit.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			var n atomic.Int64
			write := func() {
				id := fmt.Sprint(n.Add(1))
				err := s.CompleteOperation(ctx, &store.Operation{ID: "op-" + id, Principal: "alice", CompletedAt: time.Now()},
					func(ctx context.Context, fx store.Effects) error {
						return fx.Insert(ctx, &store.Record{Kind: "k", ID: "r-" + id, Principal: "alice", Status: "s"})
					})
				if err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			if bc.parallelism == 0 {
				for b.Loop() {
					write()
				}
				return
			}
			b.SetParallelism(bc.parallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					write()
				}
			})
		})
	}
}
