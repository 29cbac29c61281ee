// Package rtc is a rollback.Transport over WebRTC data channels: one
// peer connection per peer in a full mesh, each with one data channel that
// is unordered and never retransmits (Rewind's inputs are already
// redundant: every packet repeats what is unacknowledged). It is built on
// pion/webrtc, so the same code runs natively and in a browser
// (GOOS=js GOARCH=wasm), where pion uses the browser's own WebRTC; native
// and browser peers play each other.
//
// WebRTC is how two machines behind NATs reach each other: ICE tries every
// pair of addresses (their own, the ones a STUN server sees, and a TURN
// relay's) and keeps the first that works, so players need no open ports,
// and when no direct path exists the relay carries the traffic. The data
// channels are DTLS-encrypted; Rewind's own handshake and MACs still
// authenticate every datagram (a TURN relay, or anyone else, can drop
// traffic but not forge or alter it).
//
// [Dial] connects a machine to every other machine of a match. The
// machines exchange offers, answers and ICE candidates through a
// [Signaler]: the rendezvous server's lobby client (package lobby) or, in
// one process, [MemorySignalers]. Of each pair the machine with the lower
// index offers. Candidates trickle: each is sent as it is found, so a
// connection starts on the first pair that works instead of waiting for
// every server to answer.
//
// A peer's candidates are claims like anything else it sends: each names
// an address this machine will send ICE's checks to. Dial hands ICE only
// those at addresses reachable across the internet, browsers' mDNS names
// and what Config.AllowCandidates names, at most MaxCandidates from each
// peer, and counts the others (Stats).
//
// A Transport's peer p is machine p when p < Config.Machine and machine
// p+1 otherwise: the other machines in order, as a session's Config.Peers
// lists them.
//
// [DialRelay] connects a machine of a relayed match (the relay topology,
// package relay) to the match's relay (cmd/relay) instead: one peer
// connection, and no other machine's address in any signal or datagram.
package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/pion/webrtc/v4"

	"github.com/rewindgg/rewind/rtc/internal/inbox"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// MaxDatagram is the largest datagram sent or accepted (as in package
// udp: Rewind's packets fit one Ethernet frame).
const MaxDatagram = 1400

// MaxMachines bounds Config.Machines.
const MaxMachines = 8

// Signal kinds.
const (
	KindOffer     = "offer"
	KindAnswer    = "answer"
	KindCandidate = "candidate"
)

// Errors.
var (
	ErrConfig = errors.New("rtc: bad config")
	ErrPeer   = errors.New("rtc: no such peer")
	ErrClosed = errors.New("rtc: transport closed")
)

// A Signaler carries signaling messages between the machines of one
// match, in order between each pair. Send must be safe to call while
// Receive blocks in another goroutine. Receive blocks until a message for
// this machine arrives or ctx ends. Package lobby's Client is one.
type Signaler interface {
	Send(ctx context.Context, to int, kind, data string) error
	Receive(ctx context.Context) (from int, kind, data string, err error)
}

// ICEServer is a STUN or TURN server: the type the rendezvous's lobby
// hands out (lobby.Match.ICEServers), so a Match's list is a Config's.
type ICEServer = lobby.ICEServer

// Config configures Dial. Its zero value is not usable: Machines must be
// at least 2.
type Config struct {
	// Machine is this machine's index, 0 to Machines-1; Machines is how
	// many machines play (2 to MaxMachines).
	Machine, Machines int
	// ICEServers are the STUN and TURN servers to gather candidates from.
	// None means host candidates only (a LAN, which AllowCandidates must
	// then name, or one machine with Loopback).
	ICEServers []ICEServer
	// Relay uses only the TURN relay's candidates (ICE policy "relay"):
	// every datagram goes through the relay. For testing the relay, and
	// for players who do not want their address revealed to the others.
	// (The TURN relay, not the match relay of DialRelay.)
	Relay bool
	// Loopback gathers candidates on the loopback interface only and turns
	// off mDNS, as a test or an in-process soak needs inside a network
	// namespace that has nothing else (native builds only: a browser
	// decides its own candidates), and, unless AllowCandidates is set,
	// accepts the peers' candidates at loopback addresses.
	Loopback bool
	// Conn, if set, is the one UDP socket every connection's host
	// candidates share (one known port, for a firewall rule or a port
	// forward; the soak counts the bytes on it). The caller closes it,
	// after the transport. Native builds only. nil: each connection
	// gathers on ports of its own.
	Conn net.PacketConn
	// AllowCandidates lists the prefixes, among the addresses refused by
	// default, at which this machine accepts its peers' ICE candidates.
	// A candidate tells ICE where to send connectivity checks, so a peer
	// that lied could aim this machine's checks at any address it reaches
	// (RFC 8445 section 19.5.1). By default a candidate at a loopback,
	// private (10/8, 172.16/12, 192.168/16, IPv6 fc00::/7 and fec0::/10),
	// shared (carrier-grade NAT, 100.64/10), link-local, multicast,
	// unspecified or reserved (240/4) address, an IPv4-mapped or NAT64
	// address judged as its IPv4 address, or at a host name, is dropped
	// and counted (Stats.CandidatesRefused). Addresses reachable across
	// the internet are accepted, and so are the random mDNS names a
	// browser gives its host addresses (<uuid>.local): only the host that
	// made one up answers for it, and so are the addresses of the ICE
	// servers' URLs (a peer's relayed candidates are at its TURN server,
	// which this machine uses too, even on a private or loopback
	// address). A non-empty list replaces Loopback's
	// default; 0.0.0.0/0 and ::/0 accept every IP address. Every peer's
	// candidates are also bounded (MaxCandidates).
	//
	// Two machines on one network then meet through their servers'
	// candidates: the STUN server's view of their addresses (if their
	// router forwards from its public address to itself) or the TURN
	// relay. A game played on a LAN without servers lists that network
	// here, for example 192.168.0.0/16 (or every private prefix).
	AllowCandidates []netip.Prefix
}

// Stats counts what the transport dropped or failed to send.
type Stats struct {
	Oversized  int64 // datagrams larger than MaxDatagram, either way
	QueueFull  int64 // datagrams dropped because their peer's queue was full
	SendErrors int64 // sends to a channel that was not open, or that failed
	Malformed  int64 // signaling messages that were not understood
	// Remote ICE candidates dropped: at an address Config does not allow
	// (Config.AllowCandidates), and past MaxCandidates from one peer.
	CandidatesRefused int64
	CandidatesExcess  int64
}

// link is the connection to one peer.
type link struct {
	machine int
	pc      *webrtc.PeerConnection
	dc      *webrtc.DataChannel
	rw      atomic.Pointer[channel] // the detached channel, once open
	open    chan struct{}           // closed when rw is set
	once    sync.Once
	// The dial goroutine's: the remote description is set; the
	// candidates admitted (at most MaxCandidates); those that arrived
	// before the remote description, to be handed to ICE after it.
	remote     bool
	candidates int
	pending    []webrtc.ICECandidateInit
}

// Transport implements rollback.Transport over one data channel per peer.
type Transport struct {
	machine int
	relayed bool    // DialRelay's: one link, to the relay
	links   []*link // by peer index
	in      *inbox.Inbox
	mux     io.Closer // Config.Conn's, or nil
	policy  policy    // which remote candidates ICE gets

	oversized, sendErrs, malformed atomic.Int64
	refused, excess                atomic.Int64
	closed                         atomic.Bool
	readers                        sync.WaitGroup
}

// peerOf is the transport index of machine m (m != t.machine), or of the
// relay (party Machines) for DialRelay's.
func (t *Transport) peerOf(m int) int {
	if t.relayed {
		return 0
	}
	if m > t.machine {
		return m - 1
	}
	return m
}

// Dial connects to every other machine of the match through sig and
// returns once every data channel is open, or fails when ctx ends first
// (naming the machines it could not reach). It uses sig only until it
// returns.
func Dial(ctx context.Context, c Config, sig Signaler) (*Transport, error) {
	return dial(ctx, c, sig, false)
}

// DialRelay connects this machine to the match's relay (cmd/relay, the
// relay topology) instead of to the other machines: one peer connection,
// whose signals go to and come from the relay, party number c.Machines in
// the match's signaling (the seat after the last: the rendezvous's relayed
// lobbies route a seat's signals only to and from it). This machine
// offers; the relay answers. The Transport has one peer, 0, the relay:
// wrap it in a relay.Client (relay.NewClient(t, 0, c.Machine,
// c.Machines)), whose session's peers are the other machines. No other
// machine's address reaches this one: neither in signaling nor on the
// channel.
func DialRelay(ctx context.Context, c Config, sig Signaler) (*Transport, error) {
	return dial(ctx, c, sig, true)
}

func dial(ctx context.Context, c Config, sig Signaler, relayed bool) (*Transport, error) {
	switch {
	case c.Machines < 2 || c.Machines > MaxMachines:
		return nil, fmt.Errorf("%w: %d machines (want 2 to %d)", ErrConfig, c.Machines, MaxMachines)
	case c.Machine < 0 || c.Machine >= c.Machines:
		return nil, fmt.Errorf("%w: machine %d of %d", ErrConfig, c.Machine, c.Machines)
	case sig == nil:
		return nil, fmt.Errorf("%w: no signaler", ErrConfig)
	}
	pol, err := newPolicy(c)
	if err != nil {
		return nil, err
	}
	api, mux := newAPI(c)
	conf := webrtc.Configuration{}
	for _, s := range c.ICEServers {
		conf.ICEServers = append(conf.ICEServers, webrtc.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	if c.Relay {
		conf.ICETransportPolicy = webrtc.ICETransportPolicyRelay
	}
	parties := []int{c.Machines} // the relay
	if !relayed {
		parties = parties[:0]
		for m := range c.Machines {
			if m != c.Machine {
				parties = append(parties, m)
			}
		}
	}
	t := &Transport{machine: c.Machine, relayed: relayed, in: inbox.New(len(parties), MaxDatagram), mux: mux, policy: pol}
	ctx, cancel := context.WithCancel(ctx)
	out := newOutbox(ctx, sig)
	signals := make(chan error, 1) // the signal loop's end, once started
	signaling, ok := false, false
	defer func() {
		cancel() // ends the outbox and the signal loop, which Dial waits for
		out.close()
		if signaling {
			<-signals
		}
		if !ok {
			t.Close()
		}
	}()
	for _, m := range parties {
		l, err := t.connect(api, conf, m, out)
		if err != nil {
			return nil, err
		}
		t.links = append(t.links, l)
	}
	for _, l := range t.links {
		if l.machine > c.Machine {
			if err := offer(l, out); err != nil {
				return nil, err
			}
		}
	}
	signaling = true
	go func() { signals <- t.signal(ctx, sig, out) }()
	for _, l := range t.links {
		select {
		case <-l.open:
		case err := <-signals:
			signaling = false
			if err == nil || ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, t.unreached(err)
		case <-ctx.Done():
			return nil, t.unreached(ctx.Err())
		}
	}
	ok = true
	return t, nil
}

// unreached wraps err with the machines whose channels are not open.
func (t *Transport) unreached(err error) error {
	var missing []int
	for _, l := range t.links {
		if l.rw.Load() == nil {
			missing = append(missing, l.machine)
		}
	}
	return fmt.Errorf("rtc: machines %v not connected: %w", missing, err)
}

// connect makes the peer connection to machine m and its data channel:
// negotiated (both sides make it with the same id, so neither waits for
// the other to announce it), unordered, never retransmitted.
func (t *Transport) connect(api *webrtc.API, conf webrtc.Configuration, m int, out *outbox) (*link, error) {
	pc, err := api.NewPeerConnection(conf)
	if err != nil {
		return nil, fmt.Errorf("rtc: peer connection to machine %d: %w", m, err)
	}
	l := &link{machine: m, pc: pc, open: make(chan struct{})}
	ordered, negotiated := false, true
	var retransmits, id uint16 = 0, 0
	l.dc, err = pc.CreateDataChannel("rewind", &webrtc.DataChannelInit{
		Ordered: &ordered, MaxRetransmits: &retransmits, Negotiated: &negotiated, ID: &id})
	if err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("rtc: data channel to machine %d: %w", m, err)
	}
	pc.OnICECandidate(func(cand *webrtc.ICECandidate) {
		if cand == nil {
			return // gathering is over
		}
		b, err := json.Marshal(cand.ToJSON())
		if err == nil {
			out.send(m, KindCandidate, string(b))
		}
	})
	peer := t.peerOf(m)
	l.dc.OnOpen(func() {
		raw, err := l.dc.Detach()
		if err != nil {
			t.sendErrs.Add(1)
			return
		}
		ch := &channel{rw: raw}
		l.once.Do(func() {
			l.rw.Store(ch)
			close(l.open)
			t.readers.Add(1)
			go t.read(peer, ch)
		})
	})
	return l, nil
}

// offer sends l's offer.
func offer(l *link, out *outbox) error {
	sd, err := l.pc.CreateOffer(nil)
	if err == nil {
		err = l.pc.SetLocalDescription(sd)
	}
	if err != nil {
		return fmt.Errorf("rtc: offer to machine %d: %w", l.machine, err)
	}
	out.send(l.machine, KindOffer, sd.SDP)
	return nil
}

// signal applies the signaling messages that arrive until ctx ends.
// Messages from machines that are not peers, or that do not parse, are
// counted and dropped: the signaling server relays what anyone in the
// match sends.
func (t *Transport) signal(ctx context.Context, sig Signaler, out *outbox) error {
	for {
		from, kind, data, err := sig.Receive(ctx)
		if err != nil {
			return err
		}
		bad := from < 0 || from == t.machine || from > len(t.links)
		if t.relayed {
			bad = from != t.links[0].machine // only the relay signals a relayed machine
		}
		if bad {
			t.malformed.Add(1)
			continue
		}
		l := t.links[t.peerOf(from)]
		if err := t.apply(l, kind, data, out); err != nil {
			t.malformed.Add(1)
		}
	}
}

// apply applies one signaling message from l's machine. The candidates
// in an offer or an answer are taken out of it and admitted like
// trickled ones.
func (t *Transport) apply(l *link, kind, data string, out *outbox) error {
	var cands []webrtc.ICECandidateInit
	var err error
	switch kind {
	case KindOffer:
		if l.machine > t.machine || l.remote {
			return fmt.Errorf("rtc: unexpected offer from machine %d", l.machine)
		}
		if data, cands, err = sdpCandidates(data); err != nil {
			return err
		}
		if err := l.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: data}); err != nil {
			return err
		}
		sd, err := l.pc.CreateAnswer(nil)
		if err == nil {
			err = l.pc.SetLocalDescription(sd)
		}
		if err != nil {
			return err
		}
		out.send(l.machine, KindAnswer, sd.SDP)
	case KindAnswer:
		if l.machine < t.machine || l.remote {
			return fmt.Errorf("rtc: unexpected answer from machine %d", l.machine)
		}
		if data, cands, err = sdpCandidates(data); err != nil {
			return err
		}
		if err := l.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: data}); err != nil {
			return err
		}
	case KindCandidate:
		var c webrtc.ICECandidateInit
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return err
		}
		return t.admit(l, c)
	default:
		return fmt.Errorf("rtc: unknown signal kind %q", kind)
	}
	var errs []error
	for _, c := range cands {
		errs = append(errs, t.admit(l, c))
	}
	l.remote = true
	for _, c := range l.pending {
		errs = append(errs, l.pc.AddICECandidate(c))
	}
	l.pending = nil
	return errors.Join(errs...)
}

// admit hands one of l's candidates to ICE (or keeps it until the remote
// description is set) if the policy allows its address and l has taken
// fewer than MaxCandidates; it counts the candidates it drops. An empty
// candidate (the end of candidates) is dropped: ICE needs none.
func (t *Transport) admit(l *link, c webrtc.ICECandidateInit) error {
	if c.Candidate == "" {
		return nil
	}
	line, ok, err := t.policy.admit(c.Candidate)
	switch {
	case err != nil:
		return err
	case !ok:
		t.refused.Add(1)
		return nil
	case l.candidates >= MaxCandidates:
		t.excess.Add(1)
		return nil
	}
	l.candidates++
	c.Candidate, c.UsernameFragment = line, nil
	if !l.remote {
		l.pending = append(l.pending, c)
		return nil
	}
	return l.pc.AddICECandidate(c)
}

// read moves peer's datagrams into the inbox until the channel closes.
func (t *Transport) read(peer int, ch *channel) {
	defer t.readers.Done()
	buf := make([]byte, MaxDatagram+1)
	for {
		n, err := ch.rw.Read(buf)
		if err != nil {
			if errors.Is(err, io.ErrShortBuffer) { // a message larger than buf: lost
				t.oversized.Add(1)
				continue
			}
			return
		}
		if !t.in.Put(peer, buf[:n]) { // n is MaxDatagram+1: too large
			t.oversized.Add(1)
		}
	}
}

// Send sends b to peer. It does not retain b. Before the peer's channel
// is open, and after it closes, it fails.
func (t *Transport) Send(peer int, b []byte) error {
	if peer < 0 || peer >= len(t.links) {
		return ErrPeer
	}
	if t.closed.Load() {
		return ErrClosed
	}
	if len(b) > MaxDatagram {
		t.oversized.Add(1)
		return fmt.Errorf("rtc: %d-byte datagram (at most %d)", len(b), MaxDatagram)
	}
	ch := t.links[peer].rw.Load()
	if ch == nil {
		t.sendErrs.Add(1)
		return ErrClosed
	}
	if _, err := ch.rw.Write(b); err != nil {
		t.sendErrs.Add(1)
		return err
	}
	return nil
}

// Receive copies a waiting datagram into buf, taking the peers' queues in
// turn; ok is false when none is waiting. It never blocks.
func (t *Transport) Receive(buf []byte) (n, peer int, ok bool) {
	return t.in.Take(buf)
}

// Arrived receives a token after a datagram arrives (one token for any
// number): a loop with nothing to do, a test, can wait on it instead of
// polling Receive.
func (t *Transport) Arrived() <-chan struct{} { return t.in.Ready() }

// Stats returns the transport's counters.
func (t *Transport) Stats() Stats {
	return Stats{Oversized: t.oversized.Load(), QueueFull: t.in.Full(), SendErrors: t.sendErrs.Load(), Malformed: t.malformed.Load(),
		CandidatesRefused: t.refused.Load(), CandidatesExcess: t.excess.Load()}
}

// Route describes how the datagrams to peer travel: the local and remote
// candidate types of the selected pair ("host", "srflx", "relay"), for
// example "relay-relay"; empty when unknown (before the connection). In
// a browser it asks the RTCPeerConnection's getStats and waits for its
// answer (2 s at most): call it from a goroutine of its own, not from a
// JavaScript callback.
func (t *Transport) Route(peer int) string {
	if peer < 0 || peer >= len(t.links) {
		return ""
	}
	return route(t.links[peer].pc)
}

// Close closes every connection and waits for the readers to stop.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return ErrClosed
	}
	var errs []error
	for _, l := range t.links {
		if ch := l.rw.Load(); ch != nil {
			errs = append(errs, ch.rw.Close())
		}
		errs = append(errs, l.pc.Close())
	}
	if t.mux != nil {
		errs = append(errs, t.mux.Close())
	}
	t.readers.Wait()
	return errors.Join(errs...)
}
