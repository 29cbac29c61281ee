package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// announcement is what the relay tells the rendezvous of itself (its
// POST /v1/relays; cmd/rendezvous, placement.go): who it is, where its
// admin call is, and its load. The rendezvous places relayed matches on
// the live relay with the smallest share of its capacity in use.
type announcement struct {
	ID         string `json:"id"`
	Admin      string `json:"admin"`
	UDP        string `json:"udp,omitempty"`
	WebRTC     string `json:"webrtc,omitempty"`
	Matches    int    `json:"matches"`
	MaxMatches int    `json:"max_matches"`
}

// announcer announces the relay to the rendezvous at base every period,
// with the bearer token, until ctx is done. Each announcement is bounded
// by the period; a failure is logged once, until one succeeds again.
type announcer struct {
	base, token string
	period      time.Duration
	client      *http.Client
	log         *slog.Logger
	at          announcement
	load        func() int
}

func newAnnouncer(base, token string, period time.Duration, at announcement, load func() int, log *slog.Logger) *announcer {
	var b [12]byte
	_, _ = rand.Read(b[:])
	at.ID = hex.EncodeToString(b[:])
	return &announcer{base: strings.TrimRight(base, "/"), token: token, period: period,
		client: &http.Client{Timeout: period}, log: log, at: at, load: load}
}

func (a *announcer) loop(ctx context.Context) {
	t := time.NewTicker(a.period)
	defer t.Stop()
	// Each change of outcome is logged, the first outcome too.
	failing, known := false, false
	for {
		err := a.once(ctx)
		switch {
		case err != nil && (!known || !failing):
			a.log.Warn("announce", "rendezvous", a.base, "err", err)
		case err == nil && (!known || failing):
			a.log.Info("announce", "rendezvous", a.base, "ok", true)
		}
		failing, known = err != nil, true
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errAnnounce is a refused announcement.
type errAnnounce int

func (e errAnnounce) Error() string { return "the rendezvous answered " + http.StatusText(int(e)) }

func (a *announcer) once(ctx context.Context) error {
	at := a.at
	at.Matches = a.load()
	b, _ := json.Marshal(at)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/v1/relays", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return errAnnounce(resp.StatusCode)
	}
	return nil
}
