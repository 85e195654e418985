package mcp_test

import (
	"fmt"

	"github.com/mcp-elicit/elicit/mcp"
)

func ExampleEncodeHeaderValue() {
	fmt.Println(mcp.EncodeHeaderValue("us-west1"))
	fmt.Println(mcp.EncodeHeaderValue("Zürich"))
	fmt.Println(mcp.EncodeHeaderValue(" padded"))
	// Output:
	// us-west1
	// =?base64?WsO8cmljaA==?=
	// =?base64?IHBhZGRlZA==?=
}
