package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/rewindgg/rewind/relay"
)

// WebRTC seats: a match opened with {"seats": N} instead of addresses has
// seats that are WebRTC peers (browsers, and native machines over package
// rtc's DialRelay). Each seat is one peer connection, made when its offer
// arrives through the admin call (POST /matches/{id}/signals, which the
// rendezvous makes for the seat: the relay is the match's extra party in
// its signaling), with one data channel, negotiated with id 0, unordered
// and never retransmitted, as package rtc makes it. The relay answers with
// every candidate of its own in the answer (it gathers host candidates on
// one UDP socket, -webrtc, before it answers), so it sends nothing later;
// the seat's trickled candidates come through the same call. A datagram
// read from a seat's channel goes into the match's relay.Relay as one from
// a UDP machine does, and what the relay sends the seat goes out on the
// channel, written by the tick's writers.

// maxSeatCandidates bounds the ICE candidates a seat gives (in its offer
// and trickled): each names an address the relay sends checks to. Package
// rtc takes as many from a peer.
const maxSeatCandidates = 32

// gatherWait bounds how long an offer's answer waits for the relay's own
// candidates: host candidates on one socket, gathered at once.
const gatherWait = 5 * time.Second

// rtcConfig is how the relay makes its peer connections.
type rtcConfig struct {
	// Loopback gathers on the loopback interface only and accepts seats'
	// candidates at loopback addresses: for tests in a namespace.
	Loopback bool
	// Allow lists the prefixes, among the addresses refused by default
	// (loopback, private, shared, link-local, multicast, unspecified), at
	// which the relay accepts seats' candidates.
	Allow []netip.Prefix
}

// rtcHost makes the relay's peer connections, every one's ICE on one UDP
// socket.
type rtcHost struct {
	api *webrtc.API
	mux ice.UDPMux
}

// newRTCHost returns the host of the WebRTC seats, whose ICE traffic goes
// through conn.
func newRTCHost(conn net.PacketConn, c rtcConfig) *rtcHost {
	var s webrtc.SettingEngine
	s.DetachDataChannels()
	s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	if c.Loopback {
		s.SetIncludeLoopbackCandidate(true)
		s.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	}
	allow := c.Allow
	if c.Loopback && len(allow) == 0 {
		allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	s.SetRemoteIPFilter(func(ip net.IP) bool { return candidateAllowed(ip, allow) })
	mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: conn})
	s.SetICEUDPMux(mux)
	return &rtcHost{api: webrtc.NewAPI(webrtc.WithSettingEngine(s)), mux: mux}
}

func (h *rtcHost) close() error { return h.mux.Close() }

// candidateAllowed says whether the relay sends ICE checks to ip: an
// address reachable across the internet, or one allow names.
func candidateAllowed(ip net.IP, allow []netip.Prefix) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	a = a.Unmap()
	for _, p := range allow {
		if p.Contains(a) {
			return true
		}
	}
	return !(a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() || cgnat.Contains(a))
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// rtcSeat is one WebRTC seat of a match.
type rtcSeat struct {
	mu         sync.Mutex // held while a signal for the seat is applied
	pc         *webrtc.PeerConnection
	candidates int                                         // admitted so far
	ch         atomic.Pointer[datachannel.ReadWriteCloser] // the detached channel, once open
	// Under the server's lock: the IP address its traffic comes from,
	// counted in server.perIP (counted false until the channel opens).
	ip      netip.Prefix
	counted bool
}

// A seatSignal is one signaling message between a seat and the relay, as the
// admin call carries it.
type seatSignal struct {
	Seat int    `json:"seat"`
	Kind string `json:"kind"` // "offer", "answer" or "candidate", as package rtc's
	Data string `json:"data"`
}

// Signal kinds, as rtc and the rendezvous's lobby name them.
const (
	kindOffer     = "offer"
	kindAnswer    = "answer"
	kindCandidate = "candidate"
)

// errNoWebRTC: a signal for a match whose seats are not WebRTC peers, or
// a relay without -webrtc.
var errNoWebRTC = &refusal{400, "bad_request", "the match's seats are not WebRTC peers (or the relay has no -webrtc)"}

// errSeatOffered: a second offer for a seat.
var errSeatOffered = &refusal{409, "seat_offered", "the seat has made its offer already"}

// openSeats opens a match of seats WebRTC seats and returns its id.
func (s *server) openSeats(seats int) (string, error) {
	if s.rtc == nil {
		return "", s.refuse(errNoWebRTC)
	}
	if seats < 2 || seats > relay.MaxSlots {
		return "", s.refuse(badRequest("%d seats (want 2 to %d)", seats, relay.MaxSlots))
	}
	m := &hosted{seats: make([]*rtcSeat, seats)}
	for i := range m.seats {
		m.seats[i] = &rtcSeat{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addLocked(m, seats); err != nil {
		return "", err
	}
	return m.id, nil
}

// signal applies a seat's signal to the match id and returns the relay's
// answer to it (an offer's answer, with every candidate of the relay's;
// nothing for a candidate). ctx bounds the wait for the relay's
// candidates.
func (s *server) signal(ctx context.Context, id string, sig seatSignal) ([]seatSignal, error) {
	s.mu.Lock()
	m, ok := s.byID[id]
	s.mu.Unlock()
	switch {
	case !ok:
		return nil, errNoMatch
	case m.seats == nil:
		return nil, s.refuse(errNoWebRTC)
	case sig.Seat < 0 || sig.Seat >= len(m.seats):
		return nil, s.refuse(badRequest("seat %d (the match has %d)", sig.Seat, len(m.seats)))
	}
	st := m.seats[sig.Seat]
	st.mu.Lock()
	defer st.mu.Unlock()
	switch sig.Kind {
	case kindOffer:
		if st.pc != nil {
			return nil, s.refuse(errSeatOffered)
		}
		n := strings.Count(sig.Data, "a=candidate:")
		if n > maxSeatCandidates {
			return nil, s.refuse(badRequest("%d candidates in the offer (at most %d)", n, maxSeatCandidates))
		}
		st.candidates = n
		pc, err := s.seatConnection(m, sig.Seat, st)
		if err != nil {
			return nil, err
		}
		answer, err := answerOffer(ctx, pc, sig.Data)
		if err != nil {
			_ = pc.Close()
			return nil, s.refuse(badRequest("the offer: %v", err))
		}
		if !s.keep(m, st, pc) {
			return nil, errNoMatch
		}
		return []seatSignal{{Seat: sig.Seat, Kind: kindAnswer, Data: answer}}, nil
	case kindCandidate:
		if st.pc == nil {
			return nil, s.refuse(badRequest("a candidate before the seat's offer"))
		}
		var c webrtc.ICECandidateInit
		if err := json.Unmarshal([]byte(sig.Data), &c); err != nil {
			return nil, s.refuse(badRequest("the candidate: %v", err))
		}
		if c.Candidate == "" {
			return nil, nil // the end of candidates
		}
		if st.candidates >= maxSeatCandidates {
			return nil, s.refuse(badRequest("more than %d candidates", maxSeatCandidates))
		}
		st.candidates++
		if err := st.pc.AddICECandidate(c); err != nil {
			return nil, s.refuse(badRequest("the candidate: %v", err))
		}
		return nil, nil
	}
	return nil, s.refuse(badRequest("signal kind %q (want offer or candidate)", sig.Kind))
}

// keep records pc as the seat's connection, unless the match was closed
// meanwhile (then it closes pc and reports false).
func (s *server) keep(m *hosted, st *rtcSeat, pc *webrtc.PeerConnection) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[m.id] != m {
		go pc.Close()
		return false
	}
	st.pc = pc
	return true
}

// seatConnection makes the peer connection of seat slot of m, with its
// data channel: when the channel opens, its datagrams go into m's relay.
func (s *server) seatConnection(m *hosted, slot int, st *rtcSeat) (*webrtc.PeerConnection, error) {
	pc, err := s.rtc.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, fmt.Errorf("relay: peer connection: %w", err)
	}
	ordered, negotiated := false, true
	var retransmits, id uint16 = 0, 0
	dc, err := pc.CreateDataChannel("rewind", &webrtc.DataChannelInit{
		Ordered: &ordered, MaxRetransmits: &retransmits, Negotiated: &negotiated, ID: &id})
	if err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("relay: data channel: %w", err)
	}
	dc.OnOpen(func() {
		raw, err := dc.Detach()
		if err != nil {
			return
		}
		if !s.seatOpen(m, st, pc) {
			_ = raw.Close()
			go pc.Close()
			return
		}
		st.ch.Store(&raw)
		go s.readSeat(m, slot, raw)
	})
	return pc, nil
}

// answerOffer sets offer as pc's remote description and returns pc's
// answer once its candidates are gathered (gatherWait at most).
func answerOffer(ctx context.Context, pc *webrtc.PeerConnection, offer string) (string, error) {
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", err
	}
	sd, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(sd); err != nil {
		return "", err
	}
	t := time.NewTimer(gatherWait)
	defer t.Stop()
	select {
	case <-gathered:
	case <-t.C:
		return "", errors.New("the relay's candidates were not gathered in time")
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return pc.LocalDescription().SDP, nil
}

// seatOpen counts the seat's IP address (the remote end of the pair ICE
// selected) against the per-address quota, once its channel opens; it
// reports false when the match is closed or the address is over quota.
func (s *server) seatOpen(m *hosted, st *rtcSeat, pc *webrtc.PeerConnection) bool {
	var ip netip.Addr
	if sctp := pc.SCTP(); sctp != nil && sctp.Transport() != nil && sctp.Transport().ICETransport() != nil {
		if p, err := sctp.Transport().ICETransport().GetSelectedCandidatePair(); err == nil && p != nil && p.Remote != nil {
			ip, _ = netip.ParseAddr(p.Remote.Address)
		}
	}
	if !ip.IsValid() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[m.id] != m || st.counted {
		return false
	}
	k := ipKey(ip.Unmap())
	if s.perIP[k]+1 > s.cfg.MaxPerIP {
		s.refuseLocked(errAddressQuota)
		s.log.Info("seat refused", "id", m.id, "reason", errAddressQuota.reason)
		return false
	}
	s.perIP[k]++
	st.ip, st.counted = k, true
	return true
}

// readSeat hands the datagrams of seat slot's channel to m's relay until
// the channel closes.
func (s *server) readSeat(m *hosted, slot int, ch datachannel.ReadWriteCloser) {
	buf := make([]byte, relay.MaxDatagram+1)
	for {
		n, err := ch.Read(buf)
		if errors.Is(err, io.ErrShortBuffer) {
			continue // larger than any envelope: dropped
		}
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.byID[m.id] != m {
			s.mu.Unlock()
			return
		}
		s.deliverLocked(m, slot, buf[:n])
		s.mu.Unlock()
	}
}

// closeSeatsLocked closes the peer connections of a closed match; the server's
// lock is held: the connections are closed by a goroutine of their own
// (pion waits for its own goroutines).
func (s *server) closeSeatsLocked(m *hosted) {
	if m.seats == nil {
		return // a UDP match
	}
	for _, st := range m.seats {
		if st.counted {
			if s.perIP[st.ip]--; s.perIP[st.ip] <= 0 {
				delete(s.perIP, st.ip)
			}
			st.counted = false
		}
		if ch := st.ch.Load(); ch != nil {
			go (*ch).Close()
		}
	}
	go func() {
		for _, st := range m.seats {
			st.mu.Lock()
			pc := st.pc
			st.mu.Unlock()
			if pc != nil {
				_ = pc.Close()
			}
		}
	}()
}
