// Package datadir keeps what a server's URL steps need in one directory,
// for a server that runs as one process: an SQLite database (flows,
// encrypted secrets, browser sessions, the operation ledger) and the
// vault's master key. Open returns the connect.Service that connect.Step
// runs on, so a URL step takes one call to set up:
//
//	data, err := datadir.Open("data", connect.Options{BaseURL: "http://127.0.0.1:8080"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer data.Close()
//	step := &connect.Step{Flows: data.Flows, Purpose: "billing_key", Name: "your billing account"}
//	step.Register(srv, &mcp.Tool{Name: "connect_billing", Description: "Connect the user's billing account."})
//	mux.Handle("/ui/", data.Flows.Handler())
//
// Losing the directory's master key file makes the stored secrets
// unreadable; copying the directory copies them, encrypted, with their
// key. Several server instances sharing one store use PostgreSQL
// (store/postgres) and a master key they share instead, wired with
// connect.New as cmd/elicitd does.
package datadir

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// DatabaseFile is the name of the SQLite database inside the directory;
// the master key is connect.MasterKeyFile beside it.
const DatabaseFile = "elicit.db"

// Dir is an open data directory.
type Dir struct {
	// Path is the directory, as given to Open.
	Path string
	// Store is the SQLite store in DatabaseFile; it serves any other
	// store.Store use of the server too (the operation ledger, say).
	Store *sqlite.Store
	// Flows runs the URL-mode flows and their pages on Store, with the
	// vault key of the directory.
	Flows *connect.Service
}

// Open opens the data directory path, creating it (mode 0700), its
// master key (connect.LoadOrCreateMasterKey: 32 random bytes, mode 0600)
// and its database (mode 0600) on first use, and returns its Service,
// made with opts (connect.New, whose rules apply: BaseURL is required,
// and the demo sign-in serves loopback only). opts.Store and
// opts.MasterKey must be unset: Open fills them. On error nothing stays
// open. Close the Dir when the server stops.
func Open(path string, opts connect.Options) (*Dir, error) {
	if opts.Store != nil || opts.MasterKey != nil {
		return nil, errors.New("datadir: Open sets Options.Store and Options.MasterKey itself; leave them unset")
	}
	key, err := connect.LoadOrCreateMasterKey(path)
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	st, err := sqlite.Open(filepath.Join(path, DatabaseFile))
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	opts.Store, opts.MasterKey = st, key
	flows, err := connect.New(opts)
	clear(key) // New keeps its own copy
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("datadir: %w", err)
	}
	return &Dir{Path: path, Store: st, Flows: flows}, nil
}

// Close closes the store. The Service must not be used afterwards.
func (d *Dir) Close() error { return d.Store.Close() }
