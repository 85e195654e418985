// Package reqstate seals and opens MRTR requestState values
// (basic/patterns/mrtr.mdx §Server Requirements, RS-S-01…RS-S-09).
//
// A sealed state is AES-256-GCM over compact binary claims that bind it to
// the authenticated principal, the request method, the target name (tool,
// prompt or resource URI), the SHA-256 of the canonical arguments, an
// operation id, a round number and an expiry, plus an opaque application
// payload. The token is base64url without padding:
//
//	token  = base64url( 0x01 | len(kid) | kid | nonce[12] | ciphertext+tag )
//
// where the header bytes (version, key id) are the AEAD's additional data,
// so several keys can open while one seals (rotation).
//
// Every failure to open is reported to the caller as an *Error whose
// Reason says why (for the server log); the message the client sees must be
// only ErrInvalid's text.
package reqstate

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcp-elicit/elicit/internal/aead"
)

// DefaultTTL is how long a sealed state stays valid unless Options say otherwise.
const DefaultTTL = 10 * time.Minute

// MaxTokenLen bounds the length of a token accepted by Open (bytes).
const MaxTokenLen = 16 << 10

const (
	version = 1
	keySize = aead.KeySize
)

// ErrInvalid is the one error a client may learn about a bad requestState.
var ErrInvalid = errors.New("invalid or expired requestState")

// Reason says why a state was refused. It is for server logs only.
type Reason string

// Reasons reported by Open.
const (
	ReasonMalformed   Reason = "malformed"       // not base64url, truncated, bad header
	ReasonUnknownKey  Reason = "unknown_key"     // key id not in the key ring
	ReasonTampered    Reason = "tampered"        // AEAD authentication failed
	ReasonExpired     Reason = "expired"         // past its expiry
	ReasonNotYetValid Reason = "not_yet_valid"   // issued in the future (clock skew or forgery)
	ReasonPrincipal   Reason = "other_principal" // sealed for another user
	ReasonMethod      Reason = "other_method"    // sealed for another request method
	ReasonName        Reason = "other_target"    // sealed for another tool, prompt or resource
	ReasonArguments   Reason = "other_arguments" // sealed for other arguments
)

// Error is returned by Open. It matches ErrInvalid with errors.Is, and
// its Error text is always ErrInvalid's: Reason is for the log.
type Error struct{ Reason Reason }

func (e *Error) Error() string        { return ErrInvalid.Error() }
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Key is one sealing key: a short public id (1–255 bytes, carried in the
// token) and a 32-byte secret.
type Key struct {
	ID     string
	Secret []byte
}

// Options tune a Sealer. The zero value is valid.
type Options struct {
	// TTL is the validity of a sealed state; 0 means DefaultTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
	// Skew is the allowed clock difference between instances for IssuedAt
	// checks; 0 means 1 minute.
	Skew time.Duration
}

// Sealer seals with its first key and opens with any of its keys. It is
// safe for concurrent use, SetKeys included.
type Sealer struct {
	keys atomic.Pointer[keyRing]
	ttl  time.Duration
	skew time.Duration
	now  func() time.Time
}

// keyRing is the sealing key and every opening key; SetKeys swaps it whole.
type keyRing struct {
	seal *keyEntry
	open map[string]*keyEntry
}

type keyEntry struct {
	id     string
	header []byte
	aead   *aead.AEAD
}

// New returns a Sealer that seals with keys[0] and opens with any of keys.
// It fails when there is no key, a secret is not 32 bytes, an id is empty,
// longer than 255 bytes, or repeated.
func New(keys []Key, opts *Options) (*Sealer, error) {
	s := &Sealer{ttl: DefaultTTL, skew: time.Minute, now: time.Now}
	if opts != nil {
		if opts.TTL > 0 {
			s.ttl = opts.TTL
		}
		if opts.Now != nil {
			s.now = opts.Now
		}
		if opts.Skew > 0 {
			s.skew = opts.Skew
		}
	}
	if err := s.SetKeys(keys); err != nil {
		return nil, err
	}
	return s, nil
}

// SetKeys replaces the key ring: keys[0] seals from now on, and any of
// keys opens. States sealed with a key that is no longer in keys stop
// opening (ReasonUnknownKey). The errors are New's; on error the ring is
// unchanged.
func (s *Sealer) SetKeys(keys []Key) error {
	if len(keys) == 0 {
		return errors.New("reqstate: at least one key is needed")
	}
	r := &keyRing{open: make(map[string]*keyEntry, len(keys))}
	for i, k := range keys {
		if k.ID == "" || len(k.ID) > 255 {
			return fmt.Errorf("reqstate: key %d: id must be 1 to 255 bytes", i)
		}
		if len(k.Secret) != keySize {
			return fmt.Errorf("reqstate: key %q: secret must be %d bytes", k.ID, keySize)
		}
		if _, dup := r.open[k.ID]; dup {
			return fmt.Errorf("reqstate: key id %q repeated", k.ID)
		}
		a, err := aead.New(k.Secret)
		if err != nil {
			return fmt.Errorf("reqstate: key %q: %w", k.ID, err)
		}
		e := &keyEntry{id: k.ID, aead: a, header: append([]byte{version, byte(len(k.ID))}, k.ID...)}
		r.open[k.ID] = e
		if i == 0 {
			r.seal = e
		}
	}
	s.keys.Store(r)
	return nil
}

// KeyIDs returns the ids of the current ring, the sealing key first.
func (s *Sealer) KeyIDs() []string {
	r := s.keys.Load()
	ids := []string{r.seal.id}
	for id := range r.open {
		if id != r.seal.id {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids[1:])
	return ids
}

// NewKey returns a Key with the given id and a fresh random secret.
func NewKey(id string) Key {
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		panic("reqstate: crypto/rand failed: " + err.Error())
	}
	return Key{ID: id, Secret: secret}
}

// Binding is what a state must match on the request that presents it.
type Binding struct {
	Principal  string   // authenticated user ("" when the server has no auth)
	Method     string   // e.g. "tools/call"
	Name       string   // tool or prompt name, or resource URI
	ArgsDigest [32]byte // DigestArguments of the request's arguments
}

// Claims are the sealed contents.
type Claims struct {
	Binding
	// OperationID identifies one logical operation across its rounds.
	OperationID [16]byte
	// Round counts interim results for this operation, from 1.
	Round uint32
	// IssuedAt and ExpiresAt are set by Seal (Unix seconds precision).
	IssuedAt, ExpiresAt time.Time
	// Payload is the application's own state (library and handler data).
	Payload []byte
}

// TTL returns the validity Seal gives a state.
func (s *Sealer) TTL() time.Duration { return s.ttl }

// Seal sets c.IssuedAt and c.ExpiresAt from the clock and TTL, and returns
// the token. The Payload is encrypted, never readable by the client.
func (s *Sealer) Seal(c *Claims) (string, error) {
	now := s.now()
	c.IssuedAt = time.Unix(now.Unix(), 0)
	c.ExpiresAt = time.Unix(now.Add(s.ttl).Unix(), 0)
	if len(c.Principal) > 0xffff || len(c.Method) > 0xffff || len(c.Name) > 0xffff {
		return "", errors.New("reqstate: binding field too long")
	}
	k := s.keys.Load().seal
	plainLen := 2 + len(c.Principal) + 2 + len(c.Method) + 2 + len(c.Name) + 32 + 16 + 4 + 8 + 8 + len(c.Payload)
	plain := make([]byte, 0, plainLen)
	plain = appendString(plain, c.Principal)
	plain = appendString(plain, c.Method)
	plain = appendString(plain, c.Name)
	plain = append(plain, c.ArgsDigest[:]...)
	plain = append(plain, c.OperationID[:]...)
	plain = binary.BigEndian.AppendUint32(plain, c.Round)
	plain = binary.BigEndian.AppendUint64(plain, uint64(c.IssuedAt.Unix()))
	plain = binary.BigEndian.AppendUint64(plain, uint64(c.ExpiresAt.Unix()))
	plain = append(plain, c.Payload...)
	raw := make([]byte, 0, len(k.header)+plainLen+aead.Overhead)
	raw = k.aead.Seal(append(raw, k.header...), plain, k.header)
	if len(raw)*4/3+4 > MaxTokenLen {
		return "", errors.New("reqstate: payload too large")
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// Open verifies token and checks it against b and the clock. It returns
// the claims, or an *Error (matching ErrInvalid) giving the reason. After
// authentication the checks run in this order: principal, method, target
// name, expiry, issue time, arguments. So ReasonExpired and
// ReasonArguments both mean the token is authentic and was sealed for b's
// principal, method and name.
func (s *Sealer) Open(token string, b Binding) (*Claims, error) {
	if len(token) == 0 || len(token) > MaxTokenLen {
		return nil, &Error{ReasonMalformed}
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) < 2 || raw[0] != version {
		return nil, &Error{ReasonMalformed}
	}
	idLen := int(raw[1])
	hdrLen := 2 + idLen
	if idLen == 0 || len(raw) < hdrLen+aead.Overhead {
		return nil, &Error{ReasonMalformed}
	}
	k, ok := s.keys.Load().open[string(raw[2:hdrLen])]
	if !ok {
		return nil, &Error{ReasonUnknownKey}
	}
	plain, err := k.aead.Open(raw[hdrLen:], raw[:hdrLen])
	if err != nil {
		return nil, &Error{ReasonTampered}
	}
	c, ok := decodeClaims(plain)
	if !ok {
		// Authenticated but unreadable: only a bug of ours can do this.
		return nil, &Error{ReasonMalformed}
	}
	// Who and what first: ReasonExpired and ReasonArguments then imply an
	// authentic state of this principal for this method and target, which
	// a caller may answer by starting afresh instead of refusing.
	now := s.now()
	switch {
	case c.Principal != b.Principal:
		return nil, &Error{ReasonPrincipal}
	case c.Method != b.Method:
		return nil, &Error{ReasonMethod}
	case c.Name != b.Name:
		return nil, &Error{ReasonName}
	case !now.Before(c.ExpiresAt):
		return nil, &Error{ReasonExpired}
	case c.IssuedAt.After(now.Add(s.skew)):
		return nil, &Error{ReasonNotYetValid}
	case c.ArgsDigest != b.ArgsDigest:
		return nil, &Error{ReasonArguments}
	}
	return c, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, bool) {
	if len(b) < 2 {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return "", nil, false
	}
	return string(b[2 : 2+n]), b[2+n:], true
}

func decodeClaims(b []byte) (*Claims, bool) {
	c := new(Claims)
	var ok bool
	if c.Principal, b, ok = readString(b); !ok {
		return nil, false
	}
	if c.Method, b, ok = readString(b); !ok {
		return nil, false
	}
	if c.Name, b, ok = readString(b); !ok {
		return nil, false
	}
	if len(b) < 32+16+4+8+8 {
		return nil, false
	}
	copy(c.ArgsDigest[:], b)
	copy(c.OperationID[:], b[32:])
	c.Round = binary.BigEndian.Uint32(b[48:])
	c.IssuedAt = time.Unix(int64(binary.BigEndian.Uint64(b[52:])), 0)
	c.ExpiresAt = time.Unix(int64(binary.BigEndian.Uint64(b[60:])), 0)
	if rest := b[68:]; len(rest) > 0 {
		c.Payload = rest
	}
	return c, true
}

// emptyArgsDigest is the digest of "{}", used for absent, null and empty arguments.
var emptyArgsDigest = sha256.Sum256([]byte("{}"))

// DigestArguments returns the SHA-256 of the canonical JSON of args: object
// members sorted by key, no insignificant white space, numbers as written.
// Absent, null and {} arguments share one digest. It fails only on invalid JSON.
func DigestArguments(args json.RawMessage) ([32]byte, error) {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
		return emptyArgsDigest, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return [32]byte{}, fmt.Errorf("reqstate: arguments: %w", err)
	}
	canon, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return [32]byte{}, fmt.Errorf("reqstate: arguments: %w", err)
	}
	return sha256.Sum256(canon), nil
}
