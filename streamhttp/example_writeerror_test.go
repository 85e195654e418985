package streamhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Another handler on the endpoint refuses a request as this one does: the
// HTTP status and a JSON-RPC error body.
func ExampleWriteError() {
	rec := httptest.NewRecorder()
	streamhttp.WriteError(rec, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Request body too large"))
	fmt.Print(rec.Code, " ", rec.Header().Get("Content-Type"), " ", rec.Body.String())
	// Output: 413 application/json {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large"}}
}
