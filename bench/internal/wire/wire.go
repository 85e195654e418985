// Package wire holds what every benchmark scenario sends and expects: the
// tools the three servers register, the JSON-RPC bodies and the HTTP
// headers of MCP 2026-07-28 over stateless Streamable HTTP
// (docs/protocol.md §Tools, §MRTR, §Headers). The bodies are built once; only the MRTR retry is assembled per
// flow, because it echoes the requestState of the first leg.
package wire

import (
	"bytes"
	"net/http"
	"strconv"
)

// ProtocolVersion is the revision every request declares.
const ProtocolVersion = "2026-07-28"

// Scenario names, as given to mcpbench -scenarios.
const (
	ScenarioCall     = "call"     // plain tools/call of EchoTool
	ScenarioMRTR     = "mrtr"     // FormTool: input_required, then retry, complete
	ScenarioDiscover = "discover" // server/discover
)

// Scenarios lists every scenario in report order.
var Scenarios = []string{ScenarioCall, ScenarioMRTR, ScenarioDiscover}

// The tools every server registers.
const (
	// EchoTool returns its "text" argument as one text block.
	EchoTool = "echo"
	// EchoSchema is EchoTool's input schema.
	EchoSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`
	// EchoText is the argument the load generator sends.
	EchoText = "hello, bench"

	// FormTool asks for a confirmation form on its first call (with
	// FormState as application state) and completes on the retry that
	// carries an accepted answer.
	FormTool = "confirm_send"
	// FormSchema is FormTool's input schema.
	FormSchema = `{"type":"object","properties":{"draft":{"type":"string"}},"required":["draft"]}`
	// FormKey is the inputRequests key of the form.
	FormKey = "confirm"
	// FormMessage is the form's message.
	FormMessage = "Send the prepared draft now?"
	// FormRequestedSchema is the small flat form that is asked.
	FormRequestedSchema = `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Send it"},"note":{"type":"string","title":"Note","maxLength":64}},"required":["confirm"]}`
	// FormState is the application state the tool carries to the retry.
	FormState = "draft-0042"
	// FormDraft is the "draft" argument the load generator sends.
	FormDraft = "d-42"
	// FormDone is the text of the complete result.
	FormDone = "sent draft-0042"
	// FormAnswer is the inputResponses object of the retry.
	FormAnswer = `{"confirm":{"action":"accept","content":{"confirm":true,"note":"ok"}}}`
)

// ServerName and ServerVersion identify every benchmark server.
const (
	ServerName    = "mcpbench"
	ServerVersion = "1.0.0"
)

// Meta is the request _meta of every request: version, capabilities
// (form-mode elicitation) and client identity.
const Meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","version":"1"}}`

// Response markers the load generator looks for (the three servers all
// write compact JSON).
var (
	MarkComplete      = []byte(`"resultType":"complete"`)
	MarkInputRequired = []byte(`"resultType":"input_required"`)
	MarkIsError       = []byte(`"isError":true`)
	MarkState         = []byte(`"requestState":"`)
	MarkDiscover      = []byte(`"supportedVersions"`)
	MarkEcho          = []byte(EchoText)
	MarkFormDone      = []byte(FormDone)
)

func id(n int) string { return strconv.Itoa(n) }

// CallBody is a tools/call of EchoTool with the given id.
func CallBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id(n) + `,"method":"tools/call","params":{"name":"` + EchoTool +
		`","arguments":{"text":"` + EchoText + `"},` + Meta + `}}`)
}

// DiscoverBody is a server/discover with the given id.
func DiscoverBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id(n) + `,"method":"server/discover","params":{` + Meta + `}}`)
}

// FormFirstBody is the first leg of the MRTR flow: a tools/call of FormTool.
func FormFirstBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id(n) + `,"method":"tools/call","params":{"name":"` + FormTool +
		`","arguments":{"draft":"` + FormDraft + `"},` + Meta + `}}`)
}

// Retry is the MRTR retry body builder: a prefix and suffix around the
// requestState, so a flow costs one append into a reused buffer.
type Retry struct{ prefix, suffix []byte }

// NewRetry returns the retry builder for id n (docs/protocol.md §Retries:
// new id, same params, inputResponses and the echoed requestState).
func NewRetry(n int) *Retry {
	return &Retry{
		prefix: []byte(`{"jsonrpc":"2.0","id":` + id(n) + `,"method":"tools/call","params":{"name":"` + FormTool +
			`","arguments":{"draft":"` + FormDraft + `"},"inputResponses":` + FormAnswer + `,"requestState":"`),
		suffix: []byte(`",` + Meta + `}}`),
	}
}

// Append appends the retry body carrying state to dst.
func (r *Retry) Append(dst []byte, state []byte) []byte {
	dst = append(dst, r.prefix...)
	dst = append(dst, state...)
	return append(dst, r.suffix...)
}

// Headers returns the request headers for method (and the Mcp-Name for
// tools/call). The map is shared read-only by all requests of a run.
func Headers(method, name string) http.Header {
	h := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {ProtocolVersion},
		"Mcp-Method":           {method},
	}
	if name != "" {
		h["Mcp-Name"] = []string{name}
	}
	return h
}

// RequestState extracts the requestState string of a response body, or nil.
// States are base64url or plain tokens, so the value ends at the next quote.
func RequestState(body []byte) []byte {
	i := bytes.Index(body, MarkState)
	if i < 0 {
		return nil
	}
	rest := body[i+len(MarkState):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil
	}
	return rest[:j]
}
