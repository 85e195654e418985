// Package bench measures elicit's protocol core against the machine's
// ceiling, go-sdk v1.8.0 and the TypeScript SDK v2, and elicitd's real
// flows on SQLite and PostgreSQL against a bare store, side by side in one
// run.
//
// Layout:
//
//   - cmd/mcpbench: the load harness (closed-loop load over loopback,
//     servers alternated round by round, ratios computed pair by pair) that
//     writes BENCHMARKS.md and throughput.png; it also runs cmd/elicitd
//     (built with -tags benchdebug) and takes goroutine dumps of it.
//   - servers/{ceiling,gosdk,elicit}: the core's server binaries, each a
//     separate child process with its own runtime statistics;
//     servers/store the bare store (one durable insert per request);
//     servers/tssdk the TypeScript peer (a node script; scripts/bench
//     installs its packages outside the repository).
//   - internal/impl: the Go servers' HTTP handlers (shared with tests).
//   - internal/wire: the request bodies and headers all scenarios send.
//   - internal/load: the load generator and latency histogram.
//   - internal/micro: micro benchmark bodies, run by `go test -bench` in
//     this package and by the harness.
//   - internal/report: BENCHMARKS.md and the chart.
//
// Run scripts/bench from the repository root (quick run) or
// scripts/bench full (about half an hour on two cores);
// ELICIT_BENCH_POSTGRES_DSN adds PostgreSQL.
package bench
