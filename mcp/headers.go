package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file is the one home of the wire rules that both sides of the
// Streamable HTTP binding apply: the standard header names, the header
// value codec, the x-mcp-header rules of a tool's inputSchema, and the set
// of methods that take part in multi round-trip requests. The server
// (mcpserver, streamhttp, legacy) and the client (mcpclient) use these, so
// a schema or a value one side accepts is never refused by the other.

// Standard request header names (basic/transports/streamable-http.mdx
// §Standard Request Headers), in the canonical form net/http uses as map
// keys: the spec spells the first one MCP-Protocol-Version, and header
// names are case-insensitive (HTTP-SC-01).
const (
	// HeaderProtocolVersion carries the protocol version, equal to
	// _meta io.modelcontextprotocol/protocolVersion.
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	// HeaderMethod carries the JSON-RPC method, equal to the body's.
	HeaderMethod = "Mcp-Method"
	// HeaderName carries params.name (tools/call, prompts/get),
	// params.uri (resources/read) or params.taskId (tasks/get,
	// tasks/update, tasks/cancel of the tasks extension), encoded with
	// EncodeHeaderValue (NamedMethod).
	HeaderName = "Mcp-Name"
	// HeaderParamPrefix is followed by an x-mcp-header name; the value is
	// the argument, encoded with EncodeHeaderValue.
	HeaderParamPrefix = "Mcp-Param-"
)

// MRTRMethod reports whether method is one of the requests that take
// inputResponses and requestState and may answer with an
// InputRequiredResult: tools/call, prompts/get and resources/read
// (basic/patterns/mrtr.mdx, MRTR-S-03). They carry the Mcp-Name header
// (NamedMethod).
func MRTRMethod(method string) bool {
	return method == MethodToolsCall || method == MethodPromptsGet || method == MethodResourcesRead
}

// NamedMethod reports whether requests of method carry the Mcp-Name
// header: the MRTR methods, and the tasks extension's tasks/get,
// tasks/update and tasks/cancel, whose Mcp-Name is params.taskId
// (SEP-2663 §Streamable HTTP routing headers).
func NamedMethod(method string) bool {
	return MRTRMethod(method) || TaskMethod(method)
}

// TaskMethod reports whether method is tasks/get, tasks/update or
// tasks/cancel: the methods of the tasks extension, which take params.taskId.
func TaskMethod(method string) bool {
	return method == MethodTasksGet || method == MethodTasksUpdate || method == MethodTasksCancel
}

const (
	headerB64Prefix = "=?base64?"
	headerB64Suffix = "?="
)

// EncodeHeaderValue returns v as an Mcp-Name or Mcp-Param-* header value
// (streamable-http.mdx §Value Encoding, HTTP-C-10): v itself when it is
// visible ASCII or inner spaces (0x20–0x7E) with no leading or trailing
// space, otherwise "=?base64?<standard base64 of the UTF-8>?=". A value
// that starts like the marker ("=?base64?", any case) is always encoded,
// so that it cannot be read as one. Tabs are encoded too: some servers
// refuse them and intermediaries may rewrite them. DecodeHeaderValue is
// the inverse.
func EncodeHeaderValue(v string) string {
	if headerSafe(v) {
		return v
	}
	return headerB64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + headerB64Suffix
}

func headerSafe(v string) bool {
	if v != "" && (v[0] == ' ' || v[len(v)-1] == ' ') {
		return false
	}
	if len(v) >= len(headerB64Prefix) && strings.EqualFold(v[:len(headerB64Prefix)], headerB64Prefix) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// DecodeHeaderValue decodes an Mcp-Name or Mcp-Param-* value
// (streamable-http.mdx §Value Encoding, HTTP-S-15): a value wrapped as
// "=?base64?…?=" (lowercase markers) is strict standard base64 of UTF-8
// text; anything else is literal. ok is false for invalid base64 or a
// decoded value that is not valid UTF-8; the server answers those with
// 400 and -32020.
func DecodeHeaderValue(v string) (string, bool) {
	if len(v) < len(headerB64Prefix)+len(headerB64Suffix) || !strings.HasPrefix(v, headerB64Prefix) || !strings.HasSuffix(v, headerB64Suffix) {
		return v, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v[len(headerB64Prefix) : len(v)-len(headerB64Suffix)])
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// ValidHeaderName reports whether name may follow "Mcp-Param-" in an
// "x-mcp-header" annotation: a non-empty RFC 9110 token, so no space,
// colon, control or non-ASCII character (server/tools.mdx §x-mcp-header,
// HTTP-S-19). Uniqueness and the property type are ToolHeaderParams'
// checks.
func ValidHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// HeaderParam is a tool argument mirrored into an Mcp-Param-{Header}
// request header by an "x-mcp-header" annotation in the tool's
// inputSchema (server/tools.mdx §x-mcp-header; streamable-http.mdx
// §Custom Headers). The client sends the header (HTTP-C-11); the server
// checks it against the body.
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

// Lookup returns the argument p mirrors in args, a decoded arguments
// object, and whether it is present; a JSON null reads as absent, since
// the header is then omitted (HTTP-C-11).
func (p HeaderParam) Lookup(args map[string]any) (any, bool) {
	var v any = args
	for _, k := range p.Path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// ToolHeaderParams returns the x-mcp-header parameters of an inputSchema,
// sorted by header name, or an error saying which rule of
// server/tools.mdx §x-mcp-header (HTTP-S-19) the schema breaks: the name
// must be a non-empty RFC 9110 token (no space, colon, control or
// non-ASCII character); names are unique case-insensitively; the
// property's type is exactly "string", "integer" or "boolean"; and the
// annotation sits on a property reachable from the root through
// "properties" alone (not through items, anyOf/oneOf/allOf/not,
// if/then/else, $defs, $ref targets…). Values of const, default, enum and
// examples are data and are not read. A server refuses to register a tool
// for which this fails; a client drops it from its tools/list view
// (HTTP-C-12). Both use this function, so they agree. An empty schema has
// no parameters; a schema that is not JSON is an error.
func ToolHeaderParams(inputSchema json.RawMessage) ([]HeaderParam, error) {
	if len(inputSchema) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(inputSchema))
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
	case !ValidHeaderName(name):
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
