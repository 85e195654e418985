package elicit_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-elicit/elicit/elicit"
)

// Build the form of the report-export workflow, then read an answer to it.
func ExampleFormSchema() {
	schema, err := elicit.FormSchema(
		elicit.TitledEnum("detail",
			elicit.Choice{Value: "summary", Title: "Summary"},
			elicit.Choice{Value: "detailed", Title: "Detailed"}).Title("Detail level").Required(),
		elicit.String("label").Title("Label").MinLength(1).MaxLength(80).Required(),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(schema.JSON()))

	a := elicit.DecodeAnswer(json.RawMessage(`{"action":"accept","content":{"detail":"detailed","label":"Q3 sales","extra":1}}`), schema)
	fmt.Println(a.Outcome, a.Content["detail"], a.Content["label"], len(a.Content))

	a = elicit.DecodeAnswer(json.RawMessage(`{"action":"accept","content":{"detail":"huge","label":""}}`), schema)
	fmt.Println(a.Outcome, "-", a.Problem)
	// Output:
	// {"type":"object","properties":{"detail":{"type":"string","title":"Detail level","oneOf":[{"const":"summary","title":"Summary"},{"const":"detailed","title":"Detailed"}]},"label":{"type":"string","title":"Label","minLength":1,"maxLength":80}},"required":["detail","label"]}
	// accepted detailed Q3 sales 2
	// invalid - Detail level (detail): must be one of the choices; Label (label): must be at least 1 character
}

// A field that asks for a secret is refused when the form is built; the
// error points to URL mode (ELI-S-01, ELI-S-02).
func ExampleFormSchema_secret() {
	_, err := elicit.FormSchema(elicit.String("api_key").Title("API key"))
	fmt.Println(errors.Is(err, elicit.ErrSecretField))
	fmt.Println(err)
	// Output:
	// true
	// elicit: invalid form schema: form mode must not ask for secrets (passwords, API keys, tokens, card data): use URL mode: property "api_key": its name mentions "api key"; ask for it in URL mode on the server's own page (ELI-S-01, ELI-S-02)
}

// Look for credentials in a link before sending or opening it.
func ExampleSecretsInURL() {
	for _, s := range elicit.SecretsInURL("https://evil.example/cb?access_token=abc&code=xyz&flow=1") {
		fmt.Printf("%q matched %q\n", s.Param, s.Word)
	}
	fmt.Println(len(elicit.SecretsInURL("https://mcp.example.com/ui/set_api_key?flow=0123")))
	// Output:
	// "access_token" matched "token"
	// "code" matched "code"
	// 0
}
