// Package serve runs an http.Server until its context ends, then shuts it
// down gracefully. It is shared by the project's server commands.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds how long in-flight requests get to finish.
const ShutdownTimeout = 10 * time.Second

// Run is RunFor with ShutdownTimeout.
func Run(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger) error {
	return RunFor(ctx, srv, ln, logger, ShutdownTimeout)
}

// RunFor serves srv on ln until ctx is done or the server fails. When ctx
// is done it stops accepting, lets in-flight requests finish for at most
// shutdownTimeout, and returns nil if they all did (an error wrapping
// context.DeadlineExceeded if some were cut off).
func RunFor(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger, shutdownTimeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: in-flight requests did not finish within %v: %w", shutdownTimeout, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
