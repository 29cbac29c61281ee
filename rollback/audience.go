package rollback

import (
	"slices"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file serves spectators (docs/protocol.md, "Spectators"): a player
// machine (Config.MaxSpectators) or a spectator that relays
// (SpectatorConfig.MaxSpectators) admits up to that many spectators at any
// time, from the Transport's peer indexes that are not its peers. Each is
// authenticated like a peer (the handshake, with the lobby's Secret), sent
// a final state in Snap pieces, then every final input from that frame on,
// and sends back only Watch acknowledgements. Nothing a spectator sends
// reaches the match: it can only slow down its own service, which is
// bounded (guestBudget datagrams a call, the pieces and frames of one
// packet or two a tick), and the state it is sent is bounded too: a guest
// that has not taken the state within its budget (stateBudget times its
// compressed size, stateTime plus stateBudget times its transfer time at
// the pace) is cut off and counted (Stats.SpectatorsCut), and a spectator
// cut off is not admitted again from its index for cutFor.

// Spectator service limits.
const (
	maxGuests       = 32                     // Config.MaxSpectators at most
	guestBudget     = 8                      // datagrams judged per spectator per call
	strangerBudget  = 16                     // datagrams judged per call from indexes not admitted
	compressPerTick = 64 << 10               // state bytes compressed per call while an offer is made
	offerFresh      = 60                     // frames: an offer older than this is made anew for the next joiner
	newerAsked      = 8                      // frames: an offer at least this old is made anew for a witness that asks for a newer one
	snapWrap        = 250 * time.Millisecond // pieces in flight are sent again after this
	feedKeepalive   = 250 * time.Millisecond // an idle spectator hears from us this often
	maxFeedFrames   = 64                     // frames in one feed packet
	// defaultTransferRate is the state transfer's pace to each spectator
	// when Config.TransferRate is 0, in bytes a second (two pieces a tick).
	defaultTransferRate = 2 * wire.MaxSnapData * 60
)

// stateSource gives the audience the state it offers joiners.
type stateSource interface {
	// joinState appends to dst a state every input before whose frame is
	// final, and returns it and its frame; ok is false when there is none
	// to offer now.
	joinState(dst []byte) (f Frame, state []byte, ok bool)
	guestSink
}

// guestSink is told of a spectator's arrival or departure.
type guestSink interface {
	// emitGuest reports a spectator's arrival or departure (transport
	// index idx).
	emitGuest(k EventKind, idx int)
}

// audience owns the spectators one machine serves directly.
type audience struct {
	max     int
	peers   int // the host's peers: a guest at a lower index is one of them coming back (rejoin.go)
	perTick int // Snap pieces a spectator is sent per call
	keys    *keyring
	format  wire.Format // the match's layout (keys.terms), checked once
	session uint64
	tr      Transport
	delay   time.Duration // Config.SpectatorDelay: spectators get each frame this long after it became final (the feed is timed)
	interr  time.Duration // Config.Timeouts.Interrupt: a silent guest's slot may be taken
	discon  time.Duration // Config.Timeouts.Disconnect: a silent guest is dropped
	feed    *feed
	upTo    Frame      // no guest gets a frame at or after it (a Spectator's: what its witnesses confirmed); maxFrame: none
	adv     *adversary // the soak's liar (nil: honest; liar.go)
	guests  []guest
	offer   offer
	prev    offered // the offer before it: a guest may acknowledge it once it is replaced
	judged  int     // stranger datagrams this call

	sent, sentBytes int64 // to spectators, also in the host's totals
	cut             int64 // guests cut off over their state budget
	cuts            [maxGuests]cutGuest
	nextCut         int // the entry of cuts the next one overwrites

	io struct {
		buf    []byte
		hs     wire.Handshake
		rxhs   wire.Handshake
		watch  wire.Watch
		d      wire.Disconnect
		snap   wire.Snap
		pkt    wire.InputPacket
		base   [MaxPlayers]uint64
		gossip []wire.Gossip
	}
}

// guest is one spectator served directly.
type guest struct {
	idx      int // its transport index
	auth     peerAuth
	lastRecv time.Duration
	lastSend time.Duration
	judged   int // datagrams this call
	watch    wire.Watch
	cursor   int // the next Snap piece to send
	wrapAt   time.Duration
	since    time.Duration // when it first proved its handshake
	stateAt  time.Duration // when it acknowledged the whole state (0: not yet)
	size     int           // the compressed state it acknowledged
	sentSnap int           // Snap bytes sent it
}

func newAudience(limit, peers, rate int, keys *keyring, session uint64, tr Transport, f *feed, interr, discon time.Duration) *audience {
	a := &audience{max: limit, peers: peers, upTo: maxFrame, perTick: max(1, orDefault(rate, defaultTransferRate)/60/wire.MaxSnapData),
		keys: keys, session: session, tr: tr, feed: f, interr: interr, discon: discon}
	a.format, _ = wire.NewFormat(wire.Layout(keys.terms.Layout)) // the session's, validated; a bad one encodes nothing
	a.io.buf = make([]byte, 0, maxDatagram)
	a.io.pkt.Inputs = make([]uint64, 0, maxFeedFrames*MaxPlayers)
	return a
}

// newCall starts a call's budgets.
func (a *audience) newCall() {
	a.judged = 0
	for k := range a.guests {
		a.guests[k].judged = 0
	}
}

func (a *audience) find(idx int) int {
	for k := range a.guests {
		if a.guests[k].idx == idx {
			return k
		}
	}
	return -1
}

// receive judges a datagram (1 to maxDatagram bytes) from transport index
// idx, not a peer. It reports whether it was taken.
func (a *audience) receive(idx int, b []byte, now time.Duration, host stateSource) bool {
	k := a.find(idx)
	if k < 0 || !a.guests[k].auth.keyed() {
		if a.judged == strangerBudget {
			return false
		}
		a.judged++
	} else if g := &a.guests[k]; g.judged == guestBudget {
		return false
	} else {
		g.judged++
	}
	if wire.Kind(b[0]) == wire.KindHandshake {
		return a.handshake(idx, k, b, now)
	}
	if k < 0 || a.guests[k].auth.open == nil {
		return false
	}
	g := &a.guests[k]
	body, err := g.auth.open.Open(b)
	if err != nil {
		return false
	}
	g.lastRecv = now
	if !g.auth.verified {
		g.auth.verified = true
		if idx >= a.peers {
			host.emitGuest(EventSpectatorJoined, idx)
		}
	}
	switch wire.SealedKind(b) {
	case wire.KindWatch:
		w := &a.io.watch
		if wire.ParseControl(body, w) != nil || Frame(w.Next) > a.feed.high {
			return false // it cannot want frames we never sent
		}
		if w.State != g.watch.State {
			g.cursor, g.wrapAt = int(w.Have), now
		}
		if g.watch.Next < 0 && w.Next >= 0 && g.stateAt == 0 {
			if size, ok := a.offered(Frame(w.State)); ok {
				g.stateAt, g.size = max(now, 1), size
			}
		}
		g.watch = *w
		return true
	case wire.KindDisconnect:
		if wire.ParseControl(body, &a.io.d) != nil {
			return false
		}
		a.drop(k, host)
		return true
	}
	return false
}

// handshake takes a handshake from idx (guest k, or -1): judged as a
// peer's (keyring.judge), for a spectator's terms.
func (a *audience) handshake(idx, k int, b []byte, now time.Duration) bool {
	h := &a.io.rxhs
	link := &peerAuth{ours: a.ours(idx, k)} // a stranger's: nothing pinned
	if k >= 0 {
		link = &a.guests[k].auth
	}
	v := a.keys.judge(b, h, a.session, link)
	if v == hsDrop || h.Version != wire.Version || len(h.Local) != 0 ||
		h.Terms.Players != a.keys.terms.Players || !slices.Equal(h.Terms.Layout, a.keys.terms.Layout) {
		return false
	}
	switch v {
	case hsAnswer:
		a.sendHandshake(idx, link.ours, h.Nonce, now) // if it is the spectator's, it can now prove itself
		return false
	case hsRemind:
		link.replyHS = !link.verified
		return false
	case hsReplay, hsStray:
		return false
	case hsRenew:
		g := &a.guests[k]
		if g.auth.verified && now-g.lastRecv < a.interr {
			return false // another machine at a live spectator's index
		}
		if now-g.auth.keyedAt < handshakeRetry {
			return false // re-keyed a moment ago: one derivation per retry period
		}
	}
	if k < 0 && idx >= a.peers && (a.spectators() == a.max || a.isCut(idx, now)) {
		return false // full, or cut off: it is not answered, and its handshake times out
	}
	ours := link.ours
	seal, open, err := a.keys.relink(a.session, ours, h.Nonce, h.Key)
	if err != nil {
		return false // a bad key, or this call's derivations are spent: it repeats its handshake
	}
	if k >= 0 {
		a.guests = slices.Delete(a.guests, k, k+1) // it restarted, or the index went to another
	}
	a.guests = append(a.guests, guest{idx: idx, lastRecv: now, since: now, watch: wire.Watch{State: -1, Next: -1},
		auth: peerAuth{ours: ours, nonce: h.Nonce, seal: seal, open: open, replyHS: true, keyedAt: now}})
	if ad, ok := a.tr.(interface{ Admit(peer int) }); ok && idx >= a.peers {
		ad.Admit(idx) // it receives at its address: the transport keeps its slot
	}
	return true
}

// ours is our nonce on the link to transport index idx (guest k, or -1).
func (a *audience) ours(idx, k int) uint64 {
	if k >= 0 {
		return a.guests[k].auth.ours
	}
	return a.keys.nonceFor(linkGuest | uint64(uint32(idx)))
}

func (a *audience) sendHandshake(idx int, ours, echo uint64, now time.Duration) {
	b, err := a.keys.appendHandshake(a.io.buf[:0], &a.io.hs, a.session, ours, echo)
	if err == nil {
		a.transmit(idx, b, now)
	}
}

func (a *audience) transmit(idx int, b []byte, now time.Duration) {
	if a.tr.Send(idx, b) != nil {
		return
	}
	if k := a.find(idx); k >= 0 {
		a.guests[k].lastSend = now
	}
	a.sent++
	a.sentBytes += int64(len(b))
}

func (a *audience) sendControl(g *guest, m wire.Control, now time.Duration) {
	b, err := wire.AppendControl(g.auth.seal.Begin(a.io.buf[:0], m.Kind()), m)
	if err == nil {
		a.transmit(g.idx, g.auth.seal.Seal(b), now)
	}
}

// drop ends spectator k's service.
func (a *audience) drop(k int, host guestSink) {
	g := a.guests[k]
	a.guests = slices.Delete(a.guests, k, k+1)
	if g.idx < a.peers {
		return // a peer coming back: not a spectator, and its index stays
	}
	if g.auth.verified {
		host.emitGuest(EventSpectatorLeft, g.idx)
	}
	if r, ok := a.tr.(interface{ Release(peer int) }); ok {
		r.Release(g.idx)
	}
}

// forget ends the service of the guest at transport index idx, if any,
// without a word: a peer that came back, or gave up.
func (a *audience) forget(idx int, host guestSink) {
	if k := a.find(idx); k >= 0 {
		a.drop(k, host)
	}
}

// transfer returns the size of the state the guest at transport index idx
// acknowledged, and the time from its handshake to that; ok is false
// before.
func (a *audience) transfer(idx int) (size int, took time.Duration, ok bool) {
	if k := a.find(idx); k >= 0 && a.guests[k].stateAt != 0 {
		g := &a.guests[k]
		return g.size, g.stateAt - g.since, true
	}
	return 0, 0, false
}

// spectators returns how many guests are spectators, not peers coming
// back.
func (a *audience) spectators() int {
	n := 0
	for k := range a.guests {
		if a.guests[k].idx >= a.peers {
			n++
		}
	}
	return n
}

// send gives every spectator what it is due: a handshake, the pieces of
// the state it lacks, or the final inputs it has not acknowledged.
func (a *audience) send(now time.Duration, host stateSource) {
	for k := 0; k < len(a.guests); k++ {
		g := &a.guests[k]
		if now-g.lastRecv > a.discon || a.behind(g) {
			// Silent, or so far behind that the feed no longer holds its
			// next frame: it must join again.
			if g.auth.verified {
				a.sendControl(g, &wire.Disconnect{Frame: -1}, now)
			}
			a.drop(k, host)
			k--
			continue
		}
		if g.auth.handshakeDue(now) {
			a.sendHandshake(g.idx, g.auth.ours, g.auth.nonce, now)
			g.auth.sentHS, g.auth.lastHS, g.auth.replyHS = true, now, false
		}
		if !g.auth.verified {
			continue
		}
		if g.watch.Next >= 0 {
			a.sendFeed(g, now)
			continue
		}
		if a.overBudget(g, now) {
			a.cutOff(k, now, host)
			k--
			continue
		}
		if a.offerFor(now, host) && (g.idx < a.peers || a.ripe(a.offer.frame-1, now)) {
			a.sendPieces(g, now)
		}
	}
	a.compress()
}

// ripe reports whether frame f may go to a spectator: it became final
// at least the stream delay ago (one the feed no longer holds did).
func (a *audience) ripe(f Frame, now time.Duration) bool {
	return !a.feed.has(f) || a.feed.ripe(f, now, a.delay)
}

// behind reports whether the feed no longer holds what g needs next: the
// frame it wants, and the one before, its packet's base (unless it is its
// state's frame).
func (a *audience) behind(g *guest) bool {
	next := Frame(g.watch.Next)
	return next >= 0 && (next < a.feed.low || (next == a.feed.low && next != Frame(g.watch.State)))
}

// sendPieces sends g the next pieces of the offer it lacks, going round
// again for those still missing every snapWrap.
func (a *audience) sendPieces(g *guest, now time.Duration) {
	o := &a.offer
	pieces := snapPieces(len(o.data))
	have, mask := 0, uint64(0)
	if Frame(g.watch.State) == o.frame {
		have, mask = int(g.watch.Have), g.watch.Mask
	}
	g.cursor = max(g.cursor, have)
	for sent := 0; sent < a.perTick; {
		if g.cursor >= pieces {
			if now-g.wrapAt < snapWrap {
				return
			}
			g.cursor, g.wrapAt = have, now
			if have >= pieces {
				return
			}
		}
		n := g.cursor
		g.cursor++
		if d := n - have; d < 64 && mask&(1<<d) != 0 {
			continue // it has that one
		}
		off := n * wire.MaxSnapData
		a.io.snap = wire.Snap{Frame: int32(o.frame), Size: uint32(len(o.raw)), Sum: o.sum, Total: uint32(len(o.data)),
			Piece: uint32(n), Data: o.data[off:min(off+wire.MaxSnapData, len(o.data))]}
		a.sendControl(g, &a.io.snap, now)
		g.sentSnap += len(a.io.snap.Data)
		sent++
	}
}

// sendFeed sends g the final inputs from the next frame it wants (up to
// maxFeedFrames, all with the same statuses), or a keepalive when it has
// them all.
func (a *audience) sendFeed(g *guest, now time.Duration) {
	l, pkt := a.feed, &a.io.pkt
	first := Frame(g.watch.Next)
	end := min(l.high, first+maxFeedFrames, max(first, a.upTo))
	if a.delay > 0 && g.idx >= a.peers {
		for f := first; f < end; f++ {
			if !a.ripe(f, now) {
				end = f // a spectator's frames wait out the stream delay
				break
			}
		}
	}
	if first < end {
		for f := first + 1; f < end; f++ {
			if l.mask(f) != l.mask(first) {
				end = f // one packet, one set of statuses
				break
			}
		}
	}
	if first >= end && now-g.lastSend < feedKeepalive {
		return
	}
	players := l.players
	pkt.Ack, pkt.First, pkt.Players, pkt.Count, pkt.Lag = int32(first), int32(first), players, int(max(0, end-first)), 0
	pkt.Inputs = pkt.Inputs[:0]
	for f := first; f < end; f++ {
		for p := range players {
			pkt.Inputs = append(pkt.Inputs, uint64(l.input(f, p)))
		}
	}
	if adversaryBuilt && a.adv.falsifiesFeed() {
		a.adv.falsify(first, pkt.Inputs, players)
	}
	pkt.Base = nil
	if first > Frame(g.watch.State) {
		// Delta-coded against its copy of the frame before; its first
		// frame, against zero.
		for p := range players {
			a.io.base[p] = uint64(l.input(first-1, p))
		}
		pkt.Base = a.io.base[:players]
	}
	gs := a.io.gossip[:0]
	mask := uint8(0)
	if first < end {
		mask = l.mask(first)
	}
	for p := range players {
		e := wire.Gossip{Frame: -1}
		if mask&(1<<p) != 0 {
			e = wire.Gossip{Disconnected: true, Frame: int32(first)}
		}
		gs = append(gs, e)
	}
	a.io.gossip, pkt.Gossip = gs, gs
	b, err := a.format.AppendInput(g.auth.seal.Begin(a.io.buf[:0], wire.KindInput), pkt)
	if err == nil {
		a.transmit(g.idx, g.auth.seal.Seal(b), now)
	}
}

// close tells every spectator that this machine is leaving.
func (a *audience) close(now time.Duration) {
	for k := range a.guests {
		if g := &a.guests[k]; g.auth.verified {
			for range 2 { // a second copy in case the first is lost
				a.sendControl(g, &wire.Disconnect{Frame: -1}, now)
			}
		}
	}
}

// served returns how many spectators are verified.
func (a *audience) served() int {
	if a == nil {
		return 0
	}
	n := 0
	for k := range a.guests {
		if a.guests[k].auth.verified && a.guests[k].idx >= a.peers {
			n++
		}
	}
	return n
}
