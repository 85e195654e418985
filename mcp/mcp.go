// Package mcp holds the Model Context Protocol 2026-07-28 types and
// constants: request metadata, capabilities, server/discover, tools,
// prompts, resources, completion, the multi round-trip (MRTR) types
// InputRequiredResult / InputRequests / InputResponses, elicitation,
// sampling and roots, and the protocol error codes. It also holds the
// Streamable HTTP wire rules that servers and clients share, so both sides
// apply the same ones: the standard header names and the header value
// codec, the x-mcp-header rules of a tool's inputSchema
// (ToolHeaderParams), and the set of MRTR methods. It does no I/O.
//
// Field and type names follow schema/2026-07-28/schema.ts.
package mcp

import "encoding/json"

// ProtocolVersion is the revision this package implements.
const ProtocolVersion = "2026-07-28"

// Request metadata keys (basic/index.mdx §Per-request protocol fields).
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaProgressToken      = "progressToken"
)

// Error codes defined by MCP 2026-07-28 (basic/index.mdx §Error Codes). All
// three are answered with HTTP 400 on Streamable HTTP.
const (
	// CodeHeaderMismatch: a standard header is missing, malformed or
	// disagrees with the body. No data.
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability: the request needs a client
	// capability the request's _meta did not declare. Data is
	// MissingCapabilityData.
	CodeMissingRequiredClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the protocol version is not served.
	// Data is UnsupportedVersionData.
	CodeUnsupportedProtocolVersion = -32022
)

// Result types (basic/index.mdx §ResultType).
const (
	ResultTypeComplete      = "complete"
	ResultTypeInputRequired = "input_required"
)

// Methods of 2026-07-28 that a server answers.
const (
	MethodDiscover              = "server/discover"
	MethodToolsList             = "tools/list"
	MethodToolsCall             = "tools/call"
	MethodPromptsList           = "prompts/list"
	MethodPromptsGet            = "prompts/get"
	MethodResourcesList         = "resources/list"
	MethodResourcesRead         = "resources/read"
	MethodResourceTemplatesList = "resources/templates/list"
	MethodCompletionComplete    = "completion/complete"
	MethodSubscriptionsListen   = "subscriptions/listen"
)

// Methods that appear only inside InputRequests.
const (
	MethodElicitationCreate = "elicitation/create"
	MethodSamplingCreate    = "sampling/createMessage"
	MethodRootsList         = "roots/list"
)

// Notification methods a server may send on a response stream.
const (
	NotificationProgress = "notifications/progress"
	NotificationMessage  = "notifications/message"
)

// NotificationCancelled is the one notification a client sends, and only
// on stdio, to cancel a request in progress (basic/patterns/cancellation.mdx;
// on Streamable HTTP closing the response stream cancels). Its params are
// CancelledParams.
const NotificationCancelled = "notifications/cancelled"

// CancelledParams are the params of notifications/cancelled.
type CancelledParams struct {
	// RequestID is the id of the request to cancel, as the client sent it
	// (a JSON string or integer).
	RequestID json.RawMessage `json:"requestId"`
	// Reason is optional text for logs; it is the client's, untrusted.
	Reason string `json:"reason,omitempty"`
}

// Empty is the "{}" used for capability flags that carry no settings.
type Empty struct{}

// Implementation names a client or server (schema Implementation).
type Implementation struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
}

// ElicitationCapability declares the elicitation modes a client handles.
// An empty object (neither mode set) means form mode only (CAP-C-02).
type ElicitationCapability struct {
	Form *Empty `json:"form,omitempty"`
	URL  *Empty `json:"url,omitempty"`
}

// SamplingCapability declares sampling support (deprecated feature).
type SamplingCapability struct {
	Context *Empty `json:"context,omitempty"`
	Tools   *Empty `json:"tools,omitempty"`
}

// RootsCapability declares roots support (deprecated feature). Older
// clients may still send listChanged; it is accepted and ignored.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ClientCapabilities is what a client declares in every request's _meta
// (schema ClientCapabilities). Nil members are not declared.
type ClientCapabilities struct {
	Elicitation  *ElicitationCapability     `json:"elicitation,omitempty"`
	Sampling     *SamplingCapability        `json:"sampling,omitempty"`
	Roots        *RootsCapability           `json:"roots,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ElicitationForm reports whether form-mode elicitation was declared:
// "elicitation": {} or "elicitation": {"form": {}, ...}.
func (c *ClientCapabilities) ElicitationForm() bool {
	if c == nil || c.Elicitation == nil {
		return false
	}
	return c.Elicitation.Form != nil || c.Elicitation.URL == nil
}

// ElicitationURL reports whether URL-mode elicitation was declared.
func (c *ClientCapabilities) ElicitationURL() bool {
	return c != nil && c.Elicitation != nil && c.Elicitation.URL != nil
}

// HasSampling reports whether sampling was declared.
func (c *ClientCapabilities) HasSampling() bool { return c != nil && c.Sampling != nil }

// HasRoots reports whether roots was declared.
func (c *ClientCapabilities) HasRoots() bool { return c != nil && c.Roots != nil }

// ServerCapabilities is what server/discover advertises.
type ServerCapabilities struct {
	Tools        *ListChangedCapability     `json:"tools,omitempty"`
	Prompts      *ListChangedCapability     `json:"prompts,omitempty"`
	Resources    *ResourcesCapability       `json:"resources,omitempty"`
	Completions  *Empty                     `json:"completions,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ListChangedCapability is the shape of the tools and prompts capabilities.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the resources server capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// RequestMeta is the decoded _meta of a client request (schema
// RequestMetaObject). Unknown keys are kept in Other.
type RequestMeta struct {
	ProtocolVersion    string
	ClientCapabilities ClientCapabilities
	ClientInfo         *Implementation
	LogLevel           string
	// ProgressToken is the raw JSON string or number, nil when absent.
	ProgressToken json.RawMessage
	Other         map[string]json.RawMessage
}

// MissingCapabilityData is the data of a -32021 error.
type MissingCapabilityData struct {
	RequiredCapabilities ClientCapabilities `json:"requiredCapabilities"`
}

// UnsupportedVersionData is the data of a -32022 error.
type UnsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// ResultMeta is a result's _meta (schema ResultMetaObject).
type ResultMeta map[string]any

// CacheScope values for cacheable results (server/utilities/caching.mdx).
const (
	CacheScopePublic  = "public"
	CacheScopePrivate = "private"
)

// DiscoverResult answers server/discover (server/discover.mdx).
type DiscoverResult struct {
	ResultType        string             `json:"resultType"`
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	TTLMs             int64              `json:"ttlMs"`
	CacheScope        string             `json:"cacheScope"`
	Meta              ResultMeta         `json:"_meta,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour (schema ToolAnnotations).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool describes a tool in tools/list. InputSchema and OutputSchema are raw
// JSON so that every JSON Schema 2020-12 keyword survives verbatim.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Meta         map[string]any   `json:"_meta,omitempty"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	ResultType string     `json:"resultType"`
	Tools      []*Tool    `json:"tools"`
	NextCursor string     `json:"nextCursor,omitempty"`
	TTLMs      int64      `json:"ttlMs"`
	CacheScope string     `json:"cacheScope"`
	Meta       ResultMeta `json:"_meta,omitempty"`
}

// Content is one content block: text, image, audio, resource_link or
// resource (schema ContentBlock). Only the members of its Type are set.
type Content struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	Data     string            `json:"data,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	URI      string            `json:"uri,omitempty"`
	Name     string            `json:"name,omitempty"`
	Resource *ResourceContents `json:"resource,omitempty"`
}

// TextContent returns a text block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ImageContent returns an image block with base64 data.
func ImageContent(data, mimeType string) Content {
	return Content{Type: "image", Data: data, MimeType: mimeType}
}

// AudioContent returns an audio block with base64 data.
func AudioContent(data, mimeType string) Content {
	return Content{Type: "audio", Data: data, MimeType: mimeType}
}

// EmbeddedResource returns a resource block.
func EmbeddedResource(r ResourceContents) Content { return Content{Type: "resource", Resource: &r} }

// CallToolResult is the complete result of tools/call (schema CallToolResult).
// Content is always encoded, as an empty array when nil.
type CallToolResult struct {
	ResultType        string     `json:"resultType"`
	Content           []Content  `json:"content"`
	StructuredContent any        `json:"structuredContent,omitempty"`
	IsError           bool       `json:"isError,omitempty"`
	Meta              ResultMeta `json:"_meta,omitempty"`
}

// PromptArgument describes one prompt argument.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt describes a prompt in prompts/list.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// ListPromptsResult answers prompts/list.
type ListPromptsResult struct {
	ResultType string     `json:"resultType"`
	Prompts    []*Prompt  `json:"prompts"`
	NextCursor string     `json:"nextCursor,omitempty"`
	TTLMs      int64      `json:"ttlMs"`
	CacheScope string     `json:"cacheScope"`
	Meta       ResultMeta `json:"_meta,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult is the complete result of prompts/get.
type GetPromptResult struct {
	ResultType  string          `json:"resultType"`
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        ResultMeta      `json:"_meta,omitempty"`
}

// Resource describes a resource in resources/list.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ResourceTemplate describes a URI template in resources/templates/list.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ResourceContents is the text or blob (base64) of a resource.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// ListResourcesResult answers resources/list.
type ListResourcesResult struct {
	ResultType string      `json:"resultType"`
	Resources  []*Resource `json:"resources"`
	NextCursor string      `json:"nextCursor,omitempty"`
	TTLMs      int64       `json:"ttlMs"`
	CacheScope string      `json:"cacheScope"`
	Meta       ResultMeta  `json:"_meta,omitempty"`
}

// ListResourceTemplatesResult answers resources/templates/list.
type ListResourceTemplatesResult struct {
	ResultType        string              `json:"resultType"`
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string              `json:"nextCursor,omitempty"`
	TTLMs             int64               `json:"ttlMs"`
	CacheScope        string              `json:"cacheScope"`
	Meta              ResultMeta          `json:"_meta,omitempty"`
}

// ReadResourceResult is the complete result of resources/read.
type ReadResourceResult struct {
	ResultType string             `json:"resultType"`
	Contents   []ResourceContents `json:"contents"`
	TTLMs      int64              `json:"ttlMs"`
	CacheScope string             `json:"cacheScope"`
	Meta       ResultMeta         `json:"_meta,omitempty"`
}

// CompleteResult answers completion/complete.
type CompleteResult struct {
	ResultType string     `json:"resultType"`
	Completion Completion `json:"completion"`
	Meta       ResultMeta `json:"_meta,omitempty"`
}

// Completion holds at most 100 completion values.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// InputRequiredResult is the interim MRTR result (basic/patterns/mrtr.mdx):
// at least one of InputRequests and RequestState is set (MRTR-S-07).
type InputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
	Meta          ResultMeta              `json:"_meta,omitempty"`
}

// InputRequest is one server-to-client request embedded in an
// InputRequiredResult: {"method", "params"} with no jsonrpc and no id.
// Params is *ElicitRequestParams, *CreateMessageRequestParams or nil (roots).
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// ElicitationMode values.
const (
	ElicitationModeForm = "form"
	ElicitationModeURL  = "url"
)

// ElicitRequestParams are the params of elicitation/create in either mode
// (schema ElicitRequestFormParams | ElicitRequestURLParams). Form mode sets
// RequestedSchema; URL mode sets URL and Mode "url".
type ElicitRequestParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
}

// IsURL reports whether the params are URL mode; absent mode means form (ELI-C-04).
func (p *ElicitRequestParams) IsURL() bool { return p.Mode == ElicitationModeURL }

// Elicitation actions (schema ElicitResult.action).
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ElicitResult is the client's answer to elicitation/create. Content is set
// only for a form-mode accept.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// SamplingMessage is one message of a sampling request (deprecated feature).
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// ModelHint names a model family (sampling).
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ModelPreferences are advisory model choices (sampling).
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// CreateMessageRequestParams are the params of sampling/createMessage.
type CreateMessageRequestParams struct {
	Messages         []SamplingMessage `json:"messages"`
	MaxTokens        int               `json:"maxTokens"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
}

// CreateMessageResult is the client's answer to sampling/createMessage.
// Content is kept raw: a block or an array of blocks.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
}

// Root is one client root (deprecated feature); URI is a file:// URI.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRootsResult is the client's answer to roots/list.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// ProgressParams are the params of notifications/progress.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// Serves reports whether a server with capabilities c answers method:
// server/discover always; the list, get, call and read methods only when
// their capability is advertised, since a method gated by a capability
// the server did not advertise is -32601 (basic/index.mdx). Methods of
// extensions (tasks) are not decided here: their gate is the extension's.
func (c *ServerCapabilities) Serves(method string) bool {
	switch method {
	case MethodDiscover:
		return true
	case MethodToolsList, MethodToolsCall:
		return c.Tools != nil
	case MethodPromptsList, MethodPromptsGet:
		return c.Prompts != nil
	case MethodResourcesList, MethodResourcesRead, MethodResourceTemplatesList:
		return c.Resources != nil
	case MethodCompletionComplete:
		return c.Completions != nil
	}
	return false
}
