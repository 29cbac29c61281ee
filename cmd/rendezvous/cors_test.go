package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

const allowedOrigin = "https://games.example.com"

// startCORS runs a server behind withCORS, as main does with -cors.
func startCORS(t *testing.T, origins ...string) string {
	t.Helper()
	s, err := newServer(testConfig(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(withCORS(s, origins))
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return hs.URL
}

// corsFields are the answer's Access-Control-* headers.
func corsFields(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

// varies reports whether the answer's Vary names field.
func varies(h http.Header, field string) bool {
	for _, v := range h.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), field) {
				return true
			}
		}
	}
	return false
}

// TestCORS: with -cors, an allowed origin's API requests get its origin
// back (and Vary: Origin), its preflights are answered; another origin's
// get no CORS header; the static files get none either.
func TestCORS(t *testing.T) {
	base := startCORS(t, allowedOrigin, "http://localhost:3000")

	create := []byte(`{"seats":2}`)
	ans := fetchBody(t, base, "POST", "/v1/matches", create, "Origin: "+allowedOrigin, "Content-Type: application/json")
	if ans.status != http.StatusCreated {
		t.Fatalf("create from the allowed origin: %d %s", ans.status, ans.body)
	}
	if ans.header.Get("Access-Control-Allow-Origin") != allowedOrigin || !varies(ans.header, "Origin") ||
		ans.header.Get("Access-Control-Expose-Headers") != "Retry-After" {
		t.Errorf("create from the allowed origin: headers %v", ans.header)
	}
	// An error answer carries them too: the page can read why.
	ans = fetch(t, base, "GET", "/v1/matches/nosuchcode", "Origin: http://localhost:3000")
	if ans.status < 400 || ans.header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("an error to the allowed origin: %d %v", ans.status, ans.header)
	}

	ans = fetch(t, base, "OPTIONS", "/v1/matches/abc/signals", "Origin: "+allowedOrigin,
		"Access-Control-Request-Method: POST", "Access-Control-Request-Headers: authorization, content-type")
	h := ans.header
	if ans.status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != allowedOrigin ||
		h.Get("Access-Control-Allow-Methods") != "GET, POST, DELETE" || h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" ||
		h.Get("Access-Control-Max-Age") != "600" || !varies(h, "Origin") {
		t.Errorf("a preflight from the allowed origin: %d %v", ans.status, h)
	}

	for _, origin := range []string{"https://evil.example.com", "https://games.example.com.evil.example", "null", "http://games.example.com"} {
		ans := fetchBody(t, base, "POST", "/v1/matches", create, "Origin: "+origin)
		if len(corsFields(ans.header)) > 0 || !varies(ans.header, "Origin") {
			t.Errorf("create from %s: CORS headers %v (Vary %q)", origin, corsFields(ans.header), ans.header.Values("Vary"))
		}
		ans = fetch(t, base, "OPTIONS", "/v1/matches", "Origin: "+origin, "Access-Control-Request-Method: POST")
		if len(corsFields(ans.header)) > 0 || ans.status == http.StatusNoContent {
			t.Errorf("a preflight from %s: %d, CORS headers %v", origin, ans.status, corsFields(ans.header))
		}
	}
	if ans := fetch(t, base, "POST", "/v1/matches"); len(corsFields(ans.header)) > 0 {
		t.Errorf("no Origin: CORS headers %v", corsFields(ans.header))
	}
	if ans := fetch(t, base, "GET", "/", "Origin: "+allowedOrigin); len(corsFields(ans.header)) > 0 || varies(ans.header, "Origin") {
		t.Errorf("the page: CORS headers %v", ans.header)
	}
}

// TestCORSOff: without -cors no origin gets a CORS header, and the
// handler is the server itself.
func TestCORSOff(t *testing.T) {
	base := startCORS(t)
	ans := fetch(t, base, "OPTIONS", "/v1/matches", "Origin: "+allowedOrigin, "Access-Control-Request-Method: POST")
	if len(corsFields(ans.header)) > 0 || ans.status != http.StatusMethodNotAllowed {
		t.Errorf("a preflight without -cors: %d %v", ans.status, ans.header)
	}
	next := http.NewServeMux()
	if h := withCORS(next, nil); h != http.Handler(next) {
		t.Errorf("withCORS without origins is %T, not the handler it wraps", h)
	}
}

func TestCORSOrigins(t *testing.T) {
	got, err := parseOrigins(" https://games.example.com, HTTP://LocalHost:3000 ,https://a.example:443,http://b.example:80/,, http://[::1]:8080")
	want := []string{"https://games.example.com", "http://localhost:3000", "https://a.example", "http://b.example", "http://[::1]:8080"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parseOrigins: %q, %v; want %q", got, err, want)
	}
	if got, err := parseOrigins(""); err != nil || len(got) != 0 {
		t.Errorf("no origins: %q %v", got, err)
	}
	for _, bad := range []string{"*", "null", "games.example.com", "https://", "https://x.example/path", "https://x.example?q",
		"https://user@x.example", "ftp://x.example", "https://x.example:99999", "https://x.example:", "https://x.example#f", "https://x.example:port"} {
		if _, err := parseOrigins("https://ok.example," + bad); err == nil {
			t.Errorf("parseOrigins(%q): no error", bad)
		} else if !strings.Contains(err.Error(), "origin") && !strings.Contains(err.Error(), "port") {
			t.Errorf("parseOrigins(%q): unclear error %v", bad, err)
		}
	}
	if err := run([]string{"-cors", "*", "-turn", ""}, noEnv); err == nil || !strings.Contains(err.Error(), "-cors") {
		t.Errorf("run -cors '*': %v", err)
	}
}
