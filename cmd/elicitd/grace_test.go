//go:build unix

package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMGraceKeepsServing runs a real elicitd under load from
// keep-alive clients and sends SIGTERM: for --shutdown-grace /readyz says
// "not ready: shutting down" while every request, on old connections and
// new, is still served (each response closing its connection), none
// reset or refused; a second signal ends the grace and the process exits 0.
func TestSIGTERMGraceKeepsServing(t *testing.T) {
	dir, bin := buildElicitd(t)
	addr := freeLoopbackAddr(t)
	proc := startProcess(t, bin, environWithoutElicit(), "--addr", addr, "--data", filepath.Join(dir, "data"),
		"--audit-log", "off", "--shutdown-grace", "1m")

	const workers = 8
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: time.Minute}
	list := func() (*http.Response, error) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+metaURL+`}}`))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Authorization": "Bearer alice", "Mcp-Method": "tools/list"} {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != 200 {
				t.Errorf("tools/list: HTTP %d", resp.StatusCode)
			}
		}
		return resp, err
	}

	var (
		stop, draining             atomic.Bool
		sent, afterFlip, closedAny atomic.Int64
		failed                     atomic.Int64
		wg                         sync.WaitGroup
		warm                       sync.WaitGroup
	)
	warm.Add(workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for !stop.Load() {
				flipped := draining.Load()
				resp, err := list()
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					t.Errorf("request during the grace period: %v", err)
				} else if flipped {
					afterFlip.Add(1)
					if resp.Close {
						closedAny.Add(1)
					}
				}
				if first {
					first = false
					warm.Done()
				}
			}
		}()
	}
	warm.Wait() // every worker holds a keep-alive connection

	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	waitFor(t, "/readyz to say shutting down", func() bool {
		resp, err := fresh.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatalf("/readyz after SIGTERM: %v (the listener closed without a grace period)\n%s", err, proc.out.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 503 && string(body) == "not ready: shutting down\n"
	})
	draining.Store(true)
	waitFor(t, "requests after /readyz flipped", func() bool { return afterFlip.Load() >= 20*workers })
	stop.Store(true)
	wg.Wait()
	t.Logf("%d requests, %d of them after /readyz said not ready, %d failed; %d answered Connection: close",
		sent.Load(), afterFlip.Load(), failed.Load(), closedAny.Load())
	if failed.Load() != 0 || closedAny.Load() != afterFlip.Load() {
		t.Fatalf("%d requests failed during the grace period; %d of %d answers closed their connection", failed.Load(), closedAny.Load(), afterFlip.Load())
	}

	// A second signal ends the grace period at once.
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := proc.wait(); err != nil || proc.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("elicitd exit: %v\n%s", err, proc.out.String())
	}
	if !strings.Contains(proc.out.String(), "draining") {
		t.Fatalf("no draining line in the log:\n%s", proc.out.String())
	}
}
