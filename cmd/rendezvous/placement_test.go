package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
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

// fakeRelayAdmin is a relay's admin call that opens a match at every
// POST /matches (holding each until hold have arrived), and records the
// deletes.
type fakeRelayAdmin struct {
	mu      sync.Mutex
	opened  []string
	deleted []string
	arrived chan struct{}
	release chan struct{}
}

func (f *fakeRelayAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testRelayToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/matches":
		f.arrived <- struct{}{}
		<-f.release
		f.mu.Lock()
		id := fmt.Sprintf("m%d", len(f.opened))
		f.opened = append(f.opened, id)
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/matches/"):
		f.mu.Lock()
		f.deleted = append(f.deleted, strings.TrimPrefix(r.URL.Path, "/matches/"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestNATSPlacementOnce: two instances on one NATS store place the same
// relayed lobby at once, each opening a match on the relay (announced to
// one of them, seen by both): the store keeps the first placement, both
// instances answer it, and the other match is deleted on the relay.
func TestNATSPlacementOnce(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	clock := newFakeClock()
	ns := startNATS(t, t.TempDir(), -1)
	var ins [2]*server
	var bases [2]string
	for i := range ins {
		cfg := testConfig(clock)
		cfg.Store, cfg.NATSURL, cfg.RelayToken = storeNATS, ns.ClientURL(), testRelayToken
		ins[i], bases[i] = start(t, cfg)
	}
	admin := &fakeRelayAdmin{arrived: make(chan struct{}, 2), release: make(chan struct{})}
	relaySrv := httptest.NewServer(admin)
	t.Cleanup(relaySrv.Close)
	if a := call(t, bases[0], http.MethodPost, "/v1/relays", testRelayToken,
		fmt.Appendf(nil, `{"id":"r1","admin":%q,"matches":0,"max_matches":10}`, relaySrv.URL)); a.status != http.StatusNoContent {
		t.Fatalf("announce: %d %s", a.status, a.body)
	}
	host, err := lobby.Create(ctx, bases[0], 2, &lobby.Options{Relayed: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lobby.Join(ctx, bases[1], host.Code(), nil); err != nil {
		t.Fatal(err)
	}
	var got [2]placement
	var errs [2]error
	var wg sync.WaitGroup
	for i, s := range ins {
		wg.Go(func() { got[i], errs[i] = s.place(ctx, host.Code(), 2) })
	}
	for range 2 { // both instances are opening a match on the relay
		select {
		case <-admin.arrived:
		case <-ctx.Done():
			t.Fatal("the instances did not both call the relay")
		}
	}
	close(admin.release)
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	stored, err := ins[0].reg.placement(host.Code())
	if err != nil {
		t.Fatal(err)
	}
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if got[0] != stored || got[1] != stored || stored.Relay != "r1" || len(admin.opened) != 2 {
		t.Fatalf("placements %+v and %+v, stored %+v; the relay opened %v", got[0], got[1], stored, admin.opened)
	}
	loser := admin.opened[0]
	if loser == stored.Match {
		loser = admin.opened[1]
	}
	if len(admin.deleted) != 1 || admin.deleted[0] != loser {
		t.Fatalf("the relay's deletes %v, want the losing match %s", admin.deleted, loser)
	}
}
