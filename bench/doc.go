// Package bench measures elicit's protocol core against the machine's
// ceiling and against go-sdk v1.8.0, side by side in one run.
//
// Layout:
//
//   - cmd/mcpbench: the load harness (closed-loop load over loopback,
//     servers alternated round by round, ratios computed pair by pair) that
//     writes BENCHMARKS.md and throughput.png.
//   - servers/{ceiling,gosdk,elicit}: the three server binaries, each a
//     separate child process with its own runtime statistics.
//   - internal/impl: the three servers' HTTP handlers (shared with tests).
//   - internal/wire: the request bodies and headers all scenarios send.
//   - internal/load: the load generator and latency histogram.
//   - internal/micro: micro benchmark bodies, run by `go test -bench` in
//     this package and by the harness.
//   - internal/report: BENCHMARKS.md and the chart.
//
// Run scripts/bench from the repository root (quick run) or
// scripts/bench full (about ten minutes on two cores).
package bench
