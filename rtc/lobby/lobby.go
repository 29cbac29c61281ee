// Package lobby is the rendezvous server's protocol (cmd/rendezvous) as its
// clients see it: the JSON wire types the server and its clients share, and
// [Client], which creates a match or joins one by its code, waits until
// every seat is taken, and then relays WebRTC signaling (offers, answers and
// ICE candidates, opaque strings to the server) between the seats.
//
// A match has 2 to [MaxSeats] seats, the machines' indexes 0..Seats-1. The
// creator holds seat 0; each joiner gets the lowest free seat. Every seat
// has its own bearer token (a [Ticket]); the session id, the match secret
// and the ICE servers (STUN, and TURN with short-lived credentials) are given
// only to seat holders, and only once the match is full.
//
// The HTTP API (bodies are JSON; errors are {"error": message, "code": code}
// with a 4xx status, or 503 when the server is at its limits):
//
//	POST   /v1/matches                   {"seats":N}         201 Ticket (seat 0)
//	POST   /v1/matches/{code}/seats                          201 Ticket (lowest free seat)
//	GET    /v1/matches/{code}[?wait=1]   Bearer token        200 Match (long-polls until full)
//	POST   /v1/matches/{code}/signals    Bearer token, Signal 202
//	GET    /v1/matches/{code}/signals?wait=S&after=N  Bearer token  200 [Signal...] (long-polls)
//	DELETE /v1/matches/{code}/seats/{seat}    Bearer token   204
//
// A numbered signal (Signal.ID) is taken once however often it is sent,
// so that a sender may send it again when the answer did not arrive.
//
// A match created with {"relayed": true} (Options.Relayed) is played
// through a match relay the server places it on (Match.Relayed): the
// relay is party Seats of its signaling, a seat signals only it (to =
// Seats; a signal to another seat is refused, ErrForbidden) and hears
// only from it, so no seat learns another's address (rtc.DialRelay).
//
// Long polls last at most [MaxWait]. The server numbers the signals queued
// for a seat (Signal.Seq: increasing, from 1 on a server that keeps its
// state in memory; on a NATS store, the stream's numbers, neither from 1
// nor consecutive) and keeps each until the seat's next poll
// says, with after=N, that every signal up to N arrived; it answers the
// signals after N. An answer lost on the wire (a dropped connection, a
// Receive whose context ended meanwhile) is therefore answered again, and
// no signal is lost or given twice, as long as the seat polls again within
// a minute of that answer (the server then forgets what it answered: a
// seat that stops polling once connected holds nothing). A poll without
// after gets the queued signals and the server forgets them at once (the
// protocol's first version).
//
// The package uses only the standard library, so it builds for js/wasm,
// where net/http's client is the browser's fetch.
package lobby

import "time"

// Protocol bounds, the same on the server and in the client.
const (
	MinSeats      = 2                // fewest seats in a match
	MaxSeats      = 8                // most seats in a match
	MaxSignalData = 8192             // most bytes of a signal's Data
	MaxWait       = 25 * time.Second // longest long poll the server holds
)

// The kinds of [Signal].
const (
	KindOffer     = "offer"
	KindAnswer    = "answer"
	KindCandidate = "candidate"
)

// ValidKind reports whether kind is one of the signal kinds the server
// relays.
func ValidKind(kind string) bool {
	return kind == KindOffer || kind == KindAnswer || kind == KindCandidate
}

// ICEServer is one entry of RTCConfiguration.iceServers: a STUN server, or
// a TURN server with its credentials.
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// Ticket is a seat in a match: the match's code, the seat's index and the
// seat's bearer token. Anyone with the token speaks for the seat.
type Ticket struct {
	Code  string `json:"code"`
	Seat  int    `json:"seat"`
	Token string `json:"token"`
}

// Match is a match's state as a seat holder sees it. SessionID, Secret and
// ICEServers are present only once the match is Full.
type Match struct {
	Code       string      `json:"code"`
	Seats      int         `json:"seats"`
	Taken      int         `json:"taken"`
	Full       bool        `json:"full"`
	SessionID  uint64      `json:"session_id,omitempty"`
	Secret     []byte      `json:"secret,omitempty"` // base64 in JSON
	ICEServers []ICEServer `json:"ice_servers,omitempty"`
	// Relayed: the match is played through a match relay the server
	// places it on (cmd/relay), which is party Seats of its signaling: a
	// seat signals the relay only, and hears only from it, never another
	// seat's address (rtc.DialRelay).
	Relayed bool `json:"relayed,omitempty"`
}

// Signal is one signaling message between two seats. Kind is [KindOffer],
// [KindAnswer] or [KindCandidate]; Data is opaque to the server and at most
// [MaxSignalData] bytes. The server sets From from the sender's token.
type Signal struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Kind string `json:"kind"`
	Data string `json:"data"`
	// Seq is the server's number for the signal among those queued for
	// its recipient, increasing (not always from 1, nor consecutive); a
	// sender leaves it 0 (the server sets it).
	Seq uint64 `json:"seq,omitempty"`
	// ID is the sender's number for the signal: 0 (none), or greater than
	// that of every signal its seat sent before. The server takes a
	// numbered signal once: one sent again because its answer was lost
	// (a dropped connection, a server behind a load balancer that died
	// after taking it) is answered 202 and not queued twice. A sender
	// numbers a signal only once the one before it has been answered, so
	// that they reach the server in order. The server does not pass it on.
	ID uint64 `json:"id,omitempty"`
}

// CreateRequest is the body of POST /v1/matches.
type CreateRequest struct {
	Seats int `json:"seats"`
	// Relayed asks for a relayed match (Match.Relayed).
	Relayed bool `json:"relayed,omitempty"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"` // one of the Code constants
}

// Machine-readable error codes (ErrorBody.Code), one per sentinel error.
const (
	CodeBadRequest       = "bad_request"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeFull             = "full"
	CodeNotFull          = "not_full"
	CodeGone             = "gone"
	CodeTooLarge         = "too_large"
	CodeRateLimited      = "rate_limited"
	CodeQueueFull        = "queue_full"
	CodeUnavailable      = "unavailable"
	CodeQuota            = "quota"      // the client's address holds as many matches, or queued signal bytes, as it may
	CodeLocked           = "locked"     // the match refuses joins for a while after wrong tokens were tried against it
	CodeStoreDown        = "store_down" // the server's store is out of reach for a moment (503): the same request works after Retry-After
)

// NormalizeCode is a match code as the server spells it: in upper case,
// without the spaces and dashes a player may type between its groups.
// The server accepts a code either way; Join normalizes it.
func NormalizeCode(code string) string {
	b := make([]byte, 0, len(code))
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case c == ' ' || c == '-' || c == '\t':
			continue
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}
