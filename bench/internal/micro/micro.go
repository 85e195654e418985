// Package micro holds the micro benchmark bodies of the benchmark suite:
// requestState seal and open, the JSON-RPC decoder and params parser,
// header validation (DecodeHeaderValue and full Handler.ServeHTTP on a
// recorder), and answer validation (elicit.DecodeAnswer with a parsed
// schema). bench/micro_test.go runs them under `go test -bench`; mcpbench
// runs them with testing.Benchmark so that BENCHMARKS.md has them from the
// same run.
package micro

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/bench/internal/impl/elicitsrv"
	"github.com/mcp-elicit/elicit/bench/internal/wire"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Bench is one named micro benchmark.
type Bench struct {
	Name string
	F    func(b *testing.B)
}

// All lists the micro benchmarks in report order.
var All = []Bench{
	{"reqstate/SealOpen/billing", SealOpenBilling},
	{"reqstate/SealOpen/form", SealOpenForm},
	{"reqstate/DigestArguments", DigestArguments},
	{"jsonrpc/DecodeRequest", DecodeRequest},
	{"mcpserver/Parse", ParseParams},
	{"streamhttp/DecodeHeaderValue/plain", DecodeHeaderValuePlain},
	{"streamhttp/DecodeHeaderValue/base64", DecodeHeaderValueBase64},
	{"streamhttp/ServeHTTP/call", ServeHTTPCall},
	{"streamhttp/ServeHTTP/discover", ServeHTTPDiscover},
	{"streamhttp/ServeHTTP/form-first", ServeHTTPFormFirst},
	{"streamhttp/ServeHTTP/form-retry", ServeHTTPFormRetry},
	{"streamhttp/ServeHTTP/header-mismatch", ServeHTTPHeaderMismatch},
	{"elicit/DecodeAnswer", DecodeAnswer},
	{"elicit/ParseSchema", ParseSchema},
}

// Billing flow shape, as examples/billing builds it: tool connect_billing,
// one URL-mode request under "billing_key", a 32-hex flow id as state, the
// demo principal.
const (
	billingTool      = "connect_billing"
	billingKey       = "billing_key"
	billingPrincipal = "alice"
	billingMessage   = "Connect your payment provider: open this page on the server, sign in, and enter your API key there. The key never passes through this client."
)

func billingFlowID() string { return hex.EncodeToString(bytes.Repeat([]byte{0x5a}, 16)) }

// payload mirrors mcpserver's sealed payload layout (mrtr.go
// encodePayload): uvarint(n), then per key uvarint(len) key kind
// [uvarint(len schema) schema], then the application state.
func payload(key string, kind byte, schema, state string) []byte {
	b := binary.AppendUvarint(nil, 1)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, kind)
	if kind == 1 {
		b = binary.AppendUvarint(b, uint64(len(schema)))
		b = append(b, schema...)
	}
	return append(b, state...)
}

func sealer(b *testing.B) *reqstate.Sealer {
	s, err := reqstate.New([]reqstate.Key{reqstate.NewKey("ephemeral")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func sealOpen(b *testing.B, bind reqstate.Binding, pl []byte) {
	s := sealer(b)
	c := &reqstate.Claims{Binding: bind, Round: 1, Payload: pl}
	b.ReportAllocs()
	for b.Loop() {
		tok, err := s.Seal(c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Open(tok, bind); err != nil {
			b.Fatal(err)
		}
	}
}

// SealOpenBilling seals and opens the billing flow's state.
func SealOpenBilling(b *testing.B) {
	bind := reqstate.Binding{Principal: billingPrincipal, Method: mcp.MethodToolsCall, Name: billingTool, ArgsDigest: sha256.Sum256([]byte("{}"))}
	sealOpen(b, bind, payload(billingKey, 2, "", billingFlowID()))
}

// SealOpenForm seals and opens the benchmark form flow's state (it
// carries the asked schema, so the answer can be validated on the retry).
func SealOpenForm(b *testing.B) {
	bind := reqstate.Binding{Method: mcp.MethodToolsCall, Name: wire.FormTool, ArgsDigest: sha256.Sum256([]byte(`{"draft":"d-42"}`))}
	sealOpen(b, bind, payload(wire.FormKey, 1, wire.FormRequestedSchema, wire.FormState))
}

// DigestArguments hashes the canonical form of the echo arguments (done on
// every tools/call).
func DigestArguments(b *testing.B) {
	args := json.RawMessage(`{"text":"` + wire.EchoText + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reqstate.DigestArguments(args); err != nil {
			b.Fatal(err)
		}
	}
}

// DecodeRequest runs the strict JSON-RPC decoder on a tools/call body.
func DecodeRequest(b *testing.B) {
	body := wire.CallBody(7)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := jsonrpc.DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// ParseParams runs transport.Parse (params and _meta) on a decoded tools/call.
func ParseParams(b *testing.B) {
	req, jerr := jsonrpc.DecodeRequest(wire.CallBody(7))
	if jerr != nil {
		b.Fatal(jerr)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, jerr := transport.Parse(req); jerr != nil {
			b.Fatal(jerr)
		}
	}
}

// DecodeHeaderValuePlain decodes a literal Mcp-Name value.
func DecodeHeaderValuePlain(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := mcp.DecodeHeaderValue(wire.FormTool); !ok {
			b.Fatal("not ok")
		}
	}
}

// DecodeHeaderValueBase64 decodes a base64-wrapped non-ASCII value.
func DecodeHeaderValueBase64(b *testing.B) {
	v := "=?base64?w6ljaGFuZ2VyIGxlcyBmaWNoaWVycw==?="
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := mcp.DecodeHeaderValue(v); !ok {
			b.Fatal("not ok")
		}
	}
}

// serveHTTP benchmarks one full streamhttp.Handler.ServeHTTP on a
// recorder: header validation, decoding, dispatch, the tool, encoding.
func serveHTTP(b *testing.B, h http.Handler, body []byte, hdr http.Header, status int, mark []byte) {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	req.Header = hdr
	b.ReportAllocs()
	for b.Loop() {
		req.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != status || !bytes.Contains(rec.Body.Bytes(), mark) {
			b.Fatalf("HTTP %d: %s", rec.Code, rec.Body.Bytes())
		}
	}
}

// ServeHTTPCall serves a tools/call of the echo tool.
func ServeHTTPCall(b *testing.B) {
	serveHTTP(b, elicitsrv.Handler(), wire.CallBody(7), wire.Headers(mcp.MethodToolsCall, wire.EchoTool), 200, wire.MarkEcho)
}

// ServeHTTPCallBothEras is ServeHTTPCall through legacy.Handler (2025-11-25
// and 2026-07-28 clients on one endpoint): what the era dispatcher adds
// to a 2026 request.
func ServeHTTPCallBothEras(b *testing.B) {
	serveHTTP(b, elicitsrv.BothEras(), wire.CallBody(7), wire.Headers(mcp.MethodToolsCall, wire.EchoTool), 200, wire.MarkEcho)
}

// ServeHTTPDiscover serves server/discover.
func ServeHTTPDiscover(b *testing.B) {
	serveHTTP(b, elicitsrv.Handler(), wire.DiscoverBody(7), wire.Headers(mcp.MethodDiscover, ""), 200, wire.MarkDiscover)
}

// ServeHTTPFormFirst serves the first leg of the form flow (ask + seal).
func ServeHTTPFormFirst(b *testing.B) {
	serveHTTP(b, elicitsrv.Handler(), wire.FormFirstBody(7), wire.Headers(mcp.MethodToolsCall, wire.FormTool), 200, wire.MarkInputRequired)
}

// ServeHTTPFormRetry serves the retry of the form flow (open + validate).
func ServeHTTPFormRetry(b *testing.B) {
	h := elicitsrv.Handler()
	st, err := firstState(h)
	if err != nil {
		b.Fatal(err)
	}
	body := wire.NewRetry(8).Append(nil, st)
	serveHTTP(b, h, body, wire.Headers(mcp.MethodToolsCall, wire.FormTool), 200, wire.MarkFormDone)
}

// ServeHTTPHeaderMismatch serves a tools/call whose Mcp-Name differs from
// the body: refused with 400 / -32020 after parsing.
func ServeHTTPHeaderMismatch(b *testing.B) {
	serveHTTP(b, elicitsrv.Handler(), wire.CallBody(7), wire.Headers(mcp.MethodToolsCall, "other"), 400, []byte("-32020"))
}

func firstState(h http.Handler) ([]byte, error) {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(wire.FormFirstBody(7)))
	req.Header = wire.Headers(mcp.MethodToolsCall, wire.FormTool)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	st := wire.RequestState(rec.Body.Bytes())
	if st == nil {
		return nil, fmt.Errorf("no requestState: HTTP %d %s", rec.Code, rec.Body.Bytes())
	}
	return bytes.Clone(st), nil
}

func formSchema(b *testing.B) *elicit.Schema {
	s, err := elicit.ParseSchema(json.RawMessage(wire.FormRequestedSchema))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// DecodeAnswer decodes and validates an accepted form answer against a
// parsed schema.
func DecodeAnswer(b *testing.B) {
	s := formSchema(b)
	var resp map[string]json.RawMessage
	if err := json.Unmarshal([]byte(wire.FormAnswer), &resp); err != nil {
		b.Fatal(err)
	}
	raw := resp[wire.FormKey]
	b.ReportAllocs()
	for b.Loop() {
		if a := elicit.DecodeAnswer(raw, s); a.Outcome != elicit.Accepted {
			b.Fatalf("outcome %v: %s", a.Outcome, a.Problem)
		}
	}
}

// ParseSchema parses and checks the form's requestedSchema (mcpserver
// does this on every ElicitForm call and again on the retry).
func ParseSchema(b *testing.B) {
	raw := json.RawMessage(wire.FormRequestedSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := elicit.ParseSchema(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// StateSizes returns the length in bytes of the requestState that elicit's
// core seals for the billing flow (URL mode, as examples/billing asks it,
// for an authenticated user) and for the benchmark's form flow, as seen
// on the wire.
func StateSizes() (billing, form int, err error) {
	s := mcpserver.New(mcp.Implementation{Name: wire.ServerName, Version: wire.ServerVersion},
		&mcpserver.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	flowURL := "http://127.0.0.1:3000/ui/set_api_key?flow=" + billingFlowID()
	s.AddTool(&mcp.Tool{Name: billingTool, InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.Ask().ElicitURL(billingKey, billingMessage, flowURL).WithState([]byte(billingFlowID())), nil
		})
	h := streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "bench"}})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + billingTool + `","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}}}}`)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
	req.Header = wire.Headers(mcp.MethodToolsCall, billingTool)
	req.Header.Set("Authorization", "Bearer "+billingPrincipal)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	st := wire.RequestState(rec.Body.Bytes())
	if st == nil {
		return 0, 0, fmt.Errorf("billing: no requestState: HTTP %d %s", rec.Code, rec.Body.Bytes())
	}
	fst, err := firstState(elicitsrv.Handler())
	if err != nil {
		return 0, 0, fmt.Errorf("form: %w", err)
	}
	return len(st), len(fst), nil
}
