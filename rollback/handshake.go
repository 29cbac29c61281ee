package rollback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the handshake (docs/protocol.md, "Handshake"; the threat
// model is docs/security.md). Every machine draws a fresh secret 64-bit
// seed and an X25519 key pair per match; its nonce on each link (a peer,
// a spectator's address, the source a spectator watches) is an HMAC of the
// seed and the link, so what one party learns from our handshakes is
// worth nothing on another link. A peer's nonce and key are pinned only
// from a handshake that echoes our nonce on its link — proof that its
// sender receives at the peer's address, which an off-path stranger (or
// a spectator, who hears only its own link's nonce) cannot give — and the
// link's keys are derived from them. Any other handshake is answered
// (echoing its nonce, so that the real peer can prove itself) and changes
// nothing. A peer is verified once a datagram it sealed opens: it holds
// the keys too.

// handshakeRetry is how often an unanswered handshake is repeated.
const handshakeRetry = 100 * time.Millisecond

// mismatchCopies is how many handshakes go to a peer whose terms differ
// before the handshake fails here: its own handshake is then answered even
// if some are lost, and it fails too.
const mismatchCopies = 3

// rekeyPerCall bounds the keys derived in one call for guests and for
// machines coming back (each an X25519 and an HKDF, ~66 µs): a crowd of
// spectators re-keying costs a call at most this many. A peer's first
// key is not counted: there is one per peer in a match.
const rekeyPerCall = 4

// Links, for keyring.nonceFor: a peer's index, a guest's transport index
// and the source a spectator watches are each a link of their own.
const (
	linkPeer   = 0 << 32
	linkGuest  = 1 << 32
	linkSource = 2 << 32
)

// keyring is the session's side of every link's key agreement.
type keyring struct {
	seed   uint64 // fresh per match, secret: every link's nonce derives from it
	share  *wire.KeyShare
	terms  wire.Terms // what every machine must agree on
	local  []uint8    // our players: who we are
	digest [wire.DigestSize]byte
	secret []byte
	auth   *wire.HandshakeAuth // nil without Config.Secret

	derived int64 // keys derived, in all
	spent   int   // rekeyPerCall's this call
}

// newCall starts a call's budget of derivations.
func (k *keyring) newCall() { k.spent = 0 }

// nonceFor is our nonce on link: never 0, the same for the whole match,
// and unpredictable from our nonces on other links.
func (k *keyring) nonceFor(link uint64) uint64 {
	var key, msg [8]byte
	binary.BigEndian.PutUint64(key[:], k.seed)
	binary.BigEndian.PutUint64(msg[:], link)
	m := hmac.New(sha256.New, key[:])
	m.Write(msg[:])
	if n := binary.BigEndian.Uint64(m.Sum(nil)); n != 0 {
		return n
	}
	return 1 // 0 is no nonce
}

// newKeyring draws the nonce and key pair from r.
func newKeyring(r io.Reader, secret []byte, terms wire.Terms) (keyring, error) {
	k := keyring{terms: terms, digest: terms.Digest(), secret: slices.Clone(secret)}
	var err error
	if k.seed, err = readNonce(r); err != nil {
		return k, err
	}
	if k.share, err = wire.NewKeyShare(r); err != nil {
		return k, fmt.Errorf("%w: %v", errRand, err)
	}
	if k.auth, err = wire.NewHandshakeAuth(secret); err != nil {
		return k, err
	}
	return k, nil
}

func readNonce(r io.Reader) (uint64, error) {
	var b [8]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, fmt.Errorf("%w: %v", errRand, err)
		}
		var n uint64
		for _, c := range b {
			n = n<<8 | uint64(c)
		}
		if n != 0 {
			return n, nil
		}
	}
}

// castMode is the bit of Terms.Mode that says the input packets' body is
// the cast one (a relayed Transport: outbox.cast): a machine that sends
// the per-pair body cannot play with one that sends the cast body, and the
// terms' digest keeps their keys apart.
const castMode = 0x80

// terms returns what every machine of the match must agree on, as this
// machine's config has it.
func (s *Session) terms(cfg *Config) wire.Terms {
	t := wire.Terms{Players: s.roster.players, Owners: make([]uint8, s.roster.players),
		Layout: slices.Clone(s.roster.layout), Mode: uint8(rollbackMode), TickRate: defaultTickRate,
		ChecksumEvery: -1, StartDelay: !s.start.noDelay}
	for p := range t.Owners {
		t.Owners[p] = uint8(s.roster.local[0])
		if !s.inputs.local[p] {
			t.Owners[p] = uint8(s.peers[s.roster.owner[p]].id)
		}
	}
	if s.ls != nil {
		t.Mode, t.TickRate = uint8(lockstepMode), cfg.TickRate
	}
	if s.tx.cast {
		t.Mode |= castMode // the input packets' body is the cast one
	}
	if s.pace.clock != nil {
		t.Mode |= clockMode // the relay's decisions are final
	}
	if s.sums != nil {
		t.ChecksumEvery = int32(s.sums.every)
	}
	return t
}

// peerAuth is the peer's side of the handshake and the keys of the link.
type peerAuth struct {
	ours     uint64        // our nonce on this link (keyring.nonceFor)
	nonce    uint64        // its nonce, pinned from a handshake that echoed ours; 0 until then
	keyedAt  time.Duration // when the link's keys were last derived
	seal     *wire.Sealer  // our datagrams to it; nil until pinned
	open     *wire.Opener  // its datagrams to us
	verified bool          // a datagram it sealed opened: it holds the keys
	replyHS  bool          // send it our handshake on the next send
	sentHS   bool
	lastHS   time.Duration
	mismatch *HandshakeError // its terms differ from ours: the handshake fails

	// What its address sent that did not count, to explain a timeout.
	heard        bool   // any datagram at all
	otherSession uint64 // the session id of its last handshake for another match
	authFailed   bool   // a handshake that failed the Secret's check
}

// keyed reports whether the link has keys: we may seal datagrams to it.
func (a *peerAuth) keyed() bool { return a.seal != nil }

// hsVerdict is the handshaker's judgement of one handshake on one link,
// whatever the link's role (a peer, a guest, the source a spectator
// watches): what the role then does with it is its own.
type hsVerdict uint8

const (
	hsDrop   hsVerdict = iota // invalid: it does not parse, fails the Secret, names another session or nonce 0
	hsAnswer                  // no echo of ours on a link not pinned: answered, echoing its nonce, it pins nothing
	hsPin                     // echoes ours on a link not pinned: its sender receives at the address; pin and derive
	hsRemind                  // the pinned nonce without our echo: it may lack our answer
	hsReplay                  // the pinned nonce echoing ours: nothing new (unsealed: no sign of life)
	hsRenew                   // a new nonce echoing ours on a pinned link: the machine restarted, or another took the address
	hsStray                   // a new nonce without our echo on a pinned link: proves nothing
)

// judge parses b into h and judges it for link a of session. What the
// address sent that did not count is noted in a, for the timeout's hints.
// It is the one place every handshake of every role is judged; it
// changes nothing else.
func (k *keyring) judge(b []byte, h *wire.Handshake, session uint64, a *peerAuth) hsVerdict {
	if err := wire.ParseHandshake(b, h, k.auth); err != nil {
		a.authFailed = a.authFailed || errors.Is(err, wire.ErrAuth)
		return hsDrop
	}
	if h.SessionID != session {
		a.otherSession = h.SessionID // a hint for the timeout error, not a fact
		return hsDrop
	}
	echoed := h.Echo == a.ours
	switch {
	case h.Nonce == 0:
		return hsDrop
	case a.nonce == 0 && echoed:
		return hsPin
	case a.nonce == 0:
		return hsAnswer
	case h.Nonce == a.nonce && echoed:
		return hsReplay
	case h.Nonce == a.nonce:
		return hsRemind
	case echoed:
		return hsRenew
	}
	return hsStray
}

// verdict is what receive makes of a datagram.
type verdict uint8

const (
	dropped  verdict = iota // invalid: counted and dropped
	taken                   // valid: counts as hearing from the peer
	answered                // a handshake that proves nothing, answered: neither
	forged                  // invalid, and only a liar sends it: dropped, and the peer suspected
)

// handleHandshake takes a handshake from peer i's address.
func (s *Session) handleHandshake(i int, b []byte) verdict {
	h, a := &s.io.rx.hs, &s.peers[i].auth
	v := s.proto.keys.judge(b, h, s.proto.sessionID, a)
	if v == hsDrop {
		return dropped
	}
	late := s.peers[i].late
	if late && !s.proto.started {
		return dropped // a reserved slot is filled once the match runs: it retries
	}
	if h.Nonce != a.nonce && (a.nonce != 0 || s.peers[i].leave.agreed) && len(h.Local) > 0 &&
		(s.proto.rejoinWindow > 0 || late) && s.proto.started && s.ls == nil {
		// A new nonce from the peer's address: the machine restarted and
		// comes back (rejoin.go), a reserved slot's machine comes, or one
		// that had left before we joined comes back. It counts, as at the
		// start, only once it echoes ours: then, if it left, the link is keyed anew; if we
		// still play with it, what it sent before is all we will get, and
		// it is disconnected now rather than after the timeout.
		r := s.rejoins()
		switch {
		case h.Echo != a.ours:
			// Answered, but it proves nothing yet: dropped and counted, as
			// a stranger's would be.
			s.proto.sendHandshake(&s.tx, &s.io.hs, i, h.Nonce)
			return dropped
		case r.rejoinable(i):
			return r.rekey(i, h)
		case !s.peers[i].leave.disc && compareTerms(i, &s.proto.keys.terms, s.io.wantLocal(s.peers[i].players), h) == nil:
			s.disconnect(i)
		}
		return answered
	}
	switch v {
	case hsAnswer:
		// Its sender has not shown that it receives at the peer's address:
		// anyone could have sent it. Answer it, echoing its nonce: if it is
		// the peer's, the peer can now prove itself.
		s.proto.sendHandshake(&s.tx, &s.io.hs, i, h.Nonce)
		return answered
	case hsRemind:
		// Its older handshake, overtaken by the one we pinned (or a replay
		// of it): it may still lack our echo.
		a.replyHS = !a.verified
		return answered
	case hsReplay:
		// Nothing new: it is unsealed, so anyone on the path could have
		// replayed it; it is not a sign of life (only sealed datagrams are).
		return answered
	case hsRenew, hsStray:
		if s.join != nil {
			return s.join.renew(i, h, v == hsRenew, &s.peers[i], &s.proto, &s.tx, &s.io, s.stmts, s.now)
		}
		return dropped // the first nonce to echo ours stays
	}
	if e := compareTerms(i, &s.proto.keys.terms, s.io.wantLocal(s.peers[i].players), h); e != nil {
		if a.mismatch == nil {
			a.mismatch = e
			for range mismatchCopies {
				s.proto.sendHandshake(&s.tx, &s.io.hs, i, h.Nonce)
			}
		}
		return taken
	}
	seal, open, err := s.proto.keys.link(s.proto.sessionID, a.ours, h.Nonce, h.Key)
	if err != nil {
		return dropped // a key no honest peer sends
	}
	a.nonce, a.seal, a.open, a.keyedAt = h.Nonce, seal, open, s.now
	a.replyHS = true // it needs our echo of its nonce to pin us
	l := &s.peers[i].link
	l.lastQuality = s.now - s.proto.qualityEvery // ping at once: the start delay needs the round trip
	s.proto.resetTimers()
	return taken
}

// appendHandshake appends our handshake for session on the link where
// our nonce is ours, echoing echo, to b; m is its scratch.
func (k *keyring) appendHandshake(b []byte, m *wire.Handshake, session, ours, echo uint64) ([]byte, error) {
	*m = wire.Handshake{Version: wire.Version, SessionID: session, Nonce: ours, Echo: echo,
		Key: k.share.Public(), Terms: k.terms, Local: k.local}
	return wire.AppendHandshake(b, m, k.auth)
}

// link derives the keys of the link where our nonce is ours with the
// machine whose handshake for session carried nonce and key, under our
// terms' digest.
func (k *keyring) link(session, ours, nonce uint64, key [wire.KeySize]byte) (*wire.Sealer, *wire.Opener, error) {
	k.derived++
	send, recv, err := k.share.Keys(wire.Link{Session: session, Ours: ours, Theirs: nonce,
		TheirKey: key, Digest: k.digest, Secret: k.secret})
	if err != nil {
		return nil, nil, err
	}
	return wire.NewSealer(send), wire.NewOpener(recv), nil
}

// errRekeyBudget is relink's refusal: this call's derivations are spent
// (the handshake is repeated and judged again in a later call).
var errRekeyBudget = errors.New("rollback: the call's key derivations are spent")

// relink is link for a guest or a machine coming back: at most
// rekeyPerCall a call.
func (k *keyring) relink(session, ours, nonce uint64, key [wire.KeySize]byte) (*wire.Sealer, *wire.Opener, error) {
	if k.spent >= rekeyPerCall {
		return nil, nil, errRekeyBudget
	}
	k.spent++
	return k.link(session, ours, nonce, key)
}

// sendHandshake sends peer i our handshake (hs is its scratch), echoing
// echo.
func (p *protocol) sendHandshake(tx *outbox, hs *wire.Handshake, i int, echo uint64) {
	a := &(*tx.peers)[i].auth
	b, err := p.keys.appendHandshake(tx.buf[:0], hs, p.sessionID, a.ours, echo)
	if err != nil {
		tx.stats.SendErrors++
		return
	}
	a.sentHS, a.lastHS = true, *tx.now
	tx.transmit(i, b)
}

// handshakeDue reports whether peer i is sent our handshake now: when it
// asked for it, and every handshakeRetry until it is verified.
func (a *peerAuth) handshakeDue(now time.Duration) bool {
	return a.replyHS || (!a.verified && a.mismatch == nil && (!a.sentHS || now-a.lastHS >= handshakeRetry))
}

// verify marks peer i as holding the link's keys, at now: a datagram it
// sealed opened. The first time, EventConnected goes into events at
// frame.
func (ps peerSet) verify(i int, now time.Duration, events *eventLog, frame Frame) {
	p := &ps[i]
	if !p.auth.verified {
		p.auth.verified = true
		p.link.lastRecv = now
		events.emit(EventConnected, frame, i)
	}
}

// compareTerms returns the first difference between peer i's handshake h
// and what this machine must agree with it on (ours, and local: the
// players it must play, as a handshake's Local says them), or nil.
func compareTerms(i int, ours *wire.Terms, local []uint8, h *wire.Handshake) *HandshakeError {
	theirs := &h.Terms
	diff := func(field string, a, b any) *HandshakeError {
		e := termsError(i, field, fmt.Sprint(a), fmt.Sprint(b))
		if e.Ours == e.Theirs && field == "Local and Peers" {
			// The same grouping under other machine ids: show the raw owners.
			e.Ours, e.Theirs = fmt.Sprint(ours.Owners), fmt.Sprint(theirs.Owners)
		}
		return e
	}
	switch {
	case h.Version != wire.Version:
		return diff("protocol version", wire.Version, h.Version)
	case !slices.Equal(local, h.Local):
		// Who it is: the machine at this address must play the players our
		// Config.Peers gives it (two machines claiming one player differ here).
		return diff("Local", local, h.Local)
	case ours.Players != theirs.Players:
		return diff("Players", ours.Players, theirs.Players)
	case !slices.Equal(ours.Owners, theirs.Owners):
		return diff("Local and Peers", machines(ours.Owners), machines(theirs.Owners))
	case !slices.Equal(ours.Layout, theirs.Layout):
		return diff("Layout", Layout(ours.Layout), Layout(theirs.Layout))
	case ours.Mode&castMode != theirs.Mode&castMode:
		return diff("relayed Transport", ours.Mode&castMode != 0, theirs.Mode&castMode != 0)
	case ours.Mode&clockMode != theirs.Mode&clockMode:
		return diff("relay clock", ours.Mode&clockMode != 0, theirs.Mode&clockMode != 0)
	case ours.Mode != theirs.Mode:
		return diff("Lockstep", ours.Mode == uint8(lockstepMode), theirs.Mode == uint8(lockstepMode))
	case ours.TickRate != theirs.TickRate:
		return diff("TickRate", ours.TickRate, theirs.TickRate)
	case ours.ChecksumEvery != theirs.ChecksumEvery:
		return diff("ChecksumEvery", checksumEvery(ours.ChecksumEvery), checksumEvery(theirs.ChecksumEvery))
	case ours.StartDelay != theirs.StartDelay:
		return diff("NoStartDelay", !ours.StartDelay, !theirs.StartDelay)
	}
	return nil
}

// machines writes an owners list as the players of each machine, such as
// "[0 2] [1]".
func machines(owners []uint8) string {
	var groups [][]int
	var keys []uint8
	for p, o := range owners {
		k := slices.Index(keys, o)
		if k < 0 {
			keys, groups = append(keys, o), append(groups, nil)
			k = len(keys) - 1
		}
		groups[k] = append(groups[k], p)
	}
	parts := make([]string, len(groups))
	for k, g := range groups {
		parts[k] = fmt.Sprint(g)
	}
	return strings.Join(parts, " ")
}

func checksumEvery(n int32) string {
	if n < 0 {
		return "off"
	}
	return fmt.Sprint(n)
}

// wantLocal returns players as the handshake's Local field writes them.
func (c *codec) wantLocal(players []PlayerID) []uint8 {
	c.local = c.local[:0]
	for _, p := range players {
		c.local = append(c.local, uint8(p))
	}
	return c.local
}
