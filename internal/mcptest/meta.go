package mcptest

import "strings"

// ProtocolVersion is the protocol revision the tests speak.
const ProtocolVersion = "2026-07-28"

// Meta returns the "_meta" member that every 2026-07-28 request carries
// in its params (basic/index.mdx §_meta, RequestMetaObject), for a JSON literal:
//
//	"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":CAPS,MEMBERS...}
//
// caps is the client capabilities object as JSON text ("{}" for none).
// members are more members of _meta as JSON text, such as
// `"progressToken":"p1"` or `"io.modelcontextprotocol/clientInfo":{...}`;
// they follow the two required ones in the order given.
func Meta(caps string, members ...string) string {
	var b strings.Builder
	b.WriteString(`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":`)
	b.WriteString(caps)
	for _, m := range members {
		b.WriteString(",")
		b.WriteString(m)
	}
	b.WriteString("}")
	return b.String()
}
