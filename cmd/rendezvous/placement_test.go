package main

import (
	"net/http"
	"testing"
	"time"
)

// leastLoaded picks the relay with the smallest share of its capacity in
// use, skips full ones and those tried, and breaks ties by id.
func TestLeastLoaded(t *testing.T) {
	live := []relayInfo{
		{ID: "a", Matches: 50, MaxMatches: 100}, // 0.5
		{ID: "b", Matches: 10, MaxMatches: 10},  // full
		{ID: "c", Matches: 30, MaxMatches: 100}, // 0.3
		{ID: "d", Matches: 300, MaxMatches: 1000},
	}
	for _, tc := range []struct {
		tried []string
		want  string
		ok    bool
	}{
		{nil, "c", true},
		{[]string{"c"}, "d", true},
		{[]string{"c", "d"}, "a", true},
		{[]string{"a", "c", "d"}, "", false},
	} {
		tried := map[string]bool{}
		for _, id := range tc.tried {
			tried[id] = true
		}
		got, ok := leastLoaded(live, tried)
		if ok != tc.ok || got.ID != tc.want {
			t.Errorf("tried %v: got %q (%v), want %q (%v)", tc.tried, got.ID, ok, tc.want, tc.ok)
		}
	}
	if got, _ := leastLoaded([]relayInfo{{ID: "y"}, {ID: "x"}}, nil); got.ID != "x" {
		t.Errorf("a tie went to %q, want x", got.ID)
	}
}

// An announcement lasts RelayTTL on the store's clock; one with a bad id
// or admin URL, or without the relays' token, is refused.
func TestAnnounceExpires(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.RelayToken = testRelayToken
	s, base := start(t, cfg)
	for _, tc := range []struct {
		token, body string
		want        int
	}{
		{testRelayToken, `{"id":"r1","admin":"http://127.0.0.1:7101","matches":3,"max_matches":10}`, http.StatusNoContent},
		{"", `{"id":"r2","admin":"http://127.0.0.1:7101"}`, http.StatusUnauthorized},
		{testRelayToken, `{"id":"r.3","admin":"http://127.0.0.1:7101"}`, http.StatusBadRequest},
		{testRelayToken, `{"id":"r4","admin":"ftp://127.0.0.1:7101"}`, http.StatusBadRequest},
	} {
		if a := call(t, base, http.MethodPost, "/v1/relays", tc.token, []byte(tc.body)); a.status != tc.want {
			t.Errorf("announce %s with token %q: %d, want %d", tc.body, tc.token, a.status, tc.want)
		}
	}
	live, err := s.reg.liveRelays()
	if err != nil || len(live) != 1 || live[0].ID != "r1" || live[0].Matches != 3 {
		t.Fatalf("live relays %+v, %v", live, err)
	}
	clock.Advance(cfg.RelayTTL - time.Second)
	if live, _ := s.reg.liveRelays(); len(live) != 1 {
		t.Fatalf("%d live relays before the TTL", len(live))
	}
	clock.Advance(2 * time.Second)
	if live, _ := s.reg.liveRelays(); len(live) != 0 {
		t.Fatalf("%d live relays after the TTL", len(live))
	}
}
