// Package consent is the user's side of elicitation on a terminal: it
// shows who asks and what, and lets the user accept, decline or cancel
// (MCP 2026-07-28 client/elicitation.mdx; docs/protocol.md §Elicitation; ELI-C-*, ELI-U-C-*,
// SEC-U-C-*).
//
//   - InspectURL examines a URL-mode elicitation URL without fetching it:
//     the complete URL, the host in Unicode and punycode forms, the
//     registrable domain (public suffix + 1), and warnings for IDN and
//     mixed-script hosts, plain http, IP-address hosts and invisible
//     characters. Non-http(s) URLs (javascript:, data:, file:) and URLs
//     with a user name or password before the host are refused outright.
//   - RenderURL writes the consent screen: which server asks (endpoint
//     host verified, name self-reported), the message, the full URL with
//     its registrable domain highlighted, and the warnings.
//   - Terminal implements mcpclient.Handlers: URL consent, forms for every
//     primitive of the spec with defaults, a review step and distinct
//     decline and cancel, and the deprecated sampling and roots requests,
//     either as terminal forms or in a plain line mode for pipes and tests.
//
// Every string from the server is shown through SafeText's rules (the
// module's one sanitizer, also used by the elicit command and package
// check): control, bidi and invisible characters appear as escapes.
//
// # Public surface
//
// Terminal (with HumanModel); InspectURL, URLReport, Warning and
// WarningKind, RenderURL, AskerLines and SafeText for hosts that draw
// their own consent screen; RootFromPath and IsTerminal; the errors
// ErrDeclined, ErrRefusedRequest, ErrRefusedURL, ErrUnusableForm.
package consent
