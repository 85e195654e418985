// Command store is the bare-store benchmark server: one durable insert per
// request (bench/internal/impl/storeceiling), with SQLite in -data or
// PostgreSQL at -postgres.
//
// It serves at http://ADDR/mcp and /debug/stats plus pprof on a side
// listener, and prints "mcp=ADDR debug=ADDR" on stdout.
//
//	store -driver sqlite -data DIR [-addr 127.0.0.1:0] [-debug 127.0.0.1:0]
//	store -driver postgres -postgres DSN [-addr …] [-debug …]
package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"time"

	"github.com/mcp-elicit/elicit/bench/internal/impl/storeceiling"
	"github.com/mcp-elicit/elicit/bench/internal/srvkit"
)

func main() {
	driver := flag.String("driver", "sqlite", "sqlite or postgres")
	data := flag.String("data", "", "directory of the SQLite database (sqlite)")
	dsn := flag.String("postgres", "", "PostgreSQL URL (postgres)")
	srvkit.MainWith("store", func() (http.Handler, func() error, error) {
		switch *driver {
		case "sqlite":
			if *data == "" {
				return nil, nil, errors.New("-data is required")
			}
			return storeceiling.SQLite(*data)
		case "postgres":
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return storeceiling.Postgres(ctx, *dsn)
		}
		return nil, nil, errors.New("-driver must be sqlite or postgres")
	})
}
