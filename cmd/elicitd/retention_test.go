package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/calendar"
)

// TestOAuthAttemptsCappedAndSwept is the attack of the retention finding:
// a user POSTs to their own /connect/<id> 300 times. Past the cap
// (--max-oauth-attempts) the page answers 429 and stores nothing; the cap
// frees once the attempts are older than connect.AttemptTTL; and sweeps
// remove the attempts after --retain-attempts and their operations after
// --retain-operations, each counted in elicitd_swept_rows_total and
// logged.
func TestOAuthAttemptsCappedAndSwept(t *testing.T) {
	const maxAttempts = 20
	e := newEnvWith(t, func(c *config) {
		c.maxOAuthAttempts = maxAttempts
		c.retainFlows, c.retainAttempts, c.retainOperations = time.Hour, time.Hour, 24*time.Hour
	})
	c := &calEnv{env: e, provider: e.app.calendarProvider, pages: &recorder{}}
	link := c.link(c.call(1, "mallory", calendar.ToolName, ""))
	b := c.browser()
	status, page := c.open(b, link, "mallory")
	if status != 200 {
		t.Fatalf("connect page: %d", status)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}}
	postAttempts(t, b, link, form, 300, maxAttempts)
	if n := storedAttempts(t, e); n != maxAttempts {
		t.Fatalf("%d attempts stored after 300 POSTs, want the cap, %d", n, maxAttempts)
	}
	if n := strings.Count(e.logs.String(), "event=oauth_attempts_capped"); n != 300-maxAttempts {
		t.Fatalf("%d capped audit lines, want %d", n, 300-maxAttempts)
	}

	// The attempts expire, and the cap frees: one more attempt works. The
	// flow expired with them (a flow lives as long as the state, 10
	// minutes), so it is on a new flow's page.
	e.advance(connect.AttemptTTL)
	link = c.link(c.call(2, "mallory", calendar.ToolName, ""))
	if status, _, _ := b.post(link, form); status != http.StatusSeeOther {
		t.Fatalf("POST after the attempts expired: %d", status)
	}
	if res, err := e.app.sweeper.sweep(t.Context()); err != nil || res.Total() != 0 {
		t.Fatalf("sweep within the retention: %+v, %v; want nothing removed", res, err)
	}

	// Past --retain-attempts the attempts go (and the expired flow), the
	// operations that wrote them stay for --retain-operations.
	e.advance(2 * time.Hour)
	res, err := e.app.sweeper.sweep(t.Context())
	if err != nil || res.Records[connect.AttemptKind] != maxAttempts+1 || res.Flows != 2 || res.Operations != 0 {
		t.Fatalf("sweep after 2h: %+v, %v; want %d attempts and the two flows", res, err, maxAttempts+1)
	}
	if n := storedAttempts(t, e); n != 0 {
		t.Fatalf("%d attempts left", n)
	}
	e.advance(24 * time.Hour)
	if res, err = e.app.sweeper.sweep(t.Context()); err != nil || res.Operations != maxAttempts+1 {
		t.Fatalf("sweep after 26h: %+v, %v; want the %d attempts' operations", res, err, maxAttempts+1)
	}
	checkSweepReported(t, e, c.browser())
}

// storedAttempts counts mallory's stored OAuth attempts.
func storedAttempts(t *testing.T, e *env) int {
	t.Helper()
	rs, err := e.app.sweeper.st.ListRecords(t.Context(), connect.AttemptKind, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	return len(rs)
}

// postAttempts POSTs form to link n times: the first limit redirect to
// the provider, the rest are the capped page (429, no Location).
func postAttempts(t *testing.T, b *browser, link string, form url.Values, n, limit int) {
	t.Helper()
	counts := map[int]int{}
	for range n {
		status, loc, page := b.post(link, form)
		counts[status]++
		if status == http.StatusTooManyRequests && (loc != "" || !strings.Contains(page, `id="too-many"`)) {
			t.Fatalf("capped POST: %q\n%s", loc, page)
		}
	}
	if counts[http.StatusSeeOther] != limit || counts[http.StatusTooManyRequests] != n-limit {
		t.Fatalf("%d POSTs: %v, want %d redirects and the rest 429", n, counts, limit)
	}
}

// checkSweepReported: the two sweeps' rows are counted in
// elicitd_swept_rows_total and logged.
func checkSweepReported(t *testing.T, e *env, b *browser) {
	t.Helper()
	_, _, m := b.get(e.url + "/metrics")
	for _, want := range []string{
		`elicitd_swept_rows_total{kind="oauth_attempt"} 21`, `elicitd_swept_rows_total{kind="operations"} 21`,
		`elicitd_swept_rows_total{kind="flows"} 2`, `elicitd_swept_rows_total{kind="report_draft"} 0`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(m, "elicitd_swept"))
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `msg="swept the store" flows=2 oauth_attempt=21`) || !strings.Contains(logs, `msg="swept the store" sessions=1 operations=21`) {
		t.Fatalf("sweeps not logged:\n%s", grepLines(logs, "time="))
	}
}

// The retention settings refuse ages that would break a guarantee.
func TestRetentionSettingsMinimums(t *testing.T) {
	for _, args := range [][]string{
		{"--retain-operations", "10m"}, // a replay could still arrive
		{"--retain-attempts", "5m"},    // an attempt lives 10 minutes
		{"--max-oauth-attempts", "0"},
		{"--store-timeout", "0s"},
		{"--retain-flows", "-1s"},
	} {
		if _, err := loadConfig(args, func(string) string { return "" }, nil); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	cfg, err := loadConfig([]string{"--retain-reports", "720h", "--shutdown-grace", "0s"}, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.retention(); r.Records["report_draft"] != 720*time.Hour || r.Records["report_send"] != 720*time.Hour ||
		r.Records[connect.AttemptKind] != time.Hour || r.Operations != 24*time.Hour || cfg.shutdownGrace != 0 {
		t.Fatalf("retention %+v, grace %v", r, cfg.shutdownGrace)
	}
}
