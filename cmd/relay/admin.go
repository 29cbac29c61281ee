package main

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
)

// The admin call, which the rendezvous is to use to place a match on a
// relay (docs/deployment.md, "Match relay"):
//
//	POST /matches
//	Authorization: Bearer <the token of -token-file>
//	{"machines": ["203.0.113.5:7000", "198.51.100.7:7000"]}
//
// opens a match between the machines, in slot order, and answers 201
// {"id": "<32 hex digits>"}; DELETE /matches/<id> closes it (204; 404
// when no live match has that id). A refusal answers its status with
// {"error": "<reason>", "message": "..."}: 400 bad_request, 401
// unauthorized, 409 address_in_use, 429 address_quota, 503 capacity
// (server.go).
//
// With -webrtc, {"seats": N} in place of the machines opens a match of N
// WebRTC seats (webrtc.go), and
//
//	POST /matches/<id>/signals
//	{"seat": 1, "kind": "offer", "data": "<SDP>"}
//
// applies a seat's signal (an offer, or a trickled candidate) and answers
// 200 {"signals": [...]}: the relay's answer to an offer, with every
// candidate of its own; nothing for a candidate. 409 seat_offered refuses
// a seat's second offer.

// maxOpenBody bounds an open request's body: 255 addresses and the JSON
// around them.
const maxOpenBody = 16 << 10

// maxSignalBody bounds a signal's body: the rendezvous's signals carry at
// most 8 KiB of data (lobby.MaxSignalData), escaped in JSON.
const maxSignalBody = 64 << 10

type openRequest struct {
	Machines []string `json:"machines,omitempty"`
	Seats    int      `json:"seats,omitempty"` // WebRTC seats, in place of Machines
}

type signalResponse struct {
	Signals []seatSignal `json:"signals"`
}

type openResponse struct {
	ID string `json:"id"`
}

type errorResponse struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// admin serves the admin call for s; token is the bearer token it takes
// (empty: it takes none, and refuses every call).
func admin(s *server, token string) http.Handler {
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if token == "" || !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
				writeRefusal(w, s.refuse(errUnauthorized))
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("POST /matches", auth(func(w http.ResponseWriter, r *http.Request) {
		var req openRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOpenBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeRefusal(w, s.refuse(badRequest("the body: %v", err)))
			return
		}
		if req.Seats != 0 || len(req.Machines) == 0 {
			if len(req.Machines) > 0 {
				writeRefusal(w, s.refuse(badRequest("machines and seats both given")))
				return
			}
			id, err := s.openSeats(req.Seats)
			if err != nil {
				writeRefusal(w, err)
				return
			}
			writeJSON(w, http.StatusCreated, openResponse{ID: id})
			return
		}
		machines := make([]netip.AddrPort, len(req.Machines))
		for i, a := range req.Machines {
			var err error
			if machines[i], err = netip.ParseAddrPort(a); err != nil {
				writeRefusal(w, s.refuse(badRequest("machine %d: %v", i, err)))
				return
			}
		}
		id, err := s.open(machines, false)
		if err != nil {
			writeRefusal(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, openResponse{ID: id})
	}))
	mux.HandleFunc("POST /matches/{id}/signals", auth(func(w http.ResponseWriter, r *http.Request) {
		var sig seatSignal
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSignalBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sig); err != nil {
			writeRefusal(w, s.refuse(badRequest("the body: %v", err)))
			return
		}
		out, err := s.signal(r.Context(), r.PathValue("id"), sig)
		if errors.Is(err, errNoMatch) {
			writeJSON(w, http.StatusNotFound, errorResponse{Error: "not_found", Message: err.Error()})
			return
		}
		if err != nil {
			writeRefusal(w, err)
			return
		}
		writeJSON(w, http.StatusOK, signalResponse{Signals: append([]seatSignal{}, out...)})
	}))
	mux.HandleFunc("DELETE /matches/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		if err := s.close(r.PathValue("id")); err != nil {
			writeJSON(w, http.StatusNotFound, errorResponse{Error: "not_found", Message: err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

func writeRefusal(w http.ResponseWriter, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		r = &refusal{http.StatusInternalServerError, "internal", err.Error()}
	}
	if r.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="relay"`)
	}
	writeJSON(w, r.status, errorResponse{Error: r.reason, Message: r.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
