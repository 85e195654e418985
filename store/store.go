// Package store defines the persistence elicit servers need: the pending
// out-of-band flows of URL-mode elicitation, the sealed per-user secrets
// those flows collect, browser login sessions, and the operation ledger
// with the application records its effects write. It holds interfaces and
// plain types only, so that the SQLite (store/sqlite) and PostgreSQL
// (store/postgres) implementations share one contract, checked by
// store/storetest.
//
// A Store never sees plaintext secrets: callers pass sealed (encrypted)
// blobs, keeping third-party credentials out of the database in the clear
// (SEC-U-S-08, SEC-U-S-10).
//
// # Public surface
//
// For servers: Store and its parts (Ledger, Effects, KeyRing, Tasks) with
// their plain types (Flow, Session, Operation, Record, StateKey, Task,
// Retention, SweepResult) and errors (ErrNotFound, ErrConflict with
// RecordedError, ErrUnavailable, ErrStorageFull). For driver authors, so
// every driver keeps one contract: CheckRecordKey, RecordData, SealingKey,
// Unavailable, RunSweep with SweepDeleter and SweepBatch, and the Max*
// limits; store/storetest checks a driver against it.
package store

import (
	"context"
	"errors"
	"fmt"
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

// RecordedError is Ledger.CompleteOperation's error when the ledger
// already holds the operation and the driver found its row before running
// the effect (as it does unless the row appeared while the effect ran). It
// wraps ErrConflict and carries the recorded row, read in the same
// transaction, so that a caller answering a replayed retry needs no
// GetOperation: on PostgreSQL, one round trip less. Test with errors.As.
type RecordedError struct {
	// Op is the recorded operation, as GetOperation returns it.
	Op *Operation
}

func (e *RecordedError) Error() string { return "store: operation already recorded" }

// Unwrap returns ErrConflict.
func (e *RecordedError) Unwrap() error { return ErrConflict }

// ErrUnavailable is wrapped by the errors of a call the store could not
// serve now but probably can soon: the database cannot be reached or is
// shutting down, the call's deadline passed (a stalled server, a queue
// for a pooled connection), other writers held the lock past the busy
// timeout, or the disk is full (ErrStorageFull). Nothing was written,
// except when the deadline hit a commit that the server then finished:
// a retry then finds the operation recorded (Ledger), so retrying is
// safe either way. Such errors also have a method Unavailable() bool that
// returns true, which mcpserver and connect answer with HTTP 503,
// Retry-After and a retryable -32603. Test with errors.Is.
var ErrUnavailable = errors.New("store: temporarily unavailable")

// ErrStorageFull is wrapped by the errors of a write refused because the
// database's disk or quota is full (SQLite SQLITE_FULL, PostgreSQL
// SQLSTATE 53100 disk_full). errors.Is matches ErrUnavailable too: the
// write did nothing and works again once space is freed. Their method
// UnavailableReason returns "storage_full".
var ErrStorageFull = errors.New("store: storage full")

// Unavailable returns cause marked as an outage: errors.Is matches
// ErrUnavailable, reason (ErrUnavailable or ErrStorageFull) and cause's
// own chain, and its Unavailable method returns true. Drivers use it for
// the errors ErrUnavailable describes. A nil cause gives nil.
func Unavailable(reason, cause error) error {
	if cause == nil {
		return nil
	}
	var ue *unavailableError
	if errors.As(cause, &ue) && (ue.reason == reason || reason == ErrUnavailable) {
		return cause // already marked
	}
	return &unavailableError{reason: reason, cause: cause}
}

type unavailableError struct{ reason, cause error }

func (e *unavailableError) Error() string {
	if e.reason == ErrStorageFull {
		return "storage full: " + e.cause.Error()
	}
	return e.cause.Error()
}

func (e *unavailableError) Unwrap() []error { return []error{e.reason, e.cause} }

func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unavailable marks the error as a passing outage (see mcpserver).
func (e *unavailableError) Unavailable() bool { return true }

// UnavailableReason is "storage_full" for ErrStorageFull, else "".
func (e *unavailableError) UnavailableReason() string {
	if e.reason == ErrStorageFull {
		return "storage_full"
	}
	return ""
}

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
	// PendingFlow returns the principal's newest flow for purpose that is
	// still pending and not expired at now, so a repeated request can reuse
	// it instead of piling up rows. ErrNotFound if there is none.
	PendingFlow(ctx context.Context, principal, purpose string, now time.Time) (*Flow, error)
	// CompleteFlow, in one transaction, checks that the flow exists
	// (else ErrNotFound), is pending, belongs to principal and has not
	// expired at now, i.e. now < ExpiresAt (else ErrConflict); then stores
	// sealedSecret as principal's secret named after the flow's Purpose,
	// replacing any earlier one, and marks the flow complete at now.
	// Nothing is written on failure, and of several concurrent calls for
	// one flow at most one succeeds.
	CompleteFlow(ctx context.Context, flowID, principal string, sealedSecret []byte, now time.Time) error
	// CloseFlow ends principal's flow before its time, in one step with
	// the check that it is still pending: its ExpiresAt becomes now
	// (unless already earlier), so CompleteFlow refuses it and
	// PendingFlow no longer returns it. A declined or cancelled URL step
	// closes its flow this way, so that its link stops taking input.
	// Closing a pending flow that has expired already is not an error.
	// ErrNotFound if principal has no flow id; ErrConflict if it is
	// complete (nothing is written then).
	CloseFlow(ctx context.Context, flowID, principal string, now time.Time) error
	// CloseFlowAndRecord is CloseFlow(flowID, op.Principal,
	// op.CompletedAt) and CompleteOperation(op, nil) in one transaction:
	// both are written or neither, so no reader sees the flow closed by
	// this call without op, and a failure (a crash included) leaves
	// neither. A URL step records why its flow ended this way, so a retry
	// that finds the flow ended finds the outcome too.
	//
	// The ledger is checked first: if it holds op.ID, nothing is written,
	// whatever the flow's state (pending, closed, complete or swept), and
	// the error is a *RecordedError carrying the recorded row. So of
	// several closes of one flow under one operation id, concurrent or
	// not, exactly one succeeds and the others get its row: the first
	// outcome holds. Otherwise, as CloseFlow: ErrNotFound if op.Principal
	// has no flow flowID, ErrConflict (not a *RecordedError) if it is
	// complete, and nothing is written then; a pending flow that has
	// expired already is closed, and op recorded. A nil op, or an empty or
	// over-long op.ID, is an error.
	CloseFlowAndRecord(ctx context.Context, flowID string, op *Operation) error
	// GetSecret returns principal's sealed secret called name.
	// ErrNotFound if there is none.
	GetSecret(ctx context.Context, principal, name string) ([]byte, error)
	// HasSecret reports whether principal has a sealed secret called
	// name, without reading it: what a tool that only says whether an
	// account is connected needs.
	HasSecret(ctx context.Context, principal, name string) (bool, error)
	// ReplaceSecret replaces principal's sealed secret called name with
	// sealed, if the stored one is still byte for byte old: a compare and
	// swap, so a value derived from old (a refreshed OAuth token) never
	// overwrites a newer one written meanwhile (a reconnect). ErrNotFound
	// if there is no such secret, ErrConflict if it is no longer old;
	// nothing is written then.
	ReplaceSecret(ctx context.Context, principal, name string, old, sealed []byte, now time.Time) error
	// CreateSession inserts s. ErrConflict if s.ID already exists.
	CreateSession(ctx context.Context, s *Session) error
	// GetSession returns the session even if it has expired (the caller
	// checks ExpiresAt). ErrNotFound if there is none.
	GetSession(ctx context.Context, id string) (*Session, error)
	// DeleteSession removes the session; deleting a missing one is not an
	// error, so logout is idempotent.
	DeleteSession(ctx context.Context, id string) error
	// DeleteExpired removes flows (pending or complete) and sessions whose
	// ExpiresAt is before now, and returns how many rows went: Sweep with
	// a zero Retention. Secrets are kept: they belong to the user, not to
	// the flow. So are operations and records.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
	// Sweep removes what has outlived r at now (see Retention) and counts
	// it by kind. It deletes in transactions of at most SweepBatch rows,
	// each under the store's call deadline, so a large backlog never holds
	// the write lock for long; on error the result counts what went
	// before it. Records go before operations, so an operation whose last
	// record goes goes in the same sweep if it is old enough.
	Sweep(ctx context.Context, now time.Time, r *Retention) (*SweepResult, error)
	// Health reports whether the store serves calls now: nil, or an error
	// wrapping ErrUnavailable (and ErrStorageFull while writes fail for
	// lack of space). It reads one row; after a write failed with
	// ErrStorageFull it writes one too (a probe row of its own), so the
	// store reads as healthy again only once writes work.
	Health(ctx context.Context) error
	// Close releases the store's resources.
	Close() error

	Ledger
	KeyRing
	Tasks
}

// Operation is one row of the ledger: the recorded outcome of one MRTR
// operation (mcpserver's Request.OperationID). A retry that is replayed
// after the operation completed finds it here and answers with Result
// instead of running the effect again (ELICIT-STEP-07; RS-S-08: single use needs server-side bookkeeping). Rows are
// written once and never change.
type Operation struct {
	// ID is the operation id, 1–128 bytes (mcpserver makes 32 hex
	// characters, 128 random bits).
	ID string
	// Principal is the user the operation ran for.
	Principal string
	// Name says what ran, e.g. "tools/call export_report".
	Name string
	// Outcome is the application's outcome label, e.g. "prepared", "sent",
	// "declined", "cancelled". Outcomes are not faults.
	Outcome string
	// Result is the recorded result, opaque to the store (e.g. the JSON of
	// the CallToolResult that was returned). Nil reads back as empty.
	Result []byte
	// CompletedAt is when the operation completed (second precision at
	// least).
	CompletedAt time.Time
}

// Record is one application row written by an operation's effect: a
// report draft, a send. Records are addressed by (Kind, ID) and owned by
// Principal; Status is the application's state of the row.
type Record struct {
	// Kind names the collection, e.g. "report_draft"; 1–64 bytes.
	Kind string
	// ID is unique within Kind; 1–128 bytes.
	ID string
	// Principal owns the record.
	Principal string
	// Status is the application state, e.g. "prepared" or "sent".
	Status string
	// Data is the application payload, opaque to the store. Nil reads back
	// as empty.
	Data []byte
	// OperationID is the operation whose effect last wrote the record; the
	// store sets it. It lets an investigator tie a row to its decision.
	OperationID string
	// Version is 1 after Insert and grows by one with each Update; the
	// store sets it. Update is conditional on it (optimistic locking).
	Version int64
	// CreatedAt and UpdatedAt are set by the caller.
	CreatedAt, UpdatedAt time.Time
}

// Effects is what an effect may do inside CompleteOperation's transaction.
// It is valid only until the effect returns.
type Effects interface {
	// Insert adds r, setting r.Version to 1 and r.OperationID to the
	// operation's id. ErrConflict if (Kind, ID) exists; a driver that
	// sends the insert ahead (see Ledger.CompleteOperation) reports that
	// in a second call of the effect instead.
	Insert(ctx context.Context, r *Record) error
	// Get returns the record as this transaction sees it. ErrNotFound if
	// there is none.
	Get(ctx context.Context, kind, id string) (*Record, error)
	// Count returns how many records of kind principal owns whose
	// CreatedAt is at or after since, as this transaction sees them, and
	// locks (kind, principal) until the transaction ends: of concurrent
	// operations that Count and then Insert, each counts the inserts of
	// those that committed before it, so a cap checked this way holds.
	Count(ctx context.Context, kind, principal string, since time.Time) (int64, error)
	// Update writes r.Status, r.Data and r.UpdatedAt to the record (r.Kind,
	// r.ID) if its stored Version still equals r.Version, then increments
	// r.Version and sets r.OperationID. ErrNotFound if there is no such
	// record, ErrConflict if its version moved on.
	Update(ctx context.Context, r *Record) error
}

// Ledger records operations together with their effects. Implementations
// are safe for concurrent use.
type Ledger interface {
	// CompleteOperation runs effect and records op in one transaction, so
	// the effect and its ledger row are written together or not at all. If
	// the ledger already holds op.ID, effect does not run and the error
	// wraps ErrConflict: a *RecordedError carrying the recorded row, or,
	// when the row appeared only while the effect ran, ErrConflict alone
	// (read the row with GetOperation then). A caller may therefore skip
	// its own replay lookup before a call that completes. If
	// effect returns an error, nothing is written and that error is
	// returned as is. effect may set op.Outcome and op.Result, which are
	// recorded after it returns nil; a nil effect records op alone. Of
	// several concurrent calls for one op.ID, at most one runs its effect
	// to commit. An empty or over-long op.ID is an error.
	//
	// effect must act only through fx (and on op): a driver may call it
	// a second time after rolling back everything the first call wrote
	// (store/postgres does when a write it sent ahead to save a round
	// trip fails at the server, so that the second call sees that write's
	// error where it makes it). No call returns before the outcome is
	// final: nil means effect's writes and op are durably committed.
	CompleteOperation(ctx context.Context, op *Operation, effect func(ctx context.Context, fx Effects) error) error
	// GetOperation returns the recorded operation. ErrNotFound if there is
	// none.
	GetOperation(ctx context.Context, id string) (*Operation, error)
	// GetRecord returns one record. ErrNotFound if there is none.
	GetRecord(ctx context.Context, kind, id string) (*Record, error)
	// ListRecords returns principal's records of kind, oldest first (by
	// CreatedAt, then ID); an empty slice when there are none.
	ListRecords(ctx context.Context, kind, principal string) ([]*Record, error)
}

// Limits on ledger identifiers, in bytes.
const (
	MaxOperationIDLen = 128
	MaxRecordKindLen  = 64
	MaxRecordIDLen    = 128
)

// CheckRecordKey reports an error unless kind is 1–MaxRecordKindLen and id
// 1–MaxRecordIDLen bytes; drivers call it before inserting a record.
func CheckRecordKey(kind, id string) error {
	if kind == "" || len(kind) > MaxRecordKindLen || id == "" || len(id) > MaxRecordIDLen {
		return errors.New("store: record kind must be 1 to 64 bytes and id 1 to 128 bytes")
	}
	return nil
}

// RecordData returns the bytes a driver stores for r.Data: never nil, so
// the NOT NULL column holds an empty value. It refuses a nil r.
func RecordData(r *Record) ([]byte, error) {
	if r == nil {
		return nil, errors.New("store: nil record")
	}
	if r.Data == nil {
		return []byte{}, nil
	}
	return r.Data, nil
}

// StateKey is one key of the shared requestState key ring (reqstate),
// kept in the store so that every instance sharing it sees rotations.
type StateKey struct {
	// ID names the key in the states it seals; 1–MaxStateKeyIDLen bytes.
	ID string
	// Sealed is the key's secret encrypted by the caller (elicitd seals it
	// under the master key); the store never sees it in the clear.
	Sealed []byte
	// CreatedAt is when the key was added (second precision at least).
	CreatedAt time.Time
	// ActivatesAt is when the key starts to seal (it opens from the
	// start); zero means CreatedAt. Every instance reads it from the
	// store, so all agree on which key seals at a given time (SealingKey)
	// whatever their refresh intervals.
	ActivatesAt time.Time
}

// Activation returns when k starts to seal: ActivatesAt, or CreatedAt
// when that is zero.
func (k *StateKey) Activation() time.Time {
	if k.ActivatesAt.IsZero() {
		return k.CreatedAt
	}
	return k.ActivatesAt
}

// SealingKey returns the index in keys (newest first, as StateKeys returns
// them) of the key that seals at now: the newest whose Activation is not
// after now; when every key is still to activate, the oldest. -1 for no
// keys.
func SealingKey(keys []*StateKey, now time.Time) int {
	for i, k := range keys {
		if !k.Activation().After(now) {
			return i
		}
	}
	return len(keys) - 1
}

// MaxStateKeyIDLen bounds StateKey.ID, in bytes.
const MaxStateKeyIDLen = 64

// Check reports what makes k unfit for AddStateKey: nil, an empty or
// over-long ID, or no sealed secret.
func (k *StateKey) Check() error {
	switch {
	case k == nil:
		return errors.New("nil state key")
	case k.ID == "" || len(k.ID) > MaxStateKeyIDLen:
		return fmt.Errorf("state key id must be 1 to %d bytes", MaxStateKeyIDLen)
	case len(k.Sealed) == 0:
		return errors.New("state key has no sealed secret")
	}
	return nil
}

// KeyRing is the shared requestState key ring: every key opens; the key
// that seals at a time t is the newest (the one added last) whose
// Activation is not after t (SealingKey). Implementations are safe for
// concurrent use.
type KeyRing interface {
	// AddStateKey adds k as the newest key; it seals from k.Activation()
	// on. ErrConflict if k.ID exists; an empty or over-long ID or an
	// empty Sealed is an error.
	AddStateKey(ctx context.Context, k *StateKey) error
	// StateKeys returns every key, the newest first; an empty slice when
	// there is none. ActivatesAt is always set.
	StateKeys(ctx context.Context) ([]*StateKey, error)
	// RetireStateKey removes the key id, in one step with the check that
	// at now it neither seals nor is still to activate (so the ring keeps
	// its sealing key and every pending one): ErrConflict if it does or
	// is, and ErrNotFound if there is no such key.
	RetireStateKey(ctx context.Context, id string, now time.Time) error
	// RemoveStateKey removes the key id whatever its role: the repair of
	// a key no instance can open (sealed under another master key).
	// ErrNotFound if there is no such key.
	RemoveStateKey(ctx context.Context, id string) error
	// MasterKeyCheck returns the master-key check value stored with the
	// ring (elicitd: an HMAC of a fixed text under the master key), or
	// ErrNotFound when none is stored yet.
	MasterKeyCheck(ctx context.Context) ([]byte, error)
	// InitMasterKeyCheck stores check unless a value is stored already,
	// and returns the stored value: check, or the one stored first (so
	// concurrent first starts agree). An empty check is an error.
	InitMasterKeyCheck(ctx context.Context, check []byte) ([]byte, error)
}

// Retention says how long Sweep keeps what has finished. The zero value
// removes flows and sessions once they expire and keeps every operation
// and record.
type Retention struct {
	// FlowGrace keeps a flow (pending or complete) this long after its
	// ExpiresAt, so its page can still say it expired; then it goes.
	FlowGrace time.Duration
	// Operations is how long after its CompletedAt an operation that no
	// record refers to goes: one whose outcome wrote nothing (declined,
	// cancelled, refused), or whose records moved on to a later operation
	// or went. Zero keeps every operation. It must exceed the longest a
	// replayed retry can still arrive (the requestState lifetime plus
	// clock skew), or a replay after success would run the effect again
	// instead of returning the recorded result. An operation a record
	// refers to (Record.OperationID) stays as long as that record: it is
	// the record's audit trail.
	Operations time.Duration
	// Records maps a record kind to how long after its UpdatedAt a record
	// of that kind goes. Kinds not listed are kept: they are the
	// application's data.
	Records map[string]time.Duration
}

// SweepResult counts the rows one Sweep removed.
type SweepResult struct {
	Flows, Sessions, Operations int64
	// Records counts by kind, for the kinds of Retention.Records.
	Records map[string]int64
}

// Total is the number of rows removed.
func (r *SweepResult) Total() int64 {
	n := r.Flows + r.Sessions + r.Operations
	for _, c := range r.Records {
		n += c
	}
	return n
}

// SweepBatch is the most rows one transaction of a Sweep deletes.
const SweepBatch = 500

// SweepDeleter is what a driver gives RunSweep: each method deletes at
// most limit rows that are due (flows and sessions whose ExpiresAt is
// before t, records of kind updated before t, operations completed before
// t that no record refers to) in one transaction, and returns how many.
type SweepDeleter interface {
	DeleteFlows(ctx context.Context, t time.Time, limit int) (int64, error)
	DeleteSessions(ctx context.Context, t time.Time, limit int) (int64, error)
	DeleteRecords(ctx context.Context, kind string, t time.Time, limit int) (int64, error)
	DeleteOperations(ctx context.Context, t time.Time, limit int) (int64, error)
}

// RunSweep is Sweep for drivers: it calls d in the order Sweep documents,
// in batches of SweepBatch, until each kind has nothing due.
func RunSweep(ctx context.Context, d SweepDeleter, now time.Time, r *Retention) (*SweepResult, error) {
	if r == nil {
		r = &Retention{}
	}
	res := &SweepResult{Records: map[string]int64{}}
	drain := func(n *int64, del func(ctx context.Context, limit int) (int64, error)) error {
		for {
			k, err := del(ctx, SweepBatch)
			*n += k
			if err != nil || k < SweepBatch {
				return err
			}
		}
	}
	if err := drain(&res.Flows, func(ctx context.Context, limit int) (int64, error) {
		return d.DeleteFlows(ctx, now.Add(-r.FlowGrace), limit)
	}); err != nil {
		return res, err
	}
	if err := drain(&res.Sessions, func(ctx context.Context, limit int) (int64, error) {
		return d.DeleteSessions(ctx, now, limit)
	}); err != nil {
		return res, err
	}
	for kind, age := range r.Records {
		var n int64
		err := drain(&n, func(ctx context.Context, limit int) (int64, error) {
			return d.DeleteRecords(ctx, kind, now.Add(-age), limit)
		})
		res.Records[kind] = n
		if err != nil {
			return res, err
		}
	}
	if r.Operations > 0 {
		if err := drain(&res.Operations, func(ctx context.Context, limit int) (int64, error) {
			return d.DeleteOperations(ctx, now.Add(-r.Operations), limit)
		}); err != nil {
			return res, err
		}
	}
	return res, nil
}
