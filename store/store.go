// Package store defines the persistence the URL-mode elicitation pages need:
// pending out-of-band flows, the sealed per-user secrets those flows collect,
// and browser login sessions. It holds interfaces and plain types only, so
// that SQLite (store/sqlite) and later PostgreSQL implementations can share
// one contract, checked by store/storetest.
//
// A Store never sees plaintext secrets: callers pass sealed (encrypted)
// blobs, keeping third-party credentials out of the database in the clear
// (SEC-U-S-08, SEC-U-S-10).
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (possibly wrapped) when the flow, secret or session
// does not exist. Test with errors.Is.
var ErrNotFound = errors.New("store: not found")

// ErrConflict is returned (possibly wrapped) when a write is refused because
// of the current state: a duplicate id on create, or a CompleteFlow on a flow
// that is no longer pending, has expired, or belongs to another principal.
// Test with errors.Is.
var ErrConflict = errors.New("store: conflict")

// FlowStatus is the state of a Flow.
type FlowStatus string

// Flow states. A flow only ever moves from pending to complete.
const (
	FlowPending  FlowStatus = "pending"
	FlowComplete FlowStatus = "complete"
)

// Flow is one URL-mode elicitation flow: a pending out-of-band step the user
// finishes in a browser on the server's own page.
type Flow struct {
	// ID is 32 lowercase hex characters (128 random bits). It names the flow
	// in the URL but is not a credential: completing it also needs a login
	// as Principal (SEC-U-S-01, SEC-U-S-06).
	ID string
	// Principal is the user the elicitation was made for.
	Principal string
	// Purpose says what the page collects; it is also the name the secret
	// is stored under, e.g. "billing_key".
	Purpose string
	// Status is FlowPending or FlowComplete.
	Status FlowStatus
	// CreatedAt and ExpiresAt bound the flow's life. Implementations keep at
	// least second precision.
	CreatedAt, ExpiresAt time.Time
	// CompletedAt is when CompleteFlow succeeded; zero while pending.
	CompletedAt time.Time
}

// Session is a browser login on the server's pages.
type Session struct {
	// ID is 256 random bits, base64url without padding; it is the cookie
	// value and therefore a credential.
	ID string
	// Principal is the signed-in user.
	Principal string
	// CSRF is the per-session anti-CSRF token forms must echo.
	CSRF string
	// CreatedAt and ExpiresAt bound the session's life.
	CreatedAt, ExpiresAt time.Time
}

// Store persists flows, sealed secrets and sessions. Implementations are
// safe for concurrent use. Errors other than ErrNotFound and ErrConflict are
// infrastructure failures.
type Store interface {
	// CreateFlow inserts f as given (the caller sets every field).
	// ErrConflict if f.ID already exists.
	CreateFlow(ctx context.Context, f *Flow) error
	// GetFlow returns the flow whatever its status or expiry.
	// ErrNotFound if there is none.
	GetFlow(ctx context.Context, id string) (*Flow, error)
	// CompleteFlow, in one transaction, checks that the flow exists
	// (else ErrNotFound), is pending, belongs to principal and has not
	// expired at now, i.e. now < ExpiresAt (else ErrConflict); then stores
	// sealedSecret as principal's secret named after the flow's Purpose,
	// replacing any earlier one, and marks the flow complete at now.
	// Nothing is written on failure, and of several concurrent calls for
	// one flow at most one succeeds.
	CompleteFlow(ctx context.Context, flowID, principal string, sealedSecret []byte, now time.Time) error
	// GetSecret returns principal's sealed secret called name.
	// ErrNotFound if there is none.
	GetSecret(ctx context.Context, principal, name string) ([]byte, error)
	// CreateSession inserts s. ErrConflict if s.ID already exists.
	CreateSession(ctx context.Context, s *Session) error
	// GetSession returns the session even if it has expired (the caller
	// checks ExpiresAt). ErrNotFound if there is none.
	GetSession(ctx context.Context, id string) (*Session, error)
	// DeleteSession removes the session; deleting a missing one is not an
	// error, so logout is idempotent.
	DeleteSession(ctx context.Context, id string) error
	// DeleteExpired removes flows (pending or complete) and sessions whose
	// ExpiresAt is before now, and returns how many rows went. Secrets are
	// kept: they belong to the user, not to the flow.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
	// Close releases the store's resources.
	Close() error
}
