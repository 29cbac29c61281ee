package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// scrape returns the server's metrics in the Prometheus text format.
func scrape(t *testing.T, s *server) string {
	t.Helper()
	ms := httptest.NewServer(s.metrics.handler())
	defer ms.Close()
	resp, err := http.Get(ms.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// TestMetrics: what the server answered shows in its metrics, by route,
// status and refusal reason, and the gauges follow the registry.
func TestMetrics(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.Rate, cfg.Burst = 1, 6 // the fake clock never refills the bucket
	var logged bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	cfg.AccessLog = true
	s, base := start(t, cfg)
	c, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	call(t, base, "POST", "/v1/matches/"+strings.Repeat("Z", len(c.Code()))+"/seats", "", nil) // 404
	for range 5 {                                                                              // the bucket of 6 holds the create, the join and 4 of these
		call(t, base, "GET", "/no-such-file", "", nil)
	}
	text := scrape(t, s)
	for _, want := range []string{
		`rendezvous_http_responses_total{route="create",status="201"} 1`,
		`rendezvous_http_responses_total{route="join",status="404"} 1`,
		`rendezvous_http_responses_total{route="static",status="404"} 4`,
		`rendezvous_http_responses_total{route="static",status="429"} 1`,
		`rendezvous_refusals_total{reason="not_found"} 5`,
		`rendezvous_refusals_total{reason="rate_limited"} 1`,
		`rendezvous_matches 1`,
		`rendezvous_matches_full 0`,
		`rendezvous_long_polls 0`,
		`rendezvous_http_seconds_count{route="create"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	var requests []string
	for line := range strings.Lines(logged.String()) {
		if strings.Contains(line, "msg=request") {
			requests = append(requests, line)
		}
	}
	log := strings.Join(requests, "")
	if len(requests) != 7 || !strings.Contains(log, "route=create status=201") || !strings.Contains(log, "route=join status=404") ||
		!strings.Contains(log, "status=429 bytes=") || !strings.Contains(log, "error=rate_limited") {
		t.Errorf("the access log lacks the requests:\n%s", log)
	}
	if strings.Contains(log, c.Code()) {
		t.Errorf("the access log names the match code %s:\n%s", c.Code(), log)
	}
}

// TestNoAccessLog: without AccessLog a request writes no line.
func TestNoAccessLog(t *testing.T) {
	cfg := testConfig(newFakeClock())
	var logged bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	_, base := start(t, cfg)
	call(t, base, "GET", "/healthz", "", nil)
	if strings.Contains(logged.String(), "request") {
		t.Errorf("a request was logged: %s", logged.String())
	}
}
