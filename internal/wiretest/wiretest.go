// Package wiretest replays wire transcripts: txtar files, one exchange
// each, that pin the bytes a package puts on the wire. The mcpserver,
// streamhttp, mcpclient, legacy and stdio tests use it; each package
// decides what its exchange is and drives its own code.
//
// # File layout
//
// A transcript is a txtar archive (golang.org/x/tools/txtar). Its comment
// says which rule the exchange pins. Input sections are written by hand
// and never rewritten; output sections are what the code produced, after
// normalisation, and `go test -update` rewrites them (and only them).
// Which sections are inputs and which outputs is the package's choice;
// by convention "request" is what is sent, "response" what comes back.
//
// An HTTP message is written as on the wire, with "\n" line ends: a
// request line ("POST /mcp") or a status line ("HTTP/1.1 200 OK"), header
// lines, an empty line, the body. Response headers are listed sorted by
// name. A body that does not end in a newline is followed by the line
// "«no newline at end»".
//
// # Placeholders in inputs
//
// An input cannot hold a requestState the server will accept, since each
// state is sealed afresh with a random nonce. A request may therefore say
// "«setup»": the package first sends the "setup" section (itself a
// request) and puts the requestState of its answer there; "«setup|flip»"
// puts the same state with one character changed, which still has the
// shape of a state but does not open.
//
// # Normalisation of outputs
//
// Bytes that differ on every run are replaced before comparing, and only
// when they have the expected shape, so that their presence and shape are
// still checked (anything else stays as it is and fails the comparison):
//
//   - a requestState value (a JSON string member "requestState") that is
//     base64url without padding and decodes to a sealed state — version
//     byte 1, a key id of 1 to 255 printable bytes, a 12-byte nonce and
//     at least a 16-byte tag — becomes «requestState#N key=ID», where N
//     numbers the distinct states of the transcript in order of
//     appearance: a state echoed unchanged keeps its number;
//   - an Mcp-Session-Id header value of 16 to 128 visible ASCII
//     characters becomes «session#N» the same way;
//   - an "elicitationId" member of 32 lowercase hex digits (a URL-mode
//     elicitation of a 2025 session) becomes «elicitationId#N»: the
//     completion notification that names it keeps its number.
package wiretest

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the output sections of the wire transcripts from what the code produces")

// Transcript is one loaded transcript file.
type Transcript struct {
	Path    string
	archive *txtar.Archive
	outputs map[string][]byte // normalised outputs of this run, by section
	norm    *Normalizer
}

// Run calls f, in a subtest named after the file, for every
// testdata/transcripts/*.txtar of the package under test; under -update it
// then rewrites the outputs f checked. It fails when there is no
// transcript, so that a misplaced directory cannot pass silently.
func Run(t *testing.T, f func(t *testing.T, tr *Transcript)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata/transcripts (%v)", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(bytes.TrimSpace(ar.Comment)) == 0 {
				t.Errorf("%s: the comment must say which rule the exchange pins", path)
			}
			tr := &Transcript{Path: path, archive: ar, outputs: map[string][]byte{}, norm: NewNormalizer()}
			f(t, tr)
			if *update && !t.Failed() {
				tr.write(t)
			}
		})
	}
}

// Input returns an input section; the test fails when it is missing.
func (tr *Transcript) Input(t *testing.T, name string) []byte {
	t.Helper()
	b, ok := tr.Section(name)
	if !ok {
		t.Fatalf("%s: no section %q", tr.Path, name)
	}
	return b
}

// Section returns a section and whether it exists.
func (tr *Transcript) Section(name string) ([]byte, bool) {
	for _, f := range tr.archive.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// Normalizer is the transcript's normaliser, shared by all its outputs so
// that numbering is consistent across sections.
func (tr *Transcript) Normalizer() *Normalizer { return tr.norm }

// Check compares got, normalised, with the output section name. Under
// -update it records got instead, to be written when the test passes. An
// output that is empty and absent from the file matches.
func (tr *Transcript) Check(t *testing.T, name string, got []byte) {
	t.Helper()
	got = tr.norm.Normalize(got)
	if *update {
		tr.outputs[name] = got
		return
	}
	want, ok := tr.Section(name)
	if !ok && len(got) == 0 {
		return
	}
	if !ok {
		t.Errorf("%s: no section %q; got:\n%s\n(run go test -update to record it)", tr.Path, name, got)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: section %q differs\n--- want\n%s--- got\n%s%s", tr.Path, name, want, got, firstDiff(want, got))
	}
}

// firstDiff points at the first differing byte, which a long body hides.
func firstDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	line := 1 + bytes.Count(got[:i], []byte("\n"))
	return fmt.Sprintf("--- first difference at byte %d (line %d of got)\n", i, line)
}

// write rewrites the file: the comment and inputs as they were, the
// outputs checked in this run in place of the old ones, new ones last.
func (tr *Transcript) write(t *testing.T) {
	ar := &txtar.Archive{Comment: tr.archive.Comment}
	done := map[string]bool{}
	for _, f := range tr.archive.Files {
		if out, ok := tr.outputs[f.Name]; ok {
			if len(out) > 0 {
				ar.Files = append(ar.Files, txtar.File{Name: f.Name, Data: out})
			}
			done[f.Name] = true
			continue
		}
		ar.Files = append(ar.Files, f)
	}
	names := make([]string, 0, len(tr.outputs))
	for name := range tr.outputs {
		if !done[name] && len(tr.outputs[name]) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: tr.outputs[name]})
	}
	if err := os.WriteFile(tr.Path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noNewline marks a body that does not end in a newline.
const noNewline = "«no newline at end»\n"

func body(b []byte) []byte {
	if len(b) == 0 || b[len(b)-1] == '\n' {
		return b
	}
	return append(append([]byte{}, b...), "\n"+noNewline...)
}

// ParseRequest reads an HTTP request written as on the wire ("POST /mcp",
// headers, an empty line, the body) into a request for a handler. The
// body is taken as written, without the final newline of the section
// (JSON does not care; a body that needs no newline has none). The Host
// header sets the request's Host; a missing one means 127.0.0.1.
func ParseRequest(b []byte) (*http.Request, error) {
	head, payload, _ := bytes.Cut(b, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	method, target, ok := strings.Cut(strings.TrimSuffix(lines[0], " HTTP/1.1"), " ")
	if !ok {
		return nil, fmt.Errorf("request line %q is not METHOD PATH", lines[0])
	}
	payload = bytes.TrimSuffix(payload, []byte("\n"))
	req := httptest.NewRequest(method, "http://127.0.0.1"+target, bytes.NewReader(payload))
	req.Header = http.Header{}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("header line %q has no colon", l)
		}
		value = strings.TrimPrefix(value, " ")
		if http.CanonicalHeaderKey(name) == "Host" {
			req.Host = value
			continue
		}
		req.Header.Add(name, value)
	}
	return req, nil
}

// FormatRequest writes what a client sent: the request line, the headers
// named in keep (in that order, each value as sent), and the body.
func FormatRequest(method, path string, h http.Header, payload []byte, keep ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\n", method, path)
	for _, k := range keep {
		for _, v := range h.Values(k) {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(body(payload))
	return b.Bytes()
}

// FormatResponse writes a recorded response: the status line, every
// header sorted by name, and the body.
func FormatResponse(rec *httptest.ResponseRecorder) []byte {
	return FormatHTTPResponse(rec.Result().StatusCode, rec.Result().Header, rec.Body.Bytes())
}

// FormatHTTPResponse writes a response from its parts: the status line,
// every header but those named in drop (such as a real server's Date)
// sorted by name, and the body.
func FormatHTTPResponse(status int, h http.Header, payload []byte, drop ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\n", status, http.StatusText(status))
	keys := make([]string, 0, len(h))
	for k := range h {
		if !slices.Contains(drop, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(body(payload))
	return b.Bytes()
}

// Normalizer replaces the bytes that differ on every run (see the package
// doc) by numbered placeholders.
type Normalizer struct {
	states, sessions, elicitations map[string]int
}

// NewNormalizer returns an empty Normalizer.
func NewNormalizer() *Normalizer {
	return &Normalizer{states: map[string]int{}, sessions: map[string]int{}, elicitations: map[string]int{}}
}

var (
	stateRe   = regexp.MustCompile(`"requestState":"([^"\\]*)"`)
	sessionRe = regexp.MustCompile(`(?im)^(Mcp-Session-Id: )(\S*)$`)
	elicitRe  = regexp.MustCompile(`"elicitationId":"([0-9a-f]{32})"`)
)

// Normalize returns b with every well-formed requestState, session id
// and elicitation id replaced.
func (n *Normalizer) Normalize(b []byte) []byte {
	b = elicitRe.ReplaceAllFunc(b, func(m []byte) []byte {
		v := string(elicitRe.FindSubmatch(m)[1])
		return []byte(`"elicitationId":"«elicitationId#` + strconv.Itoa(number(n.elicitations, v)) + `»"`)
	})
	b = stateRe.ReplaceAllFunc(b, func(m []byte) []byte {
		v := string(stateRe.FindSubmatch(m)[1])
		kid, ok := SealedStateKey(v)
		if !ok {
			return m
		}
		// mcpserver's default key has a random id per process.
		if strings.HasPrefix(kid, "ephemeral-") {
			kid = "ephemeral"
		}
		return []byte(`"requestState":"«requestState#` + strconv.Itoa(number(n.states, v)) + ` key=` + kid + `»"`)
	})
	return sessionRe.ReplaceAllFunc(b, func(m []byte) []byte {
		sub := sessionRe.FindSubmatch(m)
		v := string(sub[2])
		if !sessionShaped(v) {
			return m
		}
		return []byte(string(sub[1]) + "«session#" + strconv.Itoa(number(n.sessions, v)) + "»")
	})
}

// Session returns the placeholder a session id got, to find it again.
func (n *Normalizer) Session(id string) string {
	return "«session#" + strconv.Itoa(number(n.sessions, id)) + "»"
}

func number(seen map[string]int, v string) int {
	if i, ok := seen[v]; ok {
		return i
	}
	seen[v] = len(seen) + 1
	return seen[v]
}

// SealedStateKey reports whether v has the shape of a sealed requestState
// (see the package doc) and returns its key id.
func SealedStateKey(v string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) < 2 || raw[0] != 1 {
		return "", false
	}
	kl := int(raw[1])
	if kl == 0 || len(raw) < 2+kl+12+16 {
		return "", false
	}
	kid := raw[2 : 2+kl]
	for _, c := range kid {
		if c < 0x21 || c > 0x7e {
			return "", false
		}
	}
	return string(kid), true
}

func sessionShaped(v string) bool {
	if len(v) < 16 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// Substitute replaces the placeholders of an input: «setup» by state and
// «setup|flip» by state with one character changed (see the package doc).
func Substitute(b []byte, state string) []byte {
	b = bytes.ReplaceAll(b, []byte("«setup|flip»"), []byte(Flip(state)))
	return bytes.ReplaceAll(b, []byte("«setup»"), []byte(state))
}

// Flip changes one character in the middle of a state: still base64url
// of the right length, but it does not open.
func Flip(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// StateOf returns the requestState of a JSON or SSE answer body (the last
// one it holds), "" when there is none.
func StateOf(b []byte) string {
	ms := stateRe.FindAllSubmatch(b, -1)
	if len(ms) == 0 {
		return ""
	}
	return string(ms[len(ms)-1][1])
}
