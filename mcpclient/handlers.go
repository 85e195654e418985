package mcpclient

import (
	"context"

	"github.com/mcp-elicit/elicit/mcp"
)

// Asker identifies who is asking, for the user: the server's self-reported
// identity from server/discover (or result _meta) and the endpoint URL it
// was reached at, or the command that was launched. Consent UIs show both
// (ELI-C-01); only the endpoint's host, or the command, is verified.
type Asker struct {
	// Endpoint is the MCP endpoint URL the client talks to ("" for a
	// local command).
	Endpoint string
	// Command is the command line of the local server the client launched
	// (NewCommand); "" over HTTP.
	Command string
	// Server is the server's self-reported identity; nil when unknown.
	Server *mcp.Implementation
}

// Handlers answer the input requests of an InputRequiredResult on the
// user's side (basic/patterns/mrtr.mdx §Client Requirements). The client
// declares exactly the capabilities whose handlers are set, in every
// request's _meta: ElicitForm → elicitation.form, ElicitURL →
// elicitation.url, Sampling → sampling, Roots → roots.
//
// A handler returns the answer to put under the request's key. For
// elicitation, decline and cancel are answers (ElicitResult actions), not
// errors. A returned error aborts the whole call and is returned by
// CallTool (no retry is sent: MRTR-C-10).
type Handlers struct {
	// ElicitForm asks the user to fill a form (mode "form" or no mode).
	ElicitForm func(ctx context.Context, who Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error)
	// ElicitURL asks the user's consent to open p.URL (mode "url"). It must
	// not fetch or open the URL without the user's explicit yes (SEC-U-C-01,
	// SEC-U-C-02); accept means consent, not completion.
	ElicitURL func(ctx context.Context, who Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error)
	// Sampling answers sampling/createMessage (deprecated feature).
	Sampling func(ctx context.Context, who Asker, key string, p *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error)
	// Roots answers roots/list (deprecated feature).
	Roots func(ctx context.Context, who Asker, key string) (*mcp.ListRootsResult, error)
}

// Capabilities returns the client capabilities these handlers support.
func (h *Handlers) Capabilities() mcp.ClientCapabilities {
	var c mcp.ClientCapabilities
	if h == nil {
		return c
	}
	if h.ElicitForm != nil || h.ElicitURL != nil {
		c.Elicitation = &mcp.ElicitationCapability{}
		if h.ElicitForm != nil {
			c.Elicitation.Form = &mcp.Empty{}
		}
		if h.ElicitURL != nil {
			c.Elicitation.URL = &mcp.Empty{}
		}
	}
	if h.Sampling != nil {
		c.Sampling = &mcp.SamplingCapability{}
	}
	if h.Roots != nil {
		c.Roots = &mcp.RootsCapability{}
	}
	return c
}
