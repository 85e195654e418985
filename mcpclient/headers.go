package mcpclient

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/mcp-elicit/elicit/mcp"
)

// Request header names (streamable-http.mdx §Standard Request Headers).
// Header names are case-insensitive (HTTP-SC-01); net/http sends them in
// canonical form (Mcp-Protocol-Version, Mcp-Param-Emptyval).
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

// maxSafeInteger is 2^53−1, the largest integer an x-mcp-header argument
// may carry (server/tools.mdx §x-mcp-header).
const maxSafeInteger = 1<<53 - 1

// EncodeHeaderValue returns v as an Mcp-Name or Mcp-Param-* header value
// (streamable-http.mdx §Value Encoding, HTTP-C-10): v itself when it is
// visible ASCII or inner spaces (0x20–0x7E) with no leading or trailing
// space, otherwise "=?base64?<standard base64 of the UTF-8>?=". A value
// that starts like the sentinel ("=?base64?", any case) is always encoded,
// so that it cannot be read as one. Tabs are encoded too: some servers
// refuse them and intermediaries may rewrite them.
// streamhttp.DecodeHeaderValue is the inverse.
func EncodeHeaderValue(v string) string {
	if headerSafe(v) {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

func headerSafe(v string) bool {
	if v != "" && (v[0] == ' ' || v[len(v)-1] == ' ') {
		return false
	}
	if len(v) >= 9 && strings.EqualFold(v[:9], "=?base64?") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// HeaderParam is a tool argument that the client mirrors into an
// Mcp-Param-{Header} request header, from an "x-mcp-header" annotation in
// the tool's inputSchema (server/tools.mdx §x-mcp-header, HTTP-C-11).
type HeaderParam struct {
	// Header is the annotation's value, the name after "Mcp-Param-".
	Header string
	// Path is the chain of property names from the arguments object to
	// the argument (one name for a top-level property).
	Path []string
	// Type is the property's JSON Schema type: "string", "integer" or
	// "boolean".
	Type string
}

// CheckToolHeaders returns the x-mcp-header parameters of t's inputSchema,
// sorted by header name, or an error saying why the tool breaks the rules
// of wire.md §9.4 (HTTP-S-19): the name must be a non-empty RFC 9110 token
// (no space, colon, control or non-ASCII character); names are unique
// case-insensitively; the property's type is exactly "string", "integer"
// or "boolean"; and the annotation sits on a property reachable from the
// root through "properties" alone (not through items, oneOf, $defs, $ref
// targets…). ListTools drops a tool for which this fails (HTTP-C-12).
func CheckToolHeaders(t *mcp.Tool) ([]HeaderParam, error) {
	if t == nil || len(t.InputSchema) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t.InputSchema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("inputSchema is not JSON: %v", err)
	}
	w := headerWalker{seen: map[string]string{}}
	w.schema(root, nil, true)
	if w.err != nil {
		return nil, w.err
	}
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].Header < w.out[j].Header })
	return w.out, nil
}

type headerWalker struct {
	out  []HeaderParam
	seen map[string]string // lower-case header → property path
	err  error
}

// dataKeywords hold instance values, not schemas: an "x-mcp-header" key
// inside them is data.
var dataKeywords = map[string]bool{"const": true, "default": true, "enum": true, "examples": true}

// schema walks one schema. reachable is true while the path from the root
// went through "properties" alone.
func (w *headerWalker) schema(node any, path []string, reachable bool) {
	obj, ok := node.(map[string]any)
	if !ok || w.err != nil {
		if arr, isArr := node.([]any); isArr {
			for _, n := range arr {
				w.schema(n, path, false)
			}
		}
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error messages
	for _, k := range keys {
		v := obj[k]
		switch {
		case k == "x-mcp-header":
			w.annotation(obj, v, path, reachable)
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				continue
			}
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				w.schema(props[n], append(append([]string(nil), path...), n), reachable)
			}
		case dataKeywords[k]:
		default:
			w.schema(v, path, false)
		}
		if w.err != nil {
			return
		}
	}
}

func (w *headerWalker) annotation(obj map[string]any, v any, path []string, reachable bool) {
	where := "the root schema"
	if len(path) > 0 {
		where = fmt.Sprintf("property %q", strings.Join(path, "."))
	}
	name, ok := v.(string)
	switch {
	case !ok:
		w.err = fmt.Errorf("%s: x-mcp-header must be a string", where)
	case name == "":
		w.err = fmt.Errorf("%s: x-mcp-header is empty", where)
	case !mcp.ValidHeaderName(name):
		w.err = fmt.Errorf("%s: x-mcp-header %q is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~ only)", where, name)
	case !reachable || len(path) == 0:
		w.err = fmt.Errorf("%s: x-mcp-header %q is not on a property reachable through \"properties\" alone", where, name)
	}
	if w.err != nil {
		return
	}
	typ, _ := obj["type"].(string)
	if typ != "string" && typ != "integer" && typ != "boolean" {
		w.err = fmt.Errorf("%s: x-mcp-header %q is on a property of type %s; only string, integer and boolean are allowed", where, name, typeName(obj["type"]))
		return
	}
	if prev, dup := w.seen[strings.ToLower(name)]; dup {
		w.err = fmt.Errorf("%s: x-mcp-header %q repeats the header of property %q (names are case-insensitive)", where, name, prev)
		return
	}
	w.seen[strings.ToLower(name)] = strings.Join(path, ".")
	w.out = append(w.out, HeaderParam{Header: name, Path: path, Type: typ})
}

func typeName(t any) string {
	if t == nil {
		return "(none)"
	}
	b, _ := json.Marshal(t)
	return string(b)
}

// paramHeaders returns the Mcp-Param-* headers for args, a JSON object
// (HTTP-C-11): one per parameter whose argument is present and not null,
// encoded per §9.3. An argument that cannot be mirrored (an object, a
// fraction, an integer beyond ±(2^53−1)) is an error: the server would
// refuse the call.
func paramHeaders(params []HeaderParam, args json.RawMessage) (http.Header, error) {
	if len(params) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	h := http.Header{}
	for _, p := range params {
		v, ok := lookupPath(obj, p.Path)
		if !ok || v == nil {
			continue // HTTP-C-11: omitted for an absent or null argument
		}
		s, err := headerText(v)
		if err != nil {
			return nil, fmt.Errorf("argument %q (x-mcp-header %q): %w", strings.Join(p.Path, "."), p.Header, err)
		}
		h.Set(HeaderParamPrefix+p.Header, EncodeHeaderValue(s))
	}
	return h, nil
}

func lookupPath(v any, path []string) (any, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// headerText is the header form of one argument value (wire.md §9.3):
// strings as they are, integers in decimal, booleans true/false.
func headerText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			if i > maxSafeInteger || i < -maxSafeInteger {
				return "", errors.New("integer beyond ±(2^53−1)")
			}
			return strconv.FormatInt(i, 10), nil
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
			return "", fmt.Errorf("%s is not an integer within ±(2^53−1)", x)
		}
		return strconv.FormatInt(int64(f), 10), nil
	}
	return "", errors.New("value must be a string, an integer or a boolean")
}
