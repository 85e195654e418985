// Package datadir keeps what a server's URL steps need in one directory,
// for a server that runs as one process: an SQLite database (flows,
// encrypted secrets, browser sessions, the operation ledger, the
// requestState key ring) and the master key. Open returns the
// connect.Service that connect.Step runs on and the requestState Sealer,
// so a URL step takes one call to set up and questions in progress
// survive a restart:
//
//	data, err := datadir.Open("data", connect.Options{BaseURL: "http://127.0.0.1:8080"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer data.Close()
//	srv := mcpserver.New(mcp.Implementation{Name: "billing", Version: "1.0.0"}, &mcpserver.Options{Sealer: data.Sealer})
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
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// DatabaseFile is the name of the SQLite database inside the directory;
// the master key is keyring.MasterKeyFile beside it.
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
	// Sealer seals requestState with the directory's key ring
	// (reqstate/keyring: a key derived from the master key until a
	// rotation), so a state sealed before a restart opens after it. Give
	// it to mcpserver.Options.Sealer. Its TTL is reqstate.DefaultTTL, or
	// the Options' FlowTTL when that is longer, so that a link never
	// outlives the state it was sent with. The ring is read once, by
	// Open: a rotation (keyring.Ring.Rotate) takes effect at the next
	// Open.
	Sealer *reqstate.Sealer
}

// Open opens the data directory path, creating it (mode 0700), its
// master key (keyring.LoadOrCreateMasterKey: 32 random bytes, mode 0600)
// and its database (mode 0600) on first use, and returns its Service,
// made with opts (connect.New, whose rules apply: BaseURL is required,
// and the demo sign-in serves loopback only), and its Sealer. opts.Store
// and opts.MasterKey must be unset: Open fills them. A master key file
// that is not the one the database was set up with is refused
// (keyring.ErrWrongMasterKey). On error nothing stays open. Close the Dir
// when the server stops.
func Open(path string, opts connect.Options) (*Dir, error) {
	if opts.Store != nil || opts.MasterKey != nil {
		return nil, errors.New("datadir: Open sets Options.Store and Options.MasterKey itself; leave them unset")
	}
	key, err := keyring.LoadOrCreateMasterKey(path)
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	defer clear(key) // connect.New and keyring.New keep their own copies
	st, err := sqlite.Open(filepath.Join(path, DatabaseFile))
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	d, err := open(path, st, key, opts)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("datadir: %w", err)
	}
	return d, nil
}

func open(path string, st *sqlite.Store, key []byte, opts connect.Options) (*Dir, error) {
	ring, err := keyring.New(st, key, nil)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := ring.VerifyMaster(ctx); err != nil {
		return nil, err
	}
	keys, err := ring.Load(ctx)
	if err != nil {
		return nil, err
	}
	sealer, err := reqstate.New(keys, &reqstate.Options{TTL: max(reqstate.DefaultTTL, opts.FlowTTL)})
	if err != nil {
		return nil, err
	}
	opts.Store, opts.MasterKey = st, key
	flows, err := connect.New(opts)
	if err != nil {
		return nil, err
	}
	return &Dir{Path: path, Store: st, Flows: flows, Sealer: sealer}, nil
}

// Close closes the store. The Service must not be used afterwards.
func (d *Dir) Close() error { return d.Store.Close() }
