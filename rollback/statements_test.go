package rollback

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stmtMesh is three machines' statements (one player each), keys
// exchanged, and a roster where every machine plays unless gone says
// otherwise.
type stmtMesh struct {
	st   [3]*statements
	gone map[int]stmtNeed // machine -> what its departure makes it
	cut  Frame
}

func (m *stmtMesh) stmtNeed(x int, k int32) (stmtNeed, int) {
	switch m.gone[x] {
	case needWait:
		return needWait, 0
	case needGone:
		n := int(min(max(m.cut-Frame(k)*stmtFrames, 0), stmtFrames))
		if n == 0 {
			return needNone, 0
		}
		return needGone, n
	}
	return needLive, stmtFrames
}

// stmtLive: peer 1 is machine 2 at machines 0 and 1.
func (m *stmtMesh) stmtLive(i int, _ int32) bool {
	_, gone := m.gone[2]
	return i != 1 || !gone
}

func newStmtMesh(t *testing.T) *stmtMesh {
	m := &stmtMesh{}
	for me := range 3 {
		var np, peerOf [MaxPlayers]int
		for x := range 3 {
			np[x] = 1
			peerOf[x] = x - 1
			if x < me {
				peerOf[x] = x
			}
		}
		peerOf[me] = -1
		st, err := newStatements(rand.NewChaCha8([32]byte{byte(me)}), 7, me, np, peerOf, 3, stmtFrames)
		require.NoError(t, err)
		m.st[me] = st
	}
	for range 2 { // the second round: each list is full
		for me := range 3 {
			for x := range 3 {
				if x != me {
					require.True(t, m.st[me].takeKeys(m.peer(me, x), x, m.st[x].keyList(nil)))
				}
			}
		}
	}
	return m
}

// peer returns machine x's peer index at machine me.
func (m *stmtMesh) peer(me, x int) int { return m.st[me].peerOf[x] }

// signed returns machine x's signature over inputs of interval k.
func (m *stmtMesh) signed(x int, k int32, inputs []uint64) []byte {
	sig := make([]byte, 64)
	m.st[x].signFor(k, inputs, sig)
	return sig
}

func TestStatementKeys(t *testing.T) {
	m := newStmtMesh(t)
	for me := range 3 {
		assert.True(t, m.st[me].keysAgreed(), "machine %d", me)
		assert.NoError(t, m.st[me].mismatch)
	}

	// Machine 2 gave machine 0 another key than it gave machine 1: machine
	// 1 reports the one it got, and machine 0 refuses to start.
	fresh := newStmtMesh(t)
	list := fresh.st[1].keyList(nil)
	list[2*32] ^= 1
	assert.True(t, m.st[0].takeKeys(m.peer(0, 1), 1, list))
	var he *HandshakeError
	require.ErrorAs(t, m.st[0].mismatch, &he)
	assert.Equal(t, fieldSigningKeys, he.Field)
	assert.Contains(t, m.st[0].mismatch.Error(), "peer 0 says peer 1's is")

	// A list that does not fit the roster is dropped.
	assert.False(t, m.st[1].takeKeys(0, 0, list[:64]))
}

func TestStatementTake(t *testing.T) {
	in := []uint64{1, 1, 2, 2, 3, 3, 4, 4}
	other := []uint64{1, 1, 2, 9, 3, 3, 4, 4}
	for _, tc := range []struct {
		name   string
		first  []uint64 // held before, from machine 2 (nil: none)
		inputs []uint64
		k      int32
		forge  bool // a signature over something else
		want   stmtVerdict
	}{
		{name: "new", inputs: in, want: stmtNew},
		{name: "the same again", first: in, inputs: in, want: stmtKnown},
		{name: "a prefix of it", first: in, inputs: in[:3], want: stmtKnown},
		{name: "longer than the prefix held", first: in[:3], inputs: in, want: stmtNew},
		{name: "disagrees", first: in, inputs: other, want: stmtConflict},
		{name: "a prefix that disagrees", first: other, inputs: in[:7], want: stmtConflict},
		{name: "agrees on the frames both cover", first: other, inputs: other[:3], want: stmtKnown},
		{name: "a longer one that disagrees", first: other[:7], inputs: in, want: stmtConflict},
		{name: "forged", inputs: in, forge: true, want: stmtInvalid},
		{name: "bits outside the layout", inputs: []uint64{1 << 40}, want: stmtInvalid},
		{name: "more frames than an interval", inputs: append(slices.Repeat([]uint64{1}, stmtFrames), 5), want: stmtInvalid},
		{name: "beyond the window", inputs: in, k: ringSize / stmtFrames, want: stmtLater},
		{name: "negative interval", inputs: in, k: -1, want: stmtInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newStmtMesh(t)
			st := m.st[0]
			if tc.first != nil {
				require.Equal(t, stmtNew, st.take(1, 2, tc.k, tc.first, m.signed(2, tc.k, tc.first), 0xffff))
			}
			sig := m.signed(2, tc.k, tc.inputs)
			if tc.forge {
				sig = m.signed(2, tc.k+1, tc.inputs)
			}
			assert.Equal(t, tc.want, st.take(1, 2, tc.k, tc.inputs, sig, 0xffff))
			assert.Equal(t, tc.want == stmtConflict, st.proof[2].ok, "proof held")
			if tc.want == stmtConflict {
				assert.Equal(t, Frame(3), st.proof[2].from, "the first frame they disagree on (one player: one input a frame)")
			}
		})
	}

	// Each peer's datagrams cost at most maxVerifiesPerCall signatures a call.
	m := newStmtMesh(t)
	for k := range int32(maxVerifiesPerCall) {
		require.Equal(t, stmtNew, m.st[0].take(0, 1, k, in, m.signed(1, k, in), 0xffff))
	}
	assert.Equal(t, stmtDeferred, m.st[0].take(0, 1, maxVerifiesPerCall, in, m.signed(1, maxVerifiesPerCall, in), 0xffff))
	assert.Equal(t, stmtNew, m.st[0].take(1, 1, maxVerifiesPerCall, in, m.signed(1, maxVerifiesPerCall, in), 0xffff), "another peer's budget")
}

// TestStatementSettle: an interval settles once every machine's statement
// of it is held and every peer echoed the same digest; a prefix settles as
// far as every statement reaches; a machine whose departure is not agreed
// holds the digest; one that left counts up to its cut.
func TestStatementSettle(t *testing.T) {
	const L = stmtFrames
	var in [3][]uint64
	for x := range in {
		in[x] = slices.Repeat([]uint64{uint64(x + 1)}, L)
	}
	m := newStmtMesh(t)
	hold := func(me int, k int32, n int) {
		m.st[me].newCall()
		for x := range 3 {
			if x == me {
				m.st[me].sign(k, in[x][:n], 0)
			} else {
				m.st[me].take(m.peer(me, x), x, k, in[x][:n], m.signed(x, k, in[x][:n]), 0xffff)
			}
		}
		m.st[me].refresh(m)
	}
	echo := func(from, to int) {
		st := m.st[from]
		var d []byte
		for k := st.settled; k < st.done; k++ {
			d = append(d, st.digest[st.digestSlot(k)][:]...)
		}
		m.st[to].echoed(m.peer(to, from), 0, nil, uint32(st.settled), d, 0)
	}
	all := func() {
		for a := range 3 {
			for b := range 3 {
				if a != b {
					echo(a, b)
				}
			}
		}
	}

	hold(0, 0, L)
	assert.Equal(t, Frame(0), m.st[0].settle(m), "nobody echoed")
	hold(1, 0, L)
	hold(2, 0, L)
	echo(1, 0)
	assert.Equal(t, Frame(0), m.st[0].settle(m), "one peer echoed")
	echo(2, 0)
	assert.Equal(t, Frame(L), m.st[0].settle(m))
	assert.Equal(t, 0, m.st[0].blame(m), "machine 1 (peer 0) has not signed interval 1")

	// Interval 1: the statements cover only 5 frames (the inputs stopped).
	for me := range 3 {
		hold(me, 1, 5)
	}
	all()
	assert.Equal(t, Frame(L+5), m.st[0].settle(m), "a prefix")
	for me := range 3 {
		hold(me, 1, L)
	}
	assert.Equal(t, Frame(L+5), m.st[0].settle(m), "longer statements: the echoes must follow")
	all()
	assert.Equal(t, Frame(2*L), m.st[0].settle(m))

	// Interval 2: machine 2's statement is missing at machine 0: it is
	// blamed; machine 2 left but its departure is not agreed: the digest
	// waits; agreed with a cut 4 frames into the interval: its first 4
	// frames count.
	for me := range 3 {
		hold(me, 2, L)
	}
	m.st[0].slots[2][2] = held{k: -1}
	m.st[0].dirty = true
	m.st[0].refresh(m)
	all()
	assert.Equal(t, Frame(2*L), m.st[0].settle(m))
	assert.Equal(t, 1, m.st[0].blame(m), "machine 2 is peer 1")
	m.gone = map[int]stmtNeed{2: needWait}
	for me := range 2 {
		m.st[me].dirty = true
		m.st[me].refresh(m)
	}
	assert.Equal(t, int32(2), m.st[0].done, "no digest while the departure is pending")
	m.gone, m.cut = map[int]stmtNeed{2: needGone}, 2*L+4
	for me := range 2 {
		hold(me, 2, L)
		m.st[me].dirty = true
		m.st[me].refresh(m)
	}
	assert.Equal(t, Frame(2*L), m.st[0].settle(m), "machine 1's echo is missing")
	echo(1, 0)
	assert.Equal(t, Frame(3*L), m.st[0].settle(m), "machine 2 echoes no more: it is gone")
}

// sentStatements records what the statements send (a stmtSender).
type sentStatements struct{ stmts, echoes int }

func (s *sentStatements) sendStatement(int, int, int32, []uint64, []byte, bool) { s.stmts++ }
func (s *sentStatements) sendEcho(int, bool)                                    { s.echoes++ }

// TestSendProofs: a proof that machine 2 equivocated from frame 80 goes to
// a peer until its report shows it acted on it, and never to a peer that
// took its players over after that frame: that one played none of the
// frames the proof is about, and its report of the departure, the first
// frame it holds, never reached 80. Sent to it every round trip, each
// proof held back every repair to it (repairAt), so a statement of ours
// it lost was never sent again: 16 intervals on, every machine of the
// match stalled, and the others cut the joiner off (a late join against
// an equivocator: 4 of 20 matches verified).
func TestSendProofs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reported Frame // peer 0's report of machine 2's departure; 0: none
		back     Frame // the frame peer 0 took its players over at; 0: never away
		sent     bool
	}{
		{"not acted on", 0, 0, true},
		{"acted on", 80, 0, false},
		{"reported later than the proof", 96, 0, true},
		{"took over after the proof", 1596, 1904, false},
		{"took over before the proof", 0, 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newStmtMesh(t)
			st := m.st[0] // machine 0: peer 0 is machine 1, peer 1 machine 2
			st.proof[2] = stmtProof{ok: true, k: 5, from: 80}
			ps := threePeers()[:2]
			if tc.reported > 0 {
				ps[1].leave.reported[0], ps[1].leave.report[0] = true, tc.reported
			}
			var out sentStatements
			d := stmtDest{i: 0, self: 1, now: 10 * time.Second, rtt: 50 * time.Millisecond, peers: ps, back: tc.back}
			st.sendProofs(&out, d)
			assert.Equal(t, tc.sent, out.stmts > 0, "sent %d", out.stmts)
			assert.Equal(t, tc.sent, st.peers[0].repairAt != 0, "repairs held back")
		})
	}
}

// stmtFrames is the interval of the statements' unit tests: the
// shortest, of a match whose inputs are too wide for a longer one.
const stmtFrames = 16

// lowHost is a stmtHost whose ring reads from frame low on.
type lowHost struct{ low Frame }

func (*lowHost) suspect(int, Suspicion) {}
func (*lowHost) disconnect(int)         {}
func (h *lowHost) ringLow() Frame       { return h.low }

// TestStatementNotBelowTheRing: a statement whose interval starts below
// the ring's low frame (its settled prefix reaches past it) changes no
// input there: those frames' slots hold the frames a ring later, which
// applying it once rewrote (4 players on hell, relayed, seed 1001, with
// 64-frame statements: frame 1472 rewritten for frame 960, then "no
// usable snapshot"). It fails on the code before: the input of frame
// ringSize+3 became frame 3's.
func TestStatementNotBelowTheRing(t *testing.T) {
	m := newStmtMesh(t)
	st := m.st[0]
	inputs := newInputRing(3, []PlayerID{0}, 0xff, nil, 0)
	const end = ringSize + 40
	for f := range Frame(end) {
		inputs.receive(1, f, Input(f%7), 0) // machine 1's player
	}
	stmt := make([]uint64, stmtFrames)
	for f := range stmt {
		stmt[f] = uint64(f % 7)
	}
	require.Equal(t, stmtNew, st.take(m.peer(0, 1), 1, 0, stmt, m.signed(1, 0, stmt), 0xff))
	peers := make(peerSet, 2)
	peers[m.peer(0, 1)].players = []PlayerID{1}
	peers[m.peer(0, 2)].players = []PlayerID{2}
	v := &stmtView{peers: peers, inputs: inputs, frame: end, started: true}
	st.apply(&lowHost{low: 30}, v, 1, 0) // frames 0 to 15 are below the ring's low frame
	for f := Frame(ringSize); f < ringSize+stmtFrames; f++ {
		assert.Equal(t, Input(f%7), inputs.at(f, 1), "frame %d", f)
	}
}
