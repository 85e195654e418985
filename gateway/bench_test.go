package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// The gateway's cost per request, in process: the same requests to an
// upstream directly and through the gateway (both on loopback HTTP, as
// scripts/bench-gateway runs them across processes). Profile with
//
//	go test -run '^$' -bench Gateway -cpuprofile cpu.out ./gateway

const benchMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`

// benchUpstream serves echo and confirm (one form, then done), as the
// benchmark server's tools do.
func benchUpstream(b *testing.B) string {
	s := mcpserver.New(mcp.Implementation{Name: "bench", Version: "1"}, &mcpserver.Options{Logger: quietLog()})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := req.BindArguments(&args); err != nil {
				return nil, err
			}
			return mcpserver.Text(args.Text), nil
		})
	s.AddTool(&mcp.Tool{Name: "confirm"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.State == nil {
			return mcpserver.Ask().ElicitForm("confirm", "Send it?",
				json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)).WithState([]byte("draft-42")), nil
		}
		if a := req.Elicitation("confirm"); a.Outcome != elicit.Accepted {
			return mcpserver.ToolError("not sent"), nil
		}
		return mcpserver.Text("sent " + string(req.State)), nil
	})
	ts := httptest.NewServer(streamhttp.NewHandler(s, &streamhttp.Options{Logger: quietLog()}))
	b.Cleanup(ts.Close)
	return ts.URL
}

var stateRE = regexp.MustCompile(`"requestState":"([^"]+)"`)

// post sends one tools/call and returns the response body.
func post(c *http.Client, url, tool, params string) ([]byte, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `",` + params + benchMeta + `}}`
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion)
	req.Header.Set("Mcp-Method", mcp.MethodToolsCall)
	req.Header.Set("Mcp-Name", tool)
	req.Header.Set("Authorization", "Bearer bench")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && (resp.StatusCode != 200 || bytes.Contains(out, []byte(`"error"`))) {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
	}
	return out, err
}

// mrtr makes one call of confirm: the question, then the answer.
func mrtr(c *http.Client, url string) error {
	first, err := post(c, url, "confirm", `"arguments":{},`)
	if err != nil {
		return err
	}
	m := stateRE.FindSubmatch(first)
	if m == nil {
		return fmt.Errorf("no requestState: %s", first)
	}
	_, err = post(c, url, "confirm", `"arguments":{},"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+string(m[1])+`",`)
	return err
}

func BenchmarkGateway(b *testing.B) {
	up := benchUpstream(b)
	_, gw := startGateway(b, Options{Upstreams: []Upstream{{Name: "up", URL: up, Revision: Revision2026}}})
	targets := []struct{ name, url string }{{"direct", up}, {"gateway", gw}}
	echo := func(c *http.Client, url string) error {
		_, err := post(c, url, "echo", `"arguments":{"text":"hello"},`)
		return err
	}
	// call16: 16 at once (8 per core), more than net/http's default pool
	// keeps idle per host.
	ops := []struct {
		name        string
		parallelism int
		op          func(c *http.Client, url string) error
	}{{"call", 1, echo}, {"call16", 8, echo}, {"mrtr", 1, mrtr}}
	for _, tg := range targets {
		for _, o := range ops {
			b.Run(o.name+"/"+tg.name, func(b *testing.B) {
				c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				b.SetParallelism(o.parallelism)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := o.op(c, tg.url); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
