package endpoint

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/mcp-elicit/elicit/jsonrpc"
)

func TestStatusFor(t *testing.T) {
	tests := []struct{ code, status int }{
		{-32020, 400}, {-32021, 400}, {-32022, 400},
		{jsonrpc.CodeParseError, 400}, {jsonrpc.CodeInvalidRequest, 400}, {jsonrpc.CodeInvalidParams, 400},
		{jsonrpc.CodeMethodNotFound, 404}, {jsonrpc.CodeInternalError, 500}, {-1, 500}, {0, 500},
	}
	for _, tt := range tests {
		if got := StatusFor(tt.code); got != tt.status {
			t.Errorf("StatusFor(%d) = %d, want %d", tt.code, got, tt.status)
		}
	}
}

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Request body too large"))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large"}}` + "\n"
	if rec.Code != 413 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != want || rec.Header().Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Errorf("%d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
}

// A result that cannot be encoded is a 500 with -32603, never a half answer.
func TestWriteJSONUnencodable(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, 200, &jsonrpc.Response{ID: jsonrpc.IntID(3), Result: math.NaN()})
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error"}}` + "\n"
	if rec.Code != 500 || rec.Body.String() != want {
		t.Errorf("%d %q", rec.Code, rec.Body.String())
	}
}
