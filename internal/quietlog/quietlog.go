// Package quietlog gives go-sdk a quieter logger: go-sdk logs each
// session's start and end (with its id) at INFO, which at thousands of
// sessions floods an operator's log. Used by package legacy (the sessions
// of 2025 clients) and package gateway (its sessions with 2025
// upstreams).
package quietlog

import (
	"context"
	"log/slog"
)

// Demote returns a logger that logs l's INFO records at DEBUG; other
// levels pass unchanged.
func Demote(l *slog.Logger) *slog.Logger { return slog.New(demote{l.Handler()}) }

type demote struct{ slog.Handler }

func (d demote) Enabled(ctx context.Context, lv slog.Level) bool {
	if lv == slog.LevelInfo {
		lv = slog.LevelDebug
	}
	return d.Handler.Enabled(ctx, lv)
}

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return d.Handler.Handle(ctx, r)
}

func (d demote) WithAttrs(as []slog.Attr) slog.Handler { return demote{d.Handler.WithAttrs(as)} }
func (d demote) WithGroup(n string) slog.Handler       { return demote{d.Handler.WithGroup(n)} }
