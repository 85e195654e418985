package bench_test

import (
	"testing"

	"github.com/mcp-elicit/elicit/bench/internal/micro"
)

// The micro benchmarks. CI runs them once each (-benchtime=1x) so they
// cannot rot; mcpbench runs the same bodies for BENCHMARKS.md.

func BenchmarkSealOpenBilling(b *testing.B)         { micro.SealOpenBilling(b) }
func BenchmarkSealOpenForm(b *testing.B)            { micro.SealOpenForm(b) }
func BenchmarkDigestArguments(b *testing.B)         { micro.DigestArguments(b) }
func BenchmarkDecodeRequest(b *testing.B)           { micro.DecodeRequest(b) }
func BenchmarkParseParams(b *testing.B)             { micro.ParseParams(b) }
func BenchmarkDecodeHeaderValuePlain(b *testing.B)  { micro.DecodeHeaderValuePlain(b) }
func BenchmarkDecodeHeaderValueBase64(b *testing.B) { micro.DecodeHeaderValueBase64(b) }
func BenchmarkServeHTTPCall(b *testing.B)           { micro.ServeHTTPCall(b) }
func BenchmarkServeHTTPCallBothEras(b *testing.B)   { micro.ServeHTTPCallBothEras(b) }
func BenchmarkServeHTTPDiscover(b *testing.B)       { micro.ServeHTTPDiscover(b) }
func BenchmarkServeHTTPFormFirst(b *testing.B)      { micro.ServeHTTPFormFirst(b) }
func BenchmarkServeHTTPFormRetry(b *testing.B)      { micro.ServeHTTPFormRetry(b) }
func BenchmarkServeHTTPHeaderMismatch(b *testing.B) { micro.ServeHTTPHeaderMismatch(b) }
func BenchmarkDecodeAnswer(b *testing.B)            { micro.DecodeAnswer(b) }
func BenchmarkParseSchema(b *testing.B)             { micro.ParseSchema(b) }
