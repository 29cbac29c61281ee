package rollback

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// sentLog is a Transport that keeps what is sent, or refuses it (fail).
type sentLog struct {
	sent []sentDatagram
	fail bool
}

type sentDatagram struct {
	peer int
	b    []byte
}

func (l *sentLog) Send(peer int, b []byte) error {
	if l.fail {
		return errors.New("refused")
	}
	l.sent = append(l.sent, sentDatagram{peer, append([]byte(nil), b...)})
	return nil
}

func (l *sentLog) Receive([]byte) (int, int, bool) { return 0, 0, false }

// outboxLayout is the input layout of testOutbox: 64 bits a frame, so
// that an input packet can be large.
var outboxLayout = wire.Layout{8, 8, 8, 8, 8, 8, 8, 8}

// testOutbox returns an outbox to two keyed peers over a sentLog, and the
// openers that read what it seals to each.
func testOutbox(t *testing.T, now *time.Duration) (*outbox, *sentLog, *peerSet, *Stats, [2]*wire.Opener) {
	t.Helper()
	r := rand.NewChaCha8([32]byte{3})
	x, err := wire.NewKeyShare(r)
	require.NoError(t, err)
	y, err := wire.NewKeyShare(r)
	require.NoError(t, err)
	peers := make(peerSet, 2)
	var opens [2]*wire.Opener
	for i := range peers {
		send, _, err := x.Keys(wire.Link{Ours: 1, Theirs: uint64(2 + i), TheirKey: y.Public()})
		require.NoError(t, err)
		peers[i].auth.seal, opens[i] = wire.NewSealer(send), wire.NewOpener(send)
	}
	format, err := wire.NewFormat(outboxLayout)
	require.NoError(t, err)
	log, stats := &sentLog{}, &Stats{}
	o := newOutbox(log, &peers, now, stats, format)
	return &o, log, &peers, stats, opens
}

// TestOutbox: a control message goes alone, or rides in front of the
// input packet of the same call to the same peer (one datagram of the
// message's kind), or goes alone when flushed or when the two would not
// fit in one datagram; only the first message due rides; every datagram
// is counted, for the session and the peer, and a refused one only as an
// error.
func TestOutbox(t *testing.T) {
	ping := &wire.Quality{Sent: 42, Frame: 7}
	small := &wire.InputPacket{Ack: 3, First: 3, Players: 1, Count: 2, Inputs: []uint64{1, 2}, Base: []uint64{0}}
	large := &wire.InputPacket{Players: 1, Count: 120, Inputs: make([]uint64, 120)} // ~960 bytes
	r := rand.New(rand.NewPCG(1, 2))
	for f := range large.Inputs {
		large.Inputs[f] = r.Uint64()
	}
	// A message that fits in a datagram alone, but not with large behind
	// it (a piece of state, as after a desync).
	format, err := wire.NewFormat(outboxLayout)
	require.NoError(t, err)
	body, err := format.AppendInput(nil, large)
	require.NoError(t, err)
	var big *wire.State
	for n := 0; big == nil; n++ {
		m := &wire.State{Frame: 1, Total: 4096, Data: make([]byte, n)}
		b, err := wire.AppendControl(nil, m)
		require.NoError(t, err)
		if wire.SealOverhead+len(b)+len(body) > maxDatagram {
			require.LessOrEqual(t, wire.SealOverhead+len(b), maxDatagram)
			big = m
		}
	}
	type want struct {
		peer  int
		kind  wire.Kind
		input bool // an input packet behind the message (or alone, for KindInput)
	}
	for _, tc := range []struct {
		name string
		run  func(o *outbox)
		want []want
	}{
		{"control goes at once", func(o *outbox) { o.control(1, ping) },
			[]want{{1, wire.KindQuality, false}}},
		{"riding without inputs goes at once", func(o *outbox) { o.riding(0, ping, false) },
			[]want{{0, wire.KindQuality, false}}},
		{"riding waits for the input packet", func(o *outbox) {
			o.riding(0, ping, true)
			o.input(0, small)
		}, []want{{0, wire.KindQuality, true}}},
		{"only the first rides", func(o *outbox) {
			o.riding(0, ping, true)
			o.riding(0, &wire.QualityReply{Echo: 1}, true)
			o.input(0, small)
		}, []want{{0, wire.KindQualityReply, false}, {0, wire.KindQuality, true}}},
		{"flushed alone when no input packet goes", func(o *outbox) {
			o.riding(1, ping, true)
			o.flush(1, nil)
			o.flush(1, nil) // nothing left
		}, []want{{1, wire.KindQuality, false}}},
		{"an input packet alone", func(o *outbox) { o.input(0, small) },
			[]want{{0, wire.KindInput, true}}},
		{"apart when together they would not fit", func(o *outbox) {
			o.riding(0, big, true)
			o.input(0, large)
		}, []want{{0, wire.KindState, false}, {0, wire.KindInput, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := 5 * time.Second
			o, log, peers, stats, opens := testOutbox(t, &now)
			tc.run(o)
			require.Len(t, log.sent, len(tc.want))
			bytes := 0
			for k, w := range tc.want {
				d := log.sent[k]
				assert.Equal(t, w.peer, d.peer)
				assert.Equal(t, w.kind, wire.SealedKind(d.b), "datagram %d's kind", k)
				assert.LessOrEqual(t, len(d.b), maxDatagram)
				body, err := opens[d.peer].Open(d.b)
				require.NoError(t, err, "sealed for its peer")
				if w.kind != wire.KindInput {
					var rest []byte
					switch w.kind {
					case wire.KindQuality:
						var m wire.Quality
						rest, err = wire.ParseControlPrefix(body, &m)
						assert.Equal(t, *ping, m)
					case wire.KindQualityReply:
						rest, err = wire.ParseControlPrefix(body, &wire.QualityReply{})
					case wire.KindState:
						rest, err = wire.ParseControlPrefix(body, &wire.State{})
					}
					require.NoError(t, err)
					body = rest
				}
				assert.Equal(t, w.input, len(body) > 0, "an input packet behind it")
				bytes += len(d.b)
			}
			assert.Equal(t, int64(len(tc.want)), stats.PacketsSent)
			assert.Equal(t, int64(bytes), stats.BytesSent)
			assert.Zero(t, stats.SendErrors)
			n := int64(0)
			for i := range *peers {
				n += (*peers)[i].st.PacketsSent
				if (*peers)[i].st.PacketsSent > 0 {
					assert.Equal(t, now, (*peers)[i].link.lastSend, "the link notes the send")
				}
			}
			assert.Equal(t, int64(len(tc.want)), n)
			assert.Empty(t, o.carry, "nothing carried over to the next peer")
		})
	}
	t.Run("refused", func(t *testing.T) {
		now := time.Second
		o, log, _, stats, _ := testOutbox(t, &now)
		log.fail = true
		o.control(0, ping)
		assert.Equal(t, int64(1), stats.SendErrors)
		assert.Zero(t, stats.PacketsSent)
	})
}
