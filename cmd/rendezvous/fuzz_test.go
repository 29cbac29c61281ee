package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// FuzzHandler sends the handler arbitrary requests: whatever the method,
// path, token and body, the answer is never a 5xx (but the documented 503
// of a server at its limits), and every error answer is an error body.
// "{code}", "{open}", "{token}" and "{token1}" in the path, token and body
// stand for a full match's code, a match's that is not full, and the full
// match's seat 0 and seat 1 tokens, so the fuzzer reaches past the token
// check.
func FuzzHandler(f *testing.F) {
	cfg := testConfig(newFakeClock())
	cfg.MaxWait = time.Millisecond
	cfg.MaxMatches = 1000
	s, err := newServer(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	full0, err := s.reg.create(2, "192.0.2.1", false)
	if err != nil {
		f.Fatal(err)
	}
	full1, err := s.reg.join(full0.Code)
	if err != nil {
		f.Fatal(err)
	}
	open, err := s.reg.create(3, "127.0.0.1", false)
	if err != nil {
		f.Fatal(err)
	}
	fill := strings.NewReplacer("{code}", full0.Code, "{open}", open.Code, "{token}", full0.Token, "{token1}", full1.Token)

	f.Add("POST", "/v1/matches", "", `{"seats":2}`)
	f.Add("POST", "/v1/matches/{open}/seats", "", "")
	f.Add("GET", "/v1/matches/{code}?wait=1", "{token}", "")
	f.Add("POST", "/v1/matches/{code}/signals", "{token}", `{"to":1,"kind":"offer","data":"v=0"}`)
	f.Add("GET", "/v1/matches/{code}/signals?wait=25", "{token1}", "")
	f.Add("GET", "/v1/matches/{code}/signals?wait=0&after=3", "{token1}", "")
	f.Add("GET", "/healthz", "", "")
	f.Add("GET", "/", "", "")
	f.Add("DELETE", "/v1/matches/{code}/seats/1", "{token1}", "") // last: it revokes {token1}
	f.Fuzz(func(t *testing.T, method, path, token, body string) {
		path, token, body = fill.Replace(path), fill.Replace(token), fill.Replace(body)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, "http://rendezvous.test"+path, strings.NewReader(body))
		if err != nil || req.URL.Host != "rendezvous.test" {
			t.Skip() // not a request a client can send
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.RemoteAddr = "127.0.0.1:1234"
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var e lobby.ErrorBody
		switch {
		case rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable:
			t.Fatalf("%s %q: %d %s", method, path, rec.Code, rec.Body)
		case rec.Code >= 400 && (json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" || e.Code == ""):
			t.Fatalf("%s %q: %d with body %q", method, path, rec.Code, rec.Body)
		case rec.Code == http.StatusServiceUnavailable && e.Code != lobby.CodeUnavailable && e.Code != lobby.CodeStoreDown:
			t.Fatalf("%s %q: 503 %q", method, path, rec.Body)
		}
	})
}
