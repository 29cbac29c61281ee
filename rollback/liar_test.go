//go:build rewind_adversary

package rollback

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// The tests here are the adversary's rewriter alone (liar.go): the
// messages a session hands the outbox go in, and what it delivers comes
// out, recorded.

// sentMsg is a message the rewriter delivered to peer i: a copy of it,
// as its value (wire.InputPacket, wire.Checksum, ...).
type sentMsg struct {
	i   int
	msg any
}

// recorder is a deliverer that keeps a copy of every message.
type recorder struct{ sent []sentMsg }

func (r *recorder) deliver(i int, p post) bool {
	var m any
	switch {
	case p.pkt != nil:
		c := *p.pkt
		c.Inputs, c.Base, c.Gossip = slices.Clone(c.Inputs), slices.Clone(c.Base), slices.Clone(c.Gossip)
		m = c
	default:
		switch c := p.ctl.(type) {
		case *wire.Checksum:
			m = *c
		case *wire.Start:
			m = wire.Start{Mesh: slices.Clone(c.Mesh)}
		case *wire.Ready:
			m = wire.Ready{RTT: slices.Clone(c.RTT)}
		case *wire.Attest:
			a := *c
			a.Inputs, a.Sig = slices.Clone(a.Inputs), slices.Clone(a.Sig)
			m = a
		case *wire.Quality:
			m = *c
		}
	}
	r.sent = append(r.sent, sentMsg{i, m})
	return true
}

// fakeSigner signs a statement with its interval in every byte.
type fakeSigner struct{}

func (fakeSigner) signFor(k int32, _ []uint64, sig []byte) {
	for j := range sig {
		sig[j] = byte(k)
	}
}

func (fakeSigner) interval() Frame { return stmtFrames }

// The rewriter's test session: machine 1 of 3 (peers 0 and 1), local
// player 0, remote players 1 and 2; our next frame is 300, and we have
// lieSlowest frames of the slowest remote player.
const (
	lieNext    = Frame(300)
	lieSlowest = Frame(55)
)

// rewriterView returns the view of the test session with peers peers,
// the slowest remote player at frame slowest.
func rewriterView(peers int, slowest Frame) liarView {
	in := newInputRing(3, []PlayerID{0}, 0xff, nil, 0)
	in.next[0], in.next[1], in.next[2] = lieNext, slowest, slowest+5
	now := time.Second
	return liarView{now: &now, players: 3, local: []PlayerID{0}, inputs: in,
		sent: &frameTimes{high: lieNext}, peers: peers, signer: fakeSigner{}, me: 1}
}

// rewriterMessages returns what the session sends each peer in the test:
// an input packet of frames 40 to 59 (the inputs all 0) with its gossip
// about a third machine, a checksum, the start protocol's Start and
// Ready, our statement of frames 48 to 63, and a ping no lie touches.
func rewriterMessages() []post {
	return []post{
		{pkt: &wire.InputPacket{Ack: 100, First: 40, Count: 20, Players: 1, Inputs: make([]uint64, 20),
			Base: []uint64{0}, Lag: 2, Gossip: []wire.Gossip{{Frame: 70}}}},
		{ctl: &wire.Checksum{Frame: 30, Sum: 7}, riding: true, inputs: true},
		{ctl: &wire.Start{Mesh: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}}},
		{ctl: &wire.Ready{RTT: []uint32{1, 2, 3}}},
		{ctl: &wire.Attest{HasStatement: true, Machine: 1, Interval: 3, Frames: 16, Inputs: make([]uint64, 16),
			Sig: make([]byte, wire.SignatureSize)}, riding: true, inputs: true},
		{ctl: &wire.Quality{Sent: 5, Frame: 6}},
	}
}

// rewritten plays the test's messages to each peer through an adversary
// of kind k over view v, and returns what it delivered and its lies.
func rewritten(k liar.Kind, v liarView) ([]sentMsg, int64) {
	a, r := newAdversary(&liar.Script{Kind: k}, v), &recorder{}
	for i := range v.peers {
		for _, p := range rewriterMessages() {
			a.rewrite(r, i, p)
		}
	}
	return r.sent, a.Lies
}

// honestSent returns what an honest session delivers in the test: the
// messages as they are, each peer's in turn.
func honestSent(peers int) []sentMsg {
	r := &recorder{}
	for i := range peers {
		for _, p := range rewriterMessages() {
			r.deliver(i, p)
		}
	}
	return r.sent
}

// nMsgs is the number of rewriterMessages.
const nMsgs = 6

// sentPacket returns peer i's input packet in s, an honest session's
// messages, to edit (unwrapPackets makes it a value again).
func sentPacket(s []sentMsg, i int) *wire.InputPacket {
	if p, ok := s[i*nMsgs].msg.(*wire.InputPacket); ok {
		return p
	}
	p := s[i*nMsgs].msg.(wire.InputPacket)
	s[i*nMsgs].msg = &p
	return &p
}

// unwrapPackets makes the packets sentPacket edited values again.
func unwrapPackets(s []sentMsg) []sentMsg {
	for k := range s {
		if p, ok := s[k].msg.(*wire.InputPacket); ok {
			s[k].msg = *p
		}
	}
	return s
}

// headerOnly is AdvantageLie's added packet to peer i: no frames, from
// first, 250 behind our next frame.
func headerOnly(i int) sentMsg {
	return sentMsg{i, wire.InputPacket{Ack: 100, First: int32(lieNext - 250), Players: 1, Base: []uint64{0}, Inputs: []uint64{},
		Gossip: []wire.Gossip{{Frame: 70}}}}
}

// TestRewriter: each kind of lie rewrites the messages it should, as it
// should, drops or adds what it should, and leaves every other message
// as the session made it. The want of each row edits what an honest
// session sends (None's is the messages as they are).
func TestRewriter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    liar.Kind
		peers   int
		slowest Frame
		lies    int64
		want    func(s []sentMsg) []sentMsg
	}{
		{name: "none", kind: liar.None, peers: 2, want: func(s []sentMsg) []sentMsg { return s }},
		{name: "forged-gossip", kind: liar.ForgedGossip, peers: 2, lies: 2, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				sentPacket(s, i).Gossip[0] = wire.Gossip{Disconnected: true, Frame: 70 - lieGossipBack}
			}
			return s
		}},
		{name: "withhold-counts", kind: liar.WithholdCounts, peers: 2, lies: 2, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				sentPacket(s, i).Gossip[0].Frame = -1
			}
			return s
		}},
		{name: "advantage-lie", kind: liar.AdvantageLie, peers: 2, lies: 2 * 9, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				sentPacket(s, i).Lag = wire.MaxLag
			}
			extra := func(i int) []sentMsg {
				var x []sentMsg
				for range 8 {
					x = append(x, headerOnly(i))
				}
				return x
			}
			s = slices.Insert(s, nMsgs+1, extra(1)...)
			return slices.Insert(s, 1, extra(0)...)
		}},
		{name: "inflate-lag", kind: liar.InflateLag, peers: 2, lies: 2, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				sentPacket(s, i).Lag, sentPacket(s, i).Ack = wire.MaxLag, 100-lieAckShort
			}
			return s
		}},
		{name: "stall-ack", kind: liar.StallAck, peers: 2, lies: 2, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				sentPacket(s, i).Ack = 0
			}
			return s
		}},
		{name: "lookahead", kind: liar.Lookahead, peers: 2, slowest: lieSlowest, lies: 2, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				p := sentPacket(s, i)
				p.Ack, p.Count = 100-lieAckShort, int(lieSlowest-(lieAhead-1)-40)
				p.Inputs = p.Inputs[:p.Count]
			}
			return s
		}},
		{name: "lookahead-holds-all", kind: liar.Lookahead, peers: 2, slowest: 45, want: func(s []sentMsg) []sentMsg {
			return slices.Delete(s, nMsgs, nMsgs+1)[1:] // each packet dropped
		}},
		{name: "forged-checksum", kind: liar.ForgedChecksum, peers: 2, lies: 3, want: func(s []sentMsg) []sentMsg {
			far := wire.Checksum{Frame: int32(lieFarFrame), Sum: 7 ^ 0x5eed}
			s = slices.Insert(s, nMsgs+2, sentMsg{1, far})
			return slices.Insert(s, 2, sentMsg{0, far}, sentMsg{0, wire.Checksum{Frame: 30, Sum: 7 ^ 1}})
		}},
		{name: "equivocate", kind: liar.Equivocate, peers: 2, lies: 1, want: func(s []sentMsg) []sentMsg {
			sentPacket(s, 0).Inputs[50-40] = 1 // to peer 0 only
			a := s[4].msg.(wire.Attest)
			a.Inputs[50-48] = 1
			a.Sig = bytes.Repeat([]byte{3}, wire.SignatureSize)
			s[4].msg = a
			return s
		}},
		{name: "equivocate-two-machines", kind: liar.Equivocate, peers: 1, lies: 1, want: func(s []sentMsg) []sentMsg {
			return slices.Insert(s, 1, sentMsg{0, wire.InputPacket{Ack: 100, First: int32(lieNext - 10), Count: 1, Players: 1,
				Base: []uint64{0}, Inputs: []uint64{1}, Gossip: []wire.Gossip{{Frame: 70}}}})
		}},
		{name: "start-grief", kind: liar.StartGrief, peers: 2, lies: 4, want: func(s []sentMsg) []sentMsg {
			for i := range 2 {
				s[i*nMsgs+2].msg = wire.Start{Mesh: slices.Repeat([]uint32{1<<32 - 1}, 9)}
				s[i*nMsgs+3].msg = wire.Ready{RTT: slices.Repeat([]uint32{1<<32 - 1}, 3)}
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slowest := tc.slowest
			if slowest == 0 {
				slowest = lieNext
			}
			got, lies := rewritten(tc.kind, rewriterView(tc.peers, slowest))
			assert.Equal(t, unwrapPackets(tc.want(honestSent(tc.peers))), got)
			assert.Equal(t, tc.lies, lies, "lies counted")
		})
	}
}
