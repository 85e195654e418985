package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// unavailable writes the answer of a server whose store is out (as
// docs/elicitd.md documents it): HTTP 503, Retry-After: 1, a retryable
// -32603.
func unavailable(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Temporarily unavailable; retry later","data":{"retryable":true,"retryAfterMs":1000}}}`)
}

// proxyPage is a proxy's own 503 page: HTML, no JSON-RPC.
func proxyPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, "<h1>503 Service Unavailable</h1>")
}

// unknownTask is a non-retryable error to a tasks/get.
func unknownTask(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown task"}}`)
}

// flaky stands in front of a real server: it answers the requests of
// one method with fail while failing(n) holds for the n-th of them (from
// 1; with after, counted from the first request of that method on), and
// passes everything else on. A nil fail refuses the connection instead
// (the server is unreachable).
type flaky struct {
	next    http.RoundTripper
	method  string
	after   string
	failing func(n int) bool
	fail    http.HandlerFunc

	mu    sync.Mutex
	sent  int // requests of method so far
	armed bool
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	m := r.Header.Get(mcp.HeaderMethod)
	f.mu.Lock()
	f.armed = f.armed || f.after == "" || m == f.after
	counted := m == f.method && f.armed
	if counted {
		f.sent++
	}
	n := f.sent
	f.mu.Unlock()
	if !counted {
		return f.next.RoundTrip(r)
	}
	switch {
	case !f.failing(n):
		return f.next.RoundTrip(r)
	case f.fail == nil:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	rec := &recordedResponse{header: http.Header{}}
	f.fail(rec, r)
	return rec.response(r), nil
}

func (f *flaky) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// recordedResponse is an http.ResponseWriter that becomes a response.
type recordedResponse struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recordedResponse) Header() http.Header         { return r.header }
func (r *recordedResponse) WriteHeader(code int)        { r.status = code }
func (r *recordedResponse) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recordedResponse) response(req *http.Request) *http.Response {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return &http.Response{StatusCode: r.status, Header: r.header, Request: req, ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(strings.NewReader(r.body.String())), ContentLength: int64(r.body.Len()), Status: http.StatusText(r.status)}
}

// TestTaskPollRetries: a tasks/get or tasks/update of a followed task
// that fails transiently (the documented 503 of a store outage, a
// proxy's 503 page, a server unreachable for a while) is sent again,
// and the call ends with the tool's result, the question asked once.
// An outage longer than TaskRetryWindow, or a non-retryable error, ends
// the call with a *TaskError naming the task, which may still run.
func TestTaskPollRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		after   string
		failing func(n int) bool
		fail    http.HandlerFunc
		wantErr bool // else the result
		maxSent int  // at most this many requests of method (0: no bound)
	}{
		{name: "3 polls answer 503", method: mcp.MethodTasksGet, failing: between(1, 3), fail: unavailable},
		{name: "the polls after the update answer 503", method: mcp.MethodTasksGet, after: mcp.MethodTasksUpdate, failing: between(1, 2), fail: unavailable},
		{name: "a proxy's 503 page", method: mcp.MethodTasksGet, failing: between(2, 3), fail: proxyPage},
		{name: "the update answers 503", method: mcp.MethodTasksUpdate, failing: between(1, 2), fail: unavailable},
		{name: "unreachable for 90 s", method: mcp.MethodTasksGet, failing: between(2, 1000), fail: nil},
		{name: "unreachable for good", method: mcp.MethodTasksGet, failing: between(2, 1<<30), fail: nil, wantErr: true},
		{name: "503 for good", method: mcp.MethodTasksGet, failing: between(1, 1<<30), fail: unavailable, wantErr: true},
		{name: "-32602 fails at once", method: mcp.MethodTasksGet, failing: between(1, 1<<30), fail: unknownTask, wantErr: true, maxSent: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := taskTools(nil)
				defer s.WaitTasks() // a task left behind runs to its question
				hc := mcptest.PipeServer(t, streamhttp.NewHandler(s, nil))
				failing := tc.failing
				if tc.name == "unreachable for 90 s" {
					// The outage is a span of time, not of polls.
					var back time.Time
					failing = func(n int) bool {
						if back.IsZero() && n >= 2 {
							back = time.Now().Add(90 * time.Second)
						}
						return n >= 2 && time.Now().Before(back)
					}
				}
				f := &flaky{next: hc.Transport, method: tc.method, after: tc.after, failing: failing, fail: tc.fail}
				hc.Transport = f
				asked := 0
				var id string
				c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Handlers: recipient(&asked), Extensions: withTasks, Logger: quiet(),
					OnTaskUpdate: func(u mcpclient.TaskUpdate) { id = u.TaskID }})
				r, err := c.CallTool(context.Background(), "export", nil)
				if tc.maxSent > 0 && f.count() > tc.maxSent {
					t.Errorf("%d %s sent, want at most %d", f.count(), tc.method, tc.maxSent)
				}
				if !tc.wantErr {
					if err != nil || r.Content[0].Text != "sent to ada@example.com in a task: yes" || asked != 1 {
						t.Fatalf("result %+v, err %v, asked %d times", r, err, asked)
					}
					return
				}
				var te *mcpclient.TaskError
				if !errors.As(err, &te) || te.TaskID != id || te.Tool != "export" || id == "" ||
					!strings.Contains(err.Error(), "task "+id) || !strings.Contains(err.Error(), "may still be running") {
					t.Fatalf("err = %v (%#v), want a *TaskError for task %q", err, err, id)
				}
			})
		})
	}
}

// between(a, b) holds for a ≤ n ≤ b.
func between(a, b int) func(int) bool { return func(n int) bool { return a <= n && n <= b } }

// TestTaskRetryWindow: a transient outage is retried for TaskRetryWindow
// from its first failure, with growing waits that honour Retry-After;
// then the call ends with a *TaskError whose cause is the last failure.
func TestTaskRetryWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := taskTools(nil)
		defer s.WaitTasks()
		hc := mcptest.PipeServer(t, streamhttp.NewHandler(s, nil))
		var at []time.Duration
		start := time.Now()
		f := &flaky{next: hc.Transport, method: mcp.MethodTasksGet, failing: func(int) bool {
			at = append(at, time.Since(start))
			return true
		}, fail: unavailable}
		hc.Transport = f
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Extensions: withTasks, Logger: quiet()})
		_, err := c.CallTool(context.Background(), "export", nil)
		var (
			te  *mcpclient.TaskError
			rpc *mcpclient.RPCError
		)
		if !errors.As(err, &te) || !errors.As(err, &rpc) || rpc.Code != -32603 || rpc.RetryAfter != time.Second {
			t.Fatalf("err = %v", err)
		}
		outage := at[len(at)-1] - at[0]
		if outage > mcpclient.TaskRetryWindow || outage < mcpclient.TaskRetryWindow-mcpclient.MaxTaskPoll {
			t.Fatalf("retried for %v, want about %v", outage, mcpclient.TaskRetryWindow)
		}
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < time.Second || gap > mcpclient.MaxTaskPoll {
				t.Fatalf("wait %d was %v: below Retry-After or above MaxTaskPoll (%v)", i, gap, at)
			}
		}
	})
}

// A host tells a task it stopped following (the server refused a poll,
// or stayed unreachable past TaskRetryWindow) from a failed call: the
// task may still be running, so it shows the id instead of calling
// again, which would start a second task.
func ExampleTaskError() {
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(nil)
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		return mcpserver.Text("Report exported."), nil
	}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
	h := streamhttp.NewHandler(s, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == mcp.MethodTasksGet {
			unknownTask(w, r) // a proxy in front lost track of the task
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer s.WaitTasks()

	c := mcpclient.New(srv.URL, &mcpclient.Options{Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil}})
	_, err := c.CallTool(context.Background(), "export", nil)
	var te *mcpclient.TaskError
	var rpc *mcpclient.RPCError
	if errors.As(err, &te) && errors.As(err, &rpc) {
		fmt.Printf("task of %s, id of %d characters, may still be running (the server said %d)\n", te.Tool, len(te.TaskID), rpc.Code)
	}
	// Output:
	// task of export, id of 32 characters, may still be running (the server said -32602)
}
