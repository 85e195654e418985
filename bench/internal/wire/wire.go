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

// Scenarios lists every scenario of the protocol core in report order.
var Scenarios = []string{ScenarioCall, ScenarioMRTR, ScenarioDiscover}

// The real flows of elicitd (cmd/elicitd with its SQLite or PostgreSQL
// store), and the bare store's request.
const (
	// ScenarioExport is export_report: the first leg asks the form, the
	// accept leg prepares a draft (the ledger completion: one durable
	// write). A unit is a flow of two requests.
	ScenarioExport = "export"
	// ScenarioConnect is connect_billing's first leg for a user who has
	// no pending flow yet (each request is another user): it stores a
	// flow and asks for the URL step.
	ScenarioConnect = "connect"
	// ScenarioStatus is billing_status, a read-only tool: one read of the
	// user's secret.
	ScenarioStatus = "status"
	// ScenarioInsert is the bare store's request: one durable insert, no
	// MCP.
	ScenarioInsert = "insert"
)

// FlowScenarios lists the real flows in report order.
var FlowScenarios = []string{ScenarioExport, ScenarioConnect, ScenarioStatus}

// Known reports whether sc is a scenario the load generator can send.
func Known(sc string) bool {
	switch sc {
	case ScenarioCall, ScenarioMRTR, ScenarioDiscover, ScenarioExport, ScenarioConnect, ScenarioStatus, ScenarioInsert:
		return true
	}
	return false
}

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

// MetaFormURL is Meta declaring both elicitation modes (connect_billing
// asks for the URL step).
const MetaFormURL = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","version":"1"}}`

// elicitd's tools and what the flows send them.
const (
	ExportTool    = "export_report"
	ExportArgs    = `{"period":"2026-Q2","dataset":"sales"}`
	ExportAnswer  = `{"report_options":{"action":"accept","content":{"detail":"summary","label":"bench"}}}`
	ConnectTool   = "connect_billing"
	StatusTool    = "billing_status"
	noArgs        = `{}`
	insertPayload = `{"operation":"bench","principal":"bench-user","outcome":"prepared","result":"a small recorded result"}`
)

// Response markers the load generator looks for (all servers write
// compact JSON).
var (
	MarkComplete      = []byte(`"resultType":"complete"`)
	MarkInputRequired = []byte(`"resultType":"input_required"`)
	MarkIsError       = []byte(`"isError":true`)
	MarkState         = []byte(`"requestState":"`)
	MarkDiscover      = []byte(`"supportedVersions"`)
	MarkEcho          = []byte(EchoText)
	MarkFormDone      = []byte(FormDone)
	// MarkDraft is in export_report's accept-leg result.
	MarkDraft = []byte(`"status":"prepared"`)
	// MarkURLMode is in connect_billing's first leg.
	MarkURLMode = []byte(`"mode":"url"`)
	// MarkStatus is in billing_status's result.
	MarkStatus = []byte(`not connected`)
	// MarkInserted is the bare store's answer.
	MarkInserted = []byte(`{"ok":true}`)
)

// ToolBody is a tools/call of tool with raw JSON arguments, id n and
// meta (Meta or MetaFormURL).
func ToolBody(n int, tool, args, meta string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id(n) + `,"method":"tools/call","params":{"name":"` + tool +
		`","arguments":` + args + `,` + meta + `}}`)
}

// ExportFirstBody is export_report's first leg.
func ExportFirstBody(n int) []byte { return ToolBody(n, ExportTool, ExportArgs, MetaFormURL) }

// NewExportRetry returns the builder of export_report's accept leg.
func NewExportRetry(n int) *Retry {
	return &Retry{
		prefix: []byte(`{"jsonrpc":"2.0","id":` + id(n) + `,"method":"tools/call","params":{"name":"` + ExportTool +
			`","arguments":` + ExportArgs + `,"inputResponses":` + ExportAnswer + `,"requestState":"`),
		suffix: []byte(`",` + MetaFormURL + `}}`),
	}
}

// ConnectBody is connect_billing's first leg.
func ConnectBody(n int) []byte { return ToolBody(n, ConnectTool, noArgs, MetaFormURL) }

// StatusBody is a call of billing_status.
func StatusBody(n int) []byte { return ToolBody(n, StatusTool, noArgs, MetaFormURL) }

// InsertBody is the bare store's request body, stored as the row's
// payload.
func InsertBody() []byte { return []byte(insertPayload) }

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
