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

// maxOpenBody bounds an open request's body: 255 addresses and the JSON
// around them.
const maxOpenBody = 16 << 10

type openRequest struct {
	Machines []string `json:"machines"`
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
