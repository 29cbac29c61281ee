package rollback

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// noHost is a stmtHost whose ring reaches back to frame 0.
type noHost struct{}

func (noHost) suspect(int, Suspicion) {}
func (noHost) disconnect(int)         {}
func (noHost) ringLow() Frame         { return 0 }

// TestRelayClockSignsNoPrefixWhileAReceiptIsLate: with the relay clock our
// statements sign only the frames the relay's receipts made final. While
// our inputs go on and a receipt is late, that is no idle stall: the
// interval is signed whole once the receipt comes, never a prefix first.
// (Counting the ticks the receipts' frontier stood still as idle signed a
// prefix in every late receipt on hell; the machines that held it and
// those that held the whole interval echoed different digests until a
// repair, the settled frontier fell seconds behind and the input ring
// filled.) A real idle stall, our inputs stopped, still signs a prefix.
func TestRelayClockSignsNoPrefixWhileAReceiptIsLate(t *testing.T) {
	m := newStmtMesh(t)
	st := m.st[0]
	local := []PlayerID{0}
	r := newInputRing(3, local, 0xff, nil, 0)
	prefix := func() int {
		n, _, _ := st.holds(0, 0)
		if n > 0 && n < stmtFrames {
			return n
		}
		return 0
	}
	final := Frame(8) // a receipt for frames before 8, then none for a while
	for tick := range 2 * stmtIdleTicks {
		r.addLocal(0, Input(tick%7))
		st.signOwn(r, local, r.next[0], final, 0)
		require.Zero(t, prefix(), "tick %d: a prefix signed while our inputs go on", tick)
	}
	final = 3 * stmtFrames // the late receipt
	r.addLocal(0, 1)
	st.signOwn(r, local, r.next[0], final, 0)
	n, _, _ := st.holds(0, 0)
	require.Equal(t, stmtFrames, n, "the interval signed whole")
	require.Equal(t, int32(3), st.signed)

	// Our inputs stop inside interval 3 (at frame 61), the receipts
	// with them: after stmtIdleTicks the prefix is signed.
	final = r.next[0]
	for range stmtIdleTicks + 1 {
		st.signOwn(r, local, r.next[0], final, 0)
	}
	n, _, _ = st.holds(0, 3)
	require.Equal(t, int(final-3*stmtFrames), n, "a real stall signs its prefix")
}

// TestRelayClockStatementWaitsForFinalInputs: with the relay clock a
// peer's statement sent without its inputs is checked against ours only
// once the relay's receipt has made them final here. Before it, an input
// we hold may be the one its packets carried before the relay decided
// the frame (the decision on its way to us): checked then, the honest
// statement failed and was dropped.
func TestRelayClockStatementWaitsForFinalInputs(t *testing.T) {
	m := newStmtMesh(t)
	st := m.st[0]
	r := newInputRing(3, []PlayerID{0}, 0xff, nil, 0)
	v := &stmtView{peers: make(peerSet, 2), inputs: r}
	v.peers[0].players = []PlayerID{1}
	v.peers[1].players = []PlayerID{2}
	for f := range Frame(stmtFrames) {
		r.receive(1, f, 3, 0)
	}
	r.final[1] = 8 // the relay's receipt for machine 1: frames before 8
	_, ok := st.stmtInputs(noHost{}, v, 1, 0, stmtFrames)
	require.False(t, ok, "not final here yet: the statement waits")
	r.final[1] = stmtFrames
	in, ok := st.stmtInputs(noHost{}, v, 1, 0, stmtFrames)
	require.True(t, ok)
	require.Len(t, in, stmtFrames)

	// Without the relay clock every input here is final.
	r.final[1] = noFrame
	_, ok = st.stmtInputs(noHost{}, v, 1, 0, 4)
	require.True(t, ok)
}
