package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcp-elicit/elicit/mcp"
)

// maxSafeInteger is 2^53−1, the largest integer an x-mcp-header argument
// may carry (server/tools.mdx §x-mcp-header).
const maxSafeInteger = 1<<53 - 1

// paramHeaders returns the Mcp-Param-* headers for args, a JSON object
// (HTTP-C-11): one per parameter whose argument is present and not null,
// encoded with mcp.EncodeHeaderValue. An argument that cannot be mirrored
// (an object, a fraction, an integer beyond ±(2^53−1)) is an error: the
// server would refuse the call.
func paramHeaders(params []mcp.HeaderParam, args json.RawMessage) (http.Header, error) {
	if len(params) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	obj, _ := v.(map[string]any)
	h := http.Header{}
	for _, p := range params {
		v, ok := p.Lookup(obj)
		if !ok {
			continue // HTTP-C-11: omitted for an absent or null argument
		}
		s, err := headerText(v)
		if err != nil {
			return nil, fmt.Errorf("argument %q (x-mcp-header %q): %w", strings.Join(p.Path, "."), p.Header, err)
		}
		h.Set(mcp.HeaderParamPrefix+p.Header, mcp.EncodeHeaderValue(s))
	}
	return h, nil
}

// headerText is the header form of one argument value (streamable-http.mdx §Value Encoding):
// strings as they are, integers in decimal, booleans true/false.
func headerText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			if i > maxSafeInteger || i < -maxSafeInteger {
				return "", errors.New("integer beyond ±(2^53−1)")
			}
			return strconv.FormatInt(i, 10), nil
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
			return "", fmt.Errorf("%s is not an integer within ±(2^53−1)", x)
		}
		return strconv.FormatInt(int64(f), 10), nil
	}
	return "", errors.New("value must be a string, an integer or a boolean")
}
