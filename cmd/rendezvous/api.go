package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

const maxBody = 16 << 10 // bytes of a request body

var (
	errNotFound = errorf(http.StatusNotFound, lobby.CodeNotFound, "not found")
	errInternal = errorf(http.StatusInternalServerError, "internal", "internal error")
)

// serve routes a request: /healthz, the API under /v1/, and the static
// files for everything else. Every request counts against its client
// address's rate limit. ServeHTTP (metrics.go) counts what it answers.
func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("handler panic", "panic", v, "method", r.Method, "path", r.URL.Path)
			writeError(w, errInternal)
		}
	}()
	if s.limit != nil {
		if ok, wait := s.limit.allow(s.clientKey(r)); !ok {
			writeError(w, &apiError{status: http.StatusTooManyRequests, code: lobby.CodeRateLimited,
				msg: "too many requests from this address", retryAfter: wait})
			return
		}
	}
	if r.URL.Path == "/healthz" {
		s.health(w, r)
		return
	}
	if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
		s.api(w, r)
		return
	}
	s.static.ServeHTTP(w, r)
}

// api routes /v1/...: path segments, then the method.
func (s *server) api(w http.ResponseWriter, r *http.Request) {
	seg := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(seg) < 2 {
		writeError(w, errNotFound)
		return
	}
	for _, p := range seg {
		if p == "" {
			writeError(w, errNotFound)
			return
		}
	}
	switch {
	case len(seg) == 2 && seg[1] == "relays" && s.relays != nil:
		s.route(w, r, map[string]http.HandlerFunc{http.MethodPost: s.announceRelay})
	case seg[1] != "matches":
		writeError(w, errNotFound)
	case len(seg) == 2:
		s.route(w, r, map[string]http.HandlerFunc{http.MethodPost: s.create})
	case len(seg) == 3:
		s.route(w, r, map[string]http.HandlerFunc{http.MethodGet: s.match})
	case len(seg) == 4 && seg[3] == "seats":
		s.route(w, r, map[string]http.HandlerFunc{http.MethodPost: s.join})
	case len(seg) == 4 && seg[3] == "signals":
		s.route(w, r, map[string]http.HandlerFunc{http.MethodPost: s.send, http.MethodGet: s.receive})
	case len(seg) == 5 && seg[3] == "seats":
		s.route(w, r, map[string]http.HandlerFunc{http.MethodDelete: s.leave})
	default:
		writeError(w, errNotFound)
	}
}

// route calls the handler of r's method, or answers 405.
func (s *server) route(w http.ResponseWriter, r *http.Request, byMethod map[string]http.HandlerFunc) {
	if h := byMethod[r.Method]; h != nil {
		h(w, r)
		return
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if byMethod[m] != nil {
			allow = append(allow, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, errorf(http.StatusMethodNotAllowed, lobby.CodeMethodNotAllowed,
		r.Method+" is not allowed here; use "+strings.Join(allow, " or ")))
}

// pathSegment is the i-th segment of r's path (routing checked it exists).
func pathSegment(r *http.Request, i int) string {
	return strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[i]
}

// POST /v1/matches {"seats":N}
func (s *server) create(w http.ResponseWriter, r *http.Request) {
	var req lobby.CreateRequest
	if err := readJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Relayed && s.relays == nil {
		writeError(w, errorf(http.StatusBadRequest, lobby.CodeBadRequest, "this server places no match relays"))
		return
	}
	t, err := s.reg.create(req.Seats, s.clientKey(r), req.Relayed)
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("match created", "code", t.Code, "seats", req.Seats, "relayed", req.Relayed, "ip", s.clientIP(r))
	writeJSON(w, http.StatusCreated, t)
}

// POST /v1/matches/{code}/seats
//
// An address that has used up its failed guesses is refused before the
// code is looked at: whether the code exists is what it would learn.
func (s *server) join(w http.ResponseWriter, r *http.Request) {
	key := s.clientKey(r)
	if ok, wait := s.guesses.ready(key); !ok {
		writeError(w, guessesSpent(wait))
		return
	}
	t, err := s.reg.join(pathSegment(r, 2))
	if isGuess(err) {
		s.guesses.allow(key)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("seat taken", "code", t.Code, "seat", t.Seat, "ip", s.clientIP(r))
	writeJSON(w, http.StatusCreated, t)
}

// GET /v1/matches/{code}[?wait=1]
func (s *server) match(w http.ResponseWriter, r *http.Request) {
	wait := false
	if v := r.URL.Query().Get("wait"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, errorf(http.StatusBadRequest, lobby.CodeBadRequest, "wait must be 1 or 0"))
			return
		}
		wait = b
	}
	ref, err := s.authorize(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if wait && s.holdWaiter() {
		// A match that is full is answered here; one that has to wait is
		// parked if it can be.
		st, wk, err := s.lookMatch(ref)
		if err != nil || st.Full {
			s.releaseWaiter()
			s.writeMatch(w, ref, st, err)
			return
		}
		if conn := s.park(w, r); conn != nil {
			go s.parkMatch(conn, ref, s.cfg.MaxWait, wk)
			return
		}
		st, err = s.waitFull(r.Context(), ref, s.cfg.MaxWait, wk)
		s.releaseWaiter()
		s.writeMatch(w, ref, st, err)
		return
	}
	st, err := s.reg.state(ref)
	s.writeMatch(w, ref, st, err)
}

// writeMatch answers the match's state st (or err), with the ICE servers
// (and the seat's TURN credentials) once it is full.
func (s *server) writeMatch(w http.ResponseWriter, ref seatRef, st lobby.Match, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	if st.Full && st.Relayed && s.relays != nil {
		// Placed now, so that the seats' offers find it placed; if no
		// relay takes it, their signals try again.
		ctx, cancel := context.WithTimeout(context.Background(), relayCallTimeout)
		if _, err := s.place(ctx, ref.code, st.Seats); err != nil {
			s.log.Warn("placing a relayed match", "code", ref.code, "err", err)
		}
		cancel()
	}
	if st.Full && s.ice != nil {
		ice, err := s.ice.iceServers(ref.code, ref.seat)
		if err != nil {
			s.log.Error("TURN credentials", "err", err)
			writeError(w, errInternal)
			return
		}
		st.ICEServers = ice
	}
	writeJSON(w, http.StatusOK, st)
}

// POST /v1/matches/{code}/signals Signal
func (s *server) send(w http.ResponseWriter, r *http.Request) {
	ref, err := s.authorize(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var sig lobby.Signal
	if err := readJSON(w, r, &sig); err != nil {
		writeError(w, err)
		return
	}
	sig.From = ref.seat
	err = s.reg.send(ref, sig, s.clientKey(r))
	if errors.Is(err, errRelaySignal) {
		err = s.relaySignal(r.Context(), ref, sig)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// GET /v1/matches/{code}/signals[?wait=S][&after=N]
func (s *server) receive(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	var after uint64
	q := r.URL.Query()
	ack := q.Has("after")
	if ack {
		n, err := strconv.ParseUint(q.Get("after"), 10, 64)
		if err != nil {
			writeError(w, errorf(http.StatusBadRequest, lobby.CodeBadRequest, "after must be a whole number"))
			return
		}
		after = n
	}
	if v := q.Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, errorf(http.StatusBadRequest, lobby.CodeBadRequest, "wait must be a whole number of seconds"))
			return
		}
		wait = min(time.Duration(min(n, 3600))*time.Second, s.cfg.MaxWait)
	}
	ref, err := s.authorize(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if wait > 0 && !s.holdWaiter() {
		wait = 0
	} else if wait > 0 {
		// A poll that has signals to answer is answered here; one that
		// has to wait is parked if it can be.
		batch, wk, err := s.lookSignals(ref, ack, after, true)
		if err != nil || len(batch) > 0 {
			s.releaseWaiter()
			if err != nil {
				writeError(w, err)
			} else {
				writeJSON(w, http.StatusOK, batch)
			}
			return
		}
		if conn := s.park(w, r); conn != nil {
			go s.parkSignals(conn, ref, wait, ack, after, wk)
			return
		}
		wk.release()
		defer s.releaseWaiter()
	}
	batch, err := s.receiveWait(r.Context(), ref, wait, ack, after)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, batch)
}

// DELETE /v1/matches/{code}/seats/{seat}
func (s *server) leave(w http.ResponseWriter, r *http.Request) {
	ref, err := s.authorize(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if n, err := strconv.Atoi(pathSegment(r, 4)); err != nil || n != ref.seat {
		writeError(w, errorf(http.StatusForbidden, lobby.CodeForbidden, "a token can only leave its own seat"))
		return
	}
	if err := s.reg.leave(ref); err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("seat left", "code", ref.code, "seat", ref.seat)
	w.WriteHeader(http.StatusNoContent)
}

// GET /healthz
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, errorf(http.StatusMethodNotAllowed, lobby.CodeMethodNotAllowed, "only GET and HEAD here"))
		return
	}
	if err := s.reg.healthy(); err != nil {
		writeError(w, errStoreDown)
		return
	}
	matches, full, queued := s.reg.counts()
	h := struct {
		Status      string  `json:"status"`
		Store       string  `json:"store"`
		Matches     int     `json:"matches"`
		Full        int     `json:"full"`
		QueuedBytes int     `json:"queued_bytes"`
		LongPolls   int     `json:"long_polls"`
		Allocations int     `json:"turn_allocations"`
		Uptime      float64 `json:"uptime_seconds"`
	}{
		Status: "ok", Store: s.cfg.storeName(), Matches: matches, Full: full, QueuedBytes: queued,
		LongPolls: len(s.waiters), Uptime: s.cfg.Now().Sub(s.started).Seconds(),
	}
	if s.relay != nil {
		h.Allocations = s.relay.allocations()
	}
	writeJSON(w, http.StatusOK, h)
}

// authorize checks the bearer token against the match in the path. A
// wrong (or missing) token is a failed guess of the client's address:
// once it has used them up, it gets 429 in place of 401 until a guess is
// back. A right token passes whatever the address's guesses (tokens are
// 128 random bits: there is nothing to slow down, and a player behind the
// same address as a guesser keeps playing).
func (s *server) authorize(r *http.Request) (seatRef, error) {
	ref, err := s.reg.authorize(pathSegment(r, 2), bearer(r))
	if isGuess(err) {
		if ok, wait := s.guesses.allow(s.clientKey(r)); !ok {
			return seatRef{}, guessesSpent(wait)
		}
	}
	return ref, err
}

// guessesSpent is the answer to an address that has used up its failed
// guesses.
func guessesSpent(wait time.Duration) *apiError {
	return &apiError{status: http.StatusTooManyRequests, code: lobby.CodeRateLimited,
		msg:        "too many failed guesses (unknown match codes, wrong tokens) from this address; try again later",
		retryAfter: wait}
}

// holdWaiter takes a long-poll slot; false when all are taken (the
// request is then answered at once).
func (s *server) holdWaiter() bool {
	select {
	case s.waiters <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *server) releaseWaiter() { <-s.waiters }

// bearer is the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// clientKey is the key of the request's client address for the limits
// and quotas (addrKey: an IPv6 client by its /IPv6Prefix).
func (s *server) clientKey(r *http.Request) string {
	return addrKey(s.clientIP(r), s.cfg.IPv6Prefix)
}

// clientIP is the address a request came from: its connection's, or,
// when that is a trusted proxy's (config.TrustedProxies), the rightmost
// address in X-Forwarded-For that is not a trusted proxy's (what the
// first trusted proxy saw; the entries left of it are the client's
// claims).
func (s *server) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !s.trusted(host) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		if _, err := netip.ParseAddr(hop); err != nil {
			return host // a proxy we trust wrote something that is no address
		}
		if !s.trusted(hop) {
			return hop
		}
	}
	return host
}

// trusted says whether addr is a trusted proxy's.
func (s *server) trusted(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// readJSON decodes one JSON value of at most maxBody bytes into v, and
// nothing after it.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("trailing data after the JSON value")
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooBig):
		return errorf(http.StatusRequestEntityTooLarge, lobby.CodeTooLarge, "the request body is larger than 16 KiB")
	case errors.Is(err, io.EOF):
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "the request body is empty")
	default:
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "bad JSON: "+err.Error())
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeError answers with err's status and {"error":..., "code":...};
// an error that is not an *apiError is an internal one.
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = errInternal
	}
	if rec, ok := w.(interface{ refused(code string) }); ok {
		rec.refused(e.code)
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rewind"`)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.retryAfter+time.Second-1)/time.Second)))
	}
	writeJSON(w, e.status, lobby.ErrorBody{Error: e.msg, Code: e.code})
}
