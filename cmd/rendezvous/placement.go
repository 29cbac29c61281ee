package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// Relayed lobbies (issue 50: addresses stay private). A match created with
// {"relayed": true} is played through a match relay (cmd/relay): its seats
// connect to the relay over WebRTC (rtc.DialRelay), one peer connection
// each, and never to each other. The relay is the match's extra party in
// signaling, number Seats (the seat after the last): a seat may signal it
// only, and it only signals the seats, so no seat receives another's
// session descriptions or candidates, and the only address the rendezvous
// hands a seat is the relay's (in the relay's answer).
//
// Relays announce themselves (POST /v1/relays, with the relays' bearer
// token, every few seconds): an id, the URL of their admin call, their
// public addresses and load. An announcement expires after
// config.RelayTTL; the store keeps them (in memory, or in NATS for every
// instance). When a seat of a full relayed match first signals the relay
// (or waits for the match, once it is full), the rendezvous places the
// match: it picks the live relay with the fewest matches for its size,
// opens a match of Seats WebRTC seats there by the admin call (POST
// /matches {"seats": N}, the same bearer token), and records the relay and
// the match's id on it in the store, once: an instance that placed it too
// late closes its own (DELETE /matches/{id}). Then each signal a seat sends
// the relay is the admin call POST /matches/{id}/signals, and the relay's
// answer is queued for the seat as a signal from party Seats.

// relaySender is the address key the relay's signals are charged to.
const relaySender = "relay"

// maxRelays bounds the announcements a store keeps.
const maxRelays = 256

// relayCallTimeout bounds an admin call to a relay (an offer's answer
// waits for the relay's candidates: 5 s at most).
const relayCallTimeout = 10 * time.Second

// relayInfo is a relay's announcement.
type relayInfo struct {
	ID         string    `json:"id"`                    // the relay process's own random id
	Admin      string    `json:"admin"`                 // its admin call's base URL (http://10.0.0.5:7101)
	UDP        string    `json:"udp,omitempty"`         // its UDP address, for machines over rollback/udp
	WebRTC     string    `json:"webrtc,omitempty"`      // its WebRTC (ICE) address
	Matches    int       `json:"matches"`               // the matches it holds
	MaxMatches int       `json:"max_matches,omitempty"` // the most it holds
	Expires    time.Time `json:"expires"`               // set by the rendezvous: now + RelayTTL
}

// placement is where a relayed match is played.
type placement struct {
	Relay string `json:"relay"` // the relay's id
	Admin string `json:"admin"` // its admin call's base URL
	Match string `json:"match"` // the match's id on it
}

// errRelaySignal is the store's answer to a seat's signal to its relayed
// match's relay: the handler carries it to the relay.
// (An *apiError, so that the stores pass it through as they do answers;
// no client gets it.)
var errRelaySignal = &apiError{status: http.StatusAccepted, code: "relay", msg: "a signal for the match relay"}

// errRelayOnly refuses a signal between two seats of a relayed match.
var errRelayOnly = errorf(http.StatusForbidden, lobby.CodeForbidden,
	"in a relayed match a seat signals only the relay (to = the match's seats)")

// errNoRelay answers a relayed match's signal when no relay could take it.
var errNoRelay = &apiError{status: http.StatusServiceUnavailable, code: lobby.CodeUnavailable,
	msg: "no match relay could take the match; try again shortly", retryAfter: time.Second}

// checkRelayed is the store's rule for a signal into a relayed match:
// only to the relay (errRelaySignal), never to a seat.
func checkRelayed(sig lobby.Signal, seats int, relayed bool) error {
	switch {
	case !relayed:
		return nil
	case sig.To != seats:
		return errRelayOnly
	case !lobby.ValidKind(sig.Kind) || len(sig.Data) > lobby.MaxSignalData:
		return checkSignal(lobby.Signal{To: 0, From: 1, Kind: sig.Kind, Data: sig.Data}, 2)
	}
	return errRelaySignal
}

// checkFromRelay checks a signal from a relayed match's relay.
func checkFromRelay(sig lobby.Signal, seats int, relayed bool) error {
	if !relayed || sig.From != seats || sig.To < 0 || sig.To >= seats || !lobby.ValidKind(sig.Kind) || len(sig.Data) > lobby.MaxSignalData {
		return errorf(http.StatusBadGateway, "bad_relay", "the relay's signal is not one for this match")
	}
	return nil
}

// POST /v1/relays relayInfo, Bearer <the relays' token>
//
// A relay announces itself; without config.RelayToken there is no such
// route. A wrong token is a failed guess.
func (s *server) announceRelay(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(bearer(r)), []byte(s.cfg.RelayToken)) != 1 {
		if ok, wait := s.guesses.allow(s.clientKey(r)); !ok {
			writeError(w, guessesSpent(wait))
			return
		}
		writeError(w, errUnauthorized)
		return
	}
	var a relayInfo
	if err := readJSON(w, r, &a); err != nil {
		writeError(w, err)
		return
	}
	u, err := url.Parse(a.Admin)
	if !validRelayID(a.ID) || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || a.Matches < 0 {
		writeError(w, errorf(http.StatusBadRequest, lobby.CodeBadRequest, "an announcement needs an id and an http(s) admin URL"))
		return
	}
	a.Expires = s.cfg.Now().Add(s.cfg.RelayTTL)
	if err := s.reg.announce(a); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// relayClient makes the admin calls to the relays.
type relayClient struct {
	http  *http.Client
	token string

	mu      sync.Mutex
	placing map[string]chan struct{} // matches this instance is placing: closed when done
}

func newRelayClient(token string) *relayClient {
	return &relayClient{http: &http.Client{Timeout: relayCallTimeout}, token: token, placing: map[string]chan struct{}{}}
}

// call makes one admin call; out, if set, takes the JSON answer of a 2xx.
func (c *relayClient) call(ctx context.Context, method, u string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	return resp.StatusCode, nil
}

// place returns the relay the relayed match with code (of seats seats) is
// placed on, placing it now if it is not: one placement at a time per
// match in this instance; the store keeps the first of any instance's.
func (s *server) place(ctx context.Context, code string, seats int) (placement, error) {
	c := s.relays
	for {
		p, err := s.reg.placement(code)
		if err != nil || p.Match != "" {
			return p, err
		}
		c.mu.Lock()
		wait, busy := c.placing[code]
		if !busy {
			wait = make(chan struct{})
			c.placing[code] = wait
		}
		c.mu.Unlock()
		if busy {
			select {
			case <-wait:
				continue // look again
			case <-ctx.Done():
				return placement{}, ctx.Err()
			}
		}
		p, err = s.placeOnce(ctx, code, seats)
		c.mu.Lock()
		delete(c.placing, code)
		close(wait)
		c.mu.Unlock()
		return p, err
	}
}

// placeOnce picks the least loaded live relay, opens the match on it, and
// records it (or the placement another instance recorded first).
func (s *server) placeOnce(ctx context.Context, code string, seats int) (placement, error) {
	live, err := s.reg.liveRelays()
	if err != nil {
		return placement{}, err
	}
	tried := map[string]bool{}
	for range min(len(live), 3) {
		a, ok := leastLoaded(live, tried)
		if !ok {
			break
		}
		tried[a.ID] = true
		var opened struct {
			ID string `json:"id"`
		}
		base := strings.TrimRight(a.Admin, "/")
		status, err := s.relays.call(ctx, http.MethodPost, base+"/matches", map[string]int{"seats": seats}, &opened)
		if err != nil || status != http.StatusCreated || opened.ID == "" {
			s.log.Warn("relay refused a match", "relay", a.ID, "status", status, "err", err)
			continue
		}
		p, err := s.reg.place(code, placement{Relay: a.ID, Admin: base, Match: opened.ID})
		if err != nil || p.Match != opened.ID {
			// Another instance placed it first, or the match is gone.
			_, _ = s.relays.call(ctx, http.MethodDelete, base+"/matches/"+url.PathEscape(opened.ID), nil, nil)
			s.countPlacement("lost")
		}
		if err == nil && p.Match == opened.ID {
			s.log.Info("match placed", "code", code, "relay", p.Relay, "relay_match", p.Match)
			s.countPlacement("placed")
		}
		return p, err
	}
	s.countPlacement("none")
	return placement{}, errNoRelay
}

func (s *server) countPlacement(result string) {
	if s.metrics != nil {
		s.metrics.placements.WithLabelValues(result).Inc()
	}
}

// leastLoaded is the relay of live not in tried with the smallest share
// of its capacity in use (the fewest matches when it gives none).
func leastLoaded(live []relayInfo, tried map[string]bool) (relayInfo, bool) {
	var best relayInfo
	found := false
	load := func(a relayInfo) float64 {
		if a.MaxMatches > 0 {
			return float64(a.Matches) / float64(a.MaxMatches)
		}
		return float64(a.Matches)
	}
	for _, a := range live {
		if tried[a.ID] || a.MaxMatches > 0 && a.Matches >= a.MaxMatches {
			continue
		}
		if !found || load(a) < load(best) || load(a) == load(best) && a.ID < best.ID {
			best, found = a, true
		}
	}
	return best, found
}

// relaySignal carries a seat's signal to its match's relay, placing the
// match first if it is not placed, and queues the relay's answer for the
// seat.
func (s *server) relaySignal(ctx context.Context, ref seatRef, sig lobby.Signal) error {
	if s.relays == nil {
		return errNoRelay
	}
	st, err := s.reg.state(ref)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, relayCallTimeout)
	defer cancel()
	p, err := s.place(ctx, ref.code, st.Seats)
	if err != nil {
		var e *apiError
		if errors.As(err, &e) {
			return err
		}
		s.log.Warn("placing a relayed match", "code", ref.code, "err", err)
		return errNoRelay
	}
	type seatSignal struct {
		Seat int    `json:"seat"`
		Kind string `json:"kind"`
		Data string `json:"data"`
	}
	var out struct {
		Signals []seatSignal `json:"signals"`
	}
	status, err := s.relays.call(ctx, http.MethodPost, p.Admin+"/matches/"+url.PathEscape(p.Match)+"/signals",
		seatSignal{Seat: ref.seat, Kind: sig.Kind, Data: sig.Data}, &out)
	switch {
	case err != nil:
		s.log.Warn("relay signal", "code", ref.code, "relay", p.Relay, "err", err)
		return errNoRelay
	case status == http.StatusConflict:
		return nil // the seat's offer, sent again after its answer was lost: the relay has it
	case status == http.StatusBadRequest:
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "the relay refused the signal")
	case status != http.StatusOK:
		s.log.Warn("relay signal", "code", ref.code, "relay", p.Relay, "status", status)
		return errNoRelay
	}
	if len(out.Signals) > 4 {
		return errorf(http.StatusBadGateway, "bad_relay", "the relay answered too many signals")
	}
	for _, a := range out.Signals {
		if err := s.reg.fromRelay(ref.code, lobby.Signal{From: st.Seats, To: ref.seat, Kind: a.Kind, Data: a.Data}); err != nil {
			return err
		}
	}
	return nil
}

// validRelayID: 1 to 64 letters, digits, '-' and '_' (a NATS key).
func validRelayID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
