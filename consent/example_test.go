package consent_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mcp-elicit/elicit/consent"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// A Cyrillic "а" in place of the Latin one: the host looks like apple.com
// but is another domain. InspectURL says so, in both forms, before anyone
// is asked to open it.
func ExampleInspectURL() {
	r, err := consent.InspectURL("https://\u0430pple.com/signin")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.URL)
	fmt.Println(r.Host, "=", r.ASCIIHost)
	fmt.Println("domain:", r.RegistrableDomain)
	for _, w := range r.Warnings {
		fmt.Println(w.Kind+":", w.Message)
	}

	_, err = consent.InspectURL("javascript:alert(document.cookie)")
	fmt.Println(err)
	// Output:
	// https://xn--pple-43d.com/signin
	// аpple.com = xn--pple-43d.com
	// domain: xn--pple-43d.com
	// mixed-script: Mixed writing systems in the host: "аpple" mixes Cyrillic and Latin; it may imitate "apple.com" but it is xn--pple-43d.com.
	// idn: The host is an internationalized domain name: аpple.com is really xn--pple-43d.com (punycode).
	// consent: URL refused: scheme "javascript" is not http or https
}

// The registrable domain is what says who owns a site; RenderURL
// highlights it inside the full URL.
func ExampleURLReport_Highlight() {
	r, _ := consent.InspectURL("https://login.bank.example.evil.co.uk/verify")
	fmt.Println(r.Highlight(func(s string) string { return "[" + s + "]" }))
	// Output:
	// https://login.bank.example.[evil.co.uk]/verify
}

// In line mode (stdin not a terminal) the user's words are read line by
// line: here the user consents, then presses Enter once the page is done.
// The URL is printed for the user to open, since AllowOpen is false.
func ExampleTerminal() {
	t := &consent.Terminal{In: strings.NewReader("accept\n\n"), Out: os.Stdout}
	h := t.Handlers()
	who := mcpclient.Asker{Endpoint: "https://mcp.example.com/mcp", Server: &mcp.Implementation{Name: "billing", Version: "1.0"}}
	res, err := h.ElicitURL(context.Background(), who, "billing_key", &mcp.ElicitRequestParams{
		Mode: mcp.ElicitationModeURL, Message: "Connect your payment provider.", URL: "https://mcp.example.com/ui/set_api_key?flow=ab12"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("answer:", res.Action)
	// Output:
	//
	// The server asks you to open a web page (URL-mode elicitation).
	//   Server:   mcp.example.com — the endpoint you connected to
	//   Name:     "billing 1.0" — self-reported, not verified
	//   Message:  Connect your payment provider.
	//   URL:      https://mcp.[example.com]/ui/set_api_key?flow=ab12
	//   Domain:   example.com
	//   Nothing has been opened or fetched.
	// Type accept to consent to opening this page, :decline to refuse, or :cancel to dismiss:
	// Open this URL in your browser yourself:
	//   https://mcp.example.com/ui/set_api_key?flow=ab12
	// When you have finished on the page, press Enter to continue (or type :cancel to stop):
	// answer: accept
}
