package gateway

import (
	"encoding/binary"
	"errors"
)

// The gateway's own requestState is a reqstate token (AES-256-GCM, bound
// to the user, the method, the name the client called, the arguments'
// digest, the call id, the round and an expiry); its payload says which
// upstream the call went to and what that upstream needs on the retry:
//
//	payload = version(1) kind name
//	kind 1 (relayed, a 2026-07-28 upstream): hasState(0|1) [uvarint len, the upstream's requestState]
//	kind 2 (held, a 2025 upstream):          instance[16] held[16] uvarint(seq) key peerURL
//
// where name, key and peerURL are uvarint-length-prefixed bytes.

const payloadVersion = 1

// Payload kinds.
const (
	kindRelayed byte = 1
	kindHeld    byte = 2
)

// payload is what the gateway seals beside the binding.
type payload struct {
	kind     byte
	upstream string // the upstream's name in the gateway's configuration
	// kindRelayed: the upstream's requestState, echoed byte for byte.
	hasState bool
	state    string
	// kindHeld: where the upstream call waits, and for which answer.
	instance [16]byte
	held     [16]byte
	seq      uint64
	key      string
	peerURL  string // "" when the holding instance takes no forwarded retries
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (p *payload) encode() []byte {
	b := make([]byte, 0, 8+len(p.upstream)+len(p.state)+len(p.key)+len(p.peerURL)+40)
	b = append(b, payloadVersion, p.kind)
	b = appendBytes(b, p.upstream)
	switch p.kind {
	case kindRelayed:
		if p.hasState {
			b = append(b, 1)
			b = appendBytes(b, p.state)
		} else {
			b = append(b, 0)
		}
	case kindHeld:
		b = append(b, p.instance[:]...)
		b = append(b, p.held[:]...)
		b = binary.AppendUvarint(b, p.seq)
		b = appendBytes(b, p.key)
		b = appendBytes(b, p.peerURL)
	}
	return b
}

var errPayload = errors.New("gateway: unreadable state payload")

// decodePayload reads what encode wrote; anything else is errPayload.
// The bytes come out of an authenticated token, so a failure means a bug
// or a token of another program sharing the keys, never a forgery.
func decodePayload(b []byte) (*payload, error) {
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	if len(b) < 2 || b[0] != payloadVersion {
		return nil, errPayload
	}
	p := &payload{kind: b[1]}
	b = b[2:]
	var ok bool
	if p.upstream, ok = str(); !ok || p.upstream == "" {
		return nil, errPayload
	}
	switch p.kind {
	case kindRelayed:
		if len(b) < 1 || b[0] > 1 {
			return nil, errPayload
		}
		p.hasState = b[0] == 1
		b = b[1:]
		if p.hasState {
			if p.state, ok = str(); !ok {
				return nil, errPayload
			}
		}
	case kindHeld:
		if len(b) < 32 {
			return nil, errPayload
		}
		copy(p.instance[:], b[:16])
		copy(p.held[:], b[16:32])
		b = b[32:]
		seq, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errPayload
		}
		p.seq, b = seq, b[k:]
		if p.key, ok = str(); !ok || p.key == "" {
			return nil, errPayload
		}
		if p.peerURL, ok = str(); !ok {
			return nil, errPayload
		}
	default:
		return nil, errPayload
	}
	if len(b) != 0 {
		return nil, errPayload
	}
	return p, nil
}
