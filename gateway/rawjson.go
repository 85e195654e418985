package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// object is a JSON object read member by member, each value kept as the
// bytes that arrived, so that what the gateway relays (inputRequests, a
// tool's content, an error's data) leaves it as the upstream sent it,
// while the gateway sets the few members it owns (requestState, _meta,
// a renamed name).
type object struct {
	names  []string
	values []jsontext.Value
}

var errNotObject = errors.New("not a JSON object")

// objectDecoder is parseObject's decoder and its reader, reused: they
// are most of what parsing a small object allocates.
type objectDecoder struct {
	dec *jsontext.Decoder
	rd  bytes.Reader
}

var objectDecoders = sync.Pool{New: func() any {
	d := &objectDecoder{}
	d.dec = jsontext.NewDecoder(&d.rd)
	return d
}}

// parseObject reads raw as one JSON object; a repeated member name, a
// value that is not an object, invalid JSON inside a member's value, or
// trailing data is an error. Each member's value is a slice of raw (not
// a copy): raw must not change while the object is in use.
func parseObject(raw []byte) (*object, error) {
	d := objectDecoders.Get().(*objectDecoder)
	defer func() {
		d.rd.Reset(nil)
		d.dec.Reset(&d.rd) // drops its buffer's reference to raw's copy
		objectDecoders.Put(d)
	}()
	d.rd.Reset(raw)
	d.dec.Reset(&d.rd)
	dec := d.dec
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errNotObject
	}
	o := &object{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // valid only until the next read
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		// The value as it stands in raw: the decoder's copy is valid
		// only until its next read.
		end := int(dec.InputOffset())
		start := end - len(v)
		if start < 0 || end > len(raw) || !bytes.Equal(raw[start:end], v) {
			return nil, errors.New("gateway: a member's value is not where the decoder read it")
		}
		o.names = append(o.names, name)
		o.values = append(o.values, jsontext.Value(raw[start:end:end]))
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return o, nil
}

// get returns the member's raw value, or nil.
func (o *object) get(name string) jsontext.Value {
	for i, n := range o.names {
		if n == name {
			return o.values[i]
		}
	}
	return nil
}

// set replaces the member's value, or adds the member at the end.
func (o *object) set(name string, v []byte) {
	for i, n := range o.names {
		if n == name {
			o.values[i] = v
			return
		}
	}
	o.names = append(o.names, name)
	o.values = append(o.values, v)
}

// del removes the member if present.
func (o *object) del(name string) {
	for i, n := range o.names {
		if n == name {
			o.names = append(o.names[:i], o.names[i+1:]...)
			o.values = append(o.values[:i], o.values[i+1:]...)
			return
		}
	}
}

// encode writes the object: the members in order, each value's bytes as
// kept.
func (o *object) encode() json.RawMessage {
	n := 2
	for i := range o.names {
		n += len(o.names[i]) + len(o.values[i]) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, name := range o.names {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, name) // names came from valid JSON
		b = append(b, ':')
		b = append(b, o.values[i]...)
	}
	return append(b, '}')
}

// quote returns s as a JSON string, without HTML escaping.
func quote(s string) []byte {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil { // invalid UTF-8: replaced, as encoding/json does
		b, _ = json.Marshal(s)
	}
	return b
}

// mustJSON marshals v, which the gateway builds itself and is always
// encodable.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("gateway: encoding " + err.Error())
	}
	return b
}
