package main

import (
	"net/http"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// store is the lobby's state: the matches with their seats and tokens,
// the signals waiting for each seat, the quotas and the expiry. The
// handlers use nothing else, so that it can live in this process (the
// registry, registry.go) or in NATS, shared by every instance
// (natsStore, natsstore.go). Everything crosses it as values: a seat is
// named by a seatRef, a long poll waits on a wake. Its errors are
// apiErrors, the answers the client gets; errStoreDown when the store
// cannot be reached.
type store interface {
	// create makes a match of n seats and gives its creator, from client
	// address owner (an addrKey), seat 0.
	// relayed: its seats signal only the match relay (placement.go).
	create(n int, owner string, relayed bool) (lobby.Ticket, error)
	// join gives the caller the lowest free seat of the match with that
	// code (any case, dashes and spaces ignored).
	join(code string) (lobby.Ticket, error)
	// authorize names the seat whose token it is. Whether the code exists
	// is not told apart from a wrong token; a wrong token counts against
	// the match (it locks after a few).
	authorize(code, token string) (seatRef, error)
	// state is the match as its seat holders see it (without the ICE
	// servers); errExpired once it is removed.
	state(ref seatRef) (lobby.Match, error)
	// send queues sig (its From set from the token) for its recipient,
	// charging its bytes to the sender's address (an addrKey). In a
	// relayed match it queues nothing: errRelaySignal for a signal to
	// the relay (party Seats), which the handler carries there, and
	// errRelayOnly for one to a seat.
	send(ref seatRef, sig lobby.Signal, sender string) error
	// take is one look at the seat's queue, without waiting. With ack,
	// the seat has every signal up to Seq after: those are forgotten and
	// the others are returned and kept until a later take acknowledges
	// them (or ackGrace passes); without, the returned signals are
	// forgotten at once. With deliver false (the poll's client has gone)
	// it only acknowledges.
	take(ref seatRef, ack bool, after uint64, deliver bool) ([]lobby.Signal, error)
	// watch registers a wait for a change of the match with that code: a
	// signal for one of its seats, a seat taken or left, its removal. It
	// is called before the look it guards (take, state), so that no
	// change after the look is missed; the wake must be released.
	watch(code string) wake
	// leave gives up the seat. Before the match is full the seat is
	// freed; after, it is marked left and its token revoked. A match
	// nobody holds a seat of is removed.
	leave(ref seatRef) error
	// seatHeld reports whether the match with code exists, and whether
	// its seat i is held (taken, and not left): the TURN relay asks it.
	seatHeld(code string, i int) (exists, held bool)
	// counts returns the number of matches, of full ones, and the bytes
	// of signals queued, at a cost that does not grow with the matches.
	counts() (matches, full, queued int)
	// healthy is nil when the store answers.
	healthy() error
	// sweep removes the expired matches, and forgets the signals answered
	// ackGrace ago or longer that no poll acknowledged; it returns how
	// many matches it removed.
	sweep() int
	// placement is the relay the match with code is placed on (zero:
	// none yet); place records p as its placement unless it has one, and
	// returns the one it has (placement.go). errExpired once it is removed.
	placement(code string) (placement, error)
	place(code string, p placement) (placement, error)
	// fromRelay queues sig, from the relay of the relayed match with code
	// (sig.From is its Seats), for seat sig.To.
	fromRelay(code string, sig lobby.Signal) error
	// announce records a match relay's announcement until a.Expires;
	// liveRelays returns those not expired.
	announce(a relayInfo) error
	liveRelays() ([]relayInfo, error)
	// close lets go of the store's resources (a NATS connection).
	close() error
}

// seatRef names one seat of one match and the token that holds it, as
// authorize found it. The store checks the token again when it acts.
type seatRef struct {
	code  string
	seat  int
	token string
}

// wake is a registered wait for a change of a match: C is closed (or
// receives) when one may have happened. release ends the registration.
type wake struct {
	C    <-chan struct{}
	from *waiters // nil: nothing to release
	code string
}

func (w wake) release() {
	if w.from != nil {
		w.from.unwatch(w.code)
	}
}

// errStoreDown answers a request when the store cannot be reached (the
// NATS servers are down or cut off): the client tries again later; the
// server recovers by itself when they are back.
var errStoreDown = &apiError{status: http.StatusServiceUnavailable, code: lobby.CodeStoreDown,
	msg: "the server's store is unavailable; try again shortly", retryAfter: 2 * time.Second}

// errServerFull answers a create when the server holds as many matches
// as it may.
var errServerFull = &apiError{status: http.StatusServiceUnavailable, code: lobby.CodeUnavailable,
	msg: "the server holds as many matches as it may; try again later", retryAfter: capSweepInterval}

// closedChan is a channel that is closed: a wake that fires at once.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// The stores config.Store names.
const (
	storeMemory = "memory"
	storeNATS   = "nats"
)

// storeName says which store c names, as /healthz and the start's log
// line do: "memory", "nats" (an external cluster) or "nats-embedded".
func (c *config) storeName() string {
	switch {
	case c.Store != storeNATS:
		return storeMemory
	case c.NATSURL != "":
		return storeNATS
	}
	return storeNATS + "-embedded"
}

// openStore is the store cfg asks for: the registry in this process's
// memory, or NATS (an embedded server, or the cluster at cfg.NATSURL).
func openStore(cfg *config) (store, error) {
	if cfg.Store == storeNATS {
		return openNATSStore(cfg)
	}
	return newRegistry(cfg), nil
}
