package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// externalTURN hands a full match's seats the URLs of TURN servers the
// operator runs (a coturn fleet with use-auth-secret and the same
// static-auth-secret), with credentials minted here: the TURN REST
// scheme, as the embedded relay's (relay.Credentials), which coturn
// accepts (it reads the expiry before the first colon). Such a server
// cannot ask whether a seat is still held, so the credential's lifetime
// is its only bound: keep it short (-turn-ttl).
type externalTURN struct {
	stun []string // stun: URLs, handed without credentials
	urls []string // turn: and turns: URLs
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	secrets []string // the first signs
}

// newExternalTURN checks the URLs (turn:, turns: or stun:, a host,
// nothing else) and the secrets.
func newExternalTURN(urls []string, secrets []string, ttl time.Duration, now func() time.Time) (*externalTURN, error) {
	if len(secrets) == 0 {
		return nil, errors.New("-turn-external needs the TURN servers' shared secret (-turn-secret-file or -turn-secret)")
	}
	e := &externalTURN{ttl: ttl, now: now, secrets: secrets}
	for _, u := range urls {
		scheme, err := checkTURNURL(u)
		if err != nil {
			return nil, err
		}
		if scheme == "stun" {
			e.stun = append(e.stun, u)
		} else {
			e.urls = append(e.urls, u)
		}
	}
	if len(e.urls) == 0 {
		return nil, errors.New("-turn-external names no turn: or turns: URL")
	}
	if e.ttl <= 0 {
		e.ttl = relay.DefaultCredentialTTL
	}
	return e, nil
}

// checkTURNURL accepts turn:host[:port][?transport=udp|tcp], turns: and
// stun:host[:port], and returns the scheme.
func checkTURNURL(u string) (scheme string, err error) {
	scheme, rest, ok := strings.Cut(u, ":")
	if !ok || (scheme != "turn" && scheme != "turns" && scheme != "stun") || rest == "" || strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("-turn-external %q: not a turn:, turns: or stun: URL (turn:turn.example.com:3478?transport=udp)", u)
	}
	hostport, query, _ := strings.Cut(rest, "?")
	if hostport == "" || strings.ContainsAny(hostport, "/@ ") {
		return "", fmt.Errorf("-turn-external %q: no host", u)
	}
	if query != "" {
		q, err := url.ParseQuery(query)
		if scheme == "stun" || err != nil || len(q) != 1 || (q.Get("transport") != "udp" && q.Get("transport") != "tcp") {
			return "", fmt.Errorf("-turn-external %q: the only query is a TURN URL's transport=udp or transport=tcp", u)
		}
	}
	return scheme, nil
}

// setSecrets replaces the secrets (the secrets file's apply).
func (e *externalTURN) setSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("no TURN secret")
	}
	e.mu.Lock()
	e.secrets = secrets
	e.mu.Unlock()
	return nil
}

// iceServers lists the external TURN servers with a credential for seat
// of the match with code, valid for ttl.
func (e *externalTURN) iceServers(code string, seat int) ([]lobby.ICEServer, error) {
	e.mu.Lock()
	secret := e.secrets[0]
	e.mu.Unlock()
	user, pass, err := relay.Credentials(secret, e.now().Add(e.ttl), code, seat)
	if err != nil {
		return nil, err
	}
	var servers []lobby.ICEServer
	if len(e.stun) > 0 {
		servers = append(servers, lobby.ICEServer{URLs: e.stun})
	}
	return append(servers, lobby.ICEServer{URLs: e.urls, Username: user, Credential: pass}), nil
}
