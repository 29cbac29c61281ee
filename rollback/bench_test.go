package rollback_test

import (
	"crypto/cipher"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// benchState fills an arena: a few counters the step really computes, and
// a blob that makes the arena as large as the benchmark says.
type benchState[B any] struct {
	Counters [8]uint64
	Blob     B
}

// benchGame does a little real work per step: it folds every input into a
// counter and touches one cache line of the blob.
type benchGame[B any] struct {
	a     *savestate.Arena
	h     savestate.Handle[benchState[B]]
	marks *desync.Marks // steady-1KiB-marked: three marks a step
}

func newBenchGame[B any](b *testing.B, size int) *benchGame[B] {
	a, err := savestate.New(size)
	if err != nil {
		b.Fatal(err)
	}
	h, err := savestate.Alloc[benchState[B]](a)
	if err != nil {
		b.Fatal(err)
	}
	// The blob holds data, as a game's state does: copying zeros is no
	// measure of a copy (docs/experiments.md, "Snapshots: measurements": on some
	// machines the cache-bypassing stores of a 1 MiB copy cost half as
	// much when the lines are all zero).
	st := h.Get(a)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(unsafe.Slice((*byte)(unsafe.Pointer(&st.Blob)), unsafe.Sizeof(st.Blob)))
	return &benchGame[B]{a: a, h: h}
}

func (g *benchGame[B]) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.h.Get(g.a)
	for i, p := range in {
		st.Counters[i] = st.Counters[i]*0x9e3779b97f4a7c15 + uint64(p.Input) + uint64(f)
	}
	g.marks.Mark("counters")
	blob := unsafe.Slice((*byte)(unsafe.Pointer(&st.Blob)), unsafe.Sizeof(st.Blob))
	blob[int(f)*4099%len(blob)] ^= byte(st.Counters[0])
	g.marks.Mark("blob")
	g.marks.Mark("end")
}

// Blob sizes that fill a 1 KiB, 64 KiB and 1 MiB arena after the arena's
// 16-byte header, the 8-byte allocation record and the 64 bytes of counters.
type (
	blob1KiB  [1024 - 88]byte
	blob64KiB [64<<10 - 88]byte
	blob1MiB  [1<<20 - 88]byte
)

// BenchmarkAdvance measures Session.Advance.
//
// steady-1KiB: two peers over netsim with no misprediction (inputs never
// change); one op is one frame of one peer (a peer-frame). netsim's own
// work (its random draws, its delay queue) is included.
//
// steady-1KiB-plain: the same over a fixedLink with no delay, an in-memory
// link that only copies each datagram to the other end: the session's own
// cost, to set against BenchmarkFloor/steady-1KiB.
//
// rollback20-*: one peer whose input for frame k arrives while frame k+19 is
// simulated and always differs from the prediction, so every op corrects a
// 20-frame-deep misprediction: the snapshot is moved forward one frame in
// place, restored (one copy of the arena) and 20 frames are simulated.
func BenchmarkAdvance(b *testing.B) {
	rollback.NoLowFloorCheck(b)
	b.Run("steady-1KiB", benchSteady(false, false))
	b.Run("steady-1KiB-plain", benchSteady(false, true))
	// The game marks its systems (Config.Marks), untraced as in every
	// match without a sync test or a desync; with peers the marks turn
	// the time machine on, which keeps the final inputs (every 32 frames)
	// and the agreed state (every checksum) as a bundle does: against
	// steady-1KiB-plain.
	b.Run("steady-1KiB-marked", func(b *testing.B) { benchSteadyMode(b, false, true, "marked") })
	// And makes desync bundles (Config.Bundle), with no desync: the
	// same bookkeeping, and the hook.
	b.Run("steady-1KiB-bundle", func(b *testing.B) { benchSteadyMode(b, false, true, "bundle") })
	b.Run("steady-lockstep-1KiB", benchSteady(true, false))
	b.Run("rollback20-64KiB", benchRollback20[blob64KiB](64<<10, 0))
	b.Run("rollback20-1MiB", benchRollback20[blob1MiB](1<<20, 0))
	// Desync detection's worst case: every checksum frame is re-simulated
	// 20 times, each time copying the state.
	b.Run("rollback20-1MiB-no-checksums", benchRollback20[blob1MiB](1<<20, -1))
	// The adaptive policy's ring with k fixed at 1 (GGPO's save every
	// frame) on the same rollbacks, against
	// BenchmarkFloor/ring-save-every-frame-1MiB.
	b.Run("rollback20-1MiB-every-frame", benchRollback20[blob1MiB](1<<20, 0, func(c *rollback.Config) { c.SnapshotInterval = 1 }))
}

func benchSteady(lockstep, plain bool) func(b *testing.B) {
	return func(b *testing.B) { benchSteadyMode(b, lockstep, plain, "") }
}

// benchSteadyMode: opt "marked" gives the game marks (Config.Marks),
// "bundle" marks and Config.Bundle too.
func benchSteadyMode(b *testing.B, lockstep, plain bool, opt string) {
	nw, err := netsim.New(2, 1, netsim.Profile{Latency: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	link := &fixedLink{}
	tick := func() { nw.Advance(match.Tick) }
	if plain {
		tick = func() { link.Advance(match.Tick) }
	}
	var ss [2]*rollback.Session
	for i := range ss {
		g := newBenchGame[blob1KiB](b, 1024)
		c := rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{3, 8, 8}, State: g.a, Game: g, Transport: nw.Endpoint(i),
			Clock: nw.Now, Rand: match.SeededRand(1, i), Lockstep: lockstep,
			// One input packet per peer-frame, as the floor sends: the
			// held input would otherwise let lazy sending leave every
			// other one out after 5 s (lockstep sends on its own
			// schedule, and refuses the option).
			SendEveryTick: !lockstep}
		if plain {
			c.Transport, c.Clock = link.end(i), link.Now
		}
		if opt != "" {
			g.marks = &desync.Marks{}
			c.Marks = g.marks
		}
		if opt == "bundle" {
			c.Bundle = func(*bundle.Bundle) { b.Fatal("a bundle with no desync") }
		}
		if ss[i], err = rollback.NewSession(c); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 { // the handshake
		for _, s := range ss {
			if _, err := s.Idle(); err != nil {
				b.Fatal(err)
			}
		}
		tick()
	}
	peerFrame := func(i int) {
		s := ss[i&1]
		if _, err := s.AddLocalInput(rollback.PlayerID(i&1), 0x155); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Advance(); err != nil {
			b.Fatal(err)
		}
		if i&1 == 1 {
			tick()
		}
	}
	for i := range 200 { // the first frames mispredict the zero input once
		peerFrame(i)
	}
	before := ss[0].Stats()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		peerFrame(i)
		i++
	}
	after := ss[0].Stats()
	if after.Rollbacks != before.Rollbacks {
		b.Fatalf("steady state rolled back %d times", after.Rollbacks-before.Rollbacks)
	}
	b.ReportMetric(float64(after.BytesSent-before.BytesSent)/float64(after.Frame-before.Frame), "bytes/packet")
}

// lateInputs makes fake peer 0 send one input per Advance of *s, 20
// frames late, never what repeat-last predicts: every Advance rolls back
// 19 frames. It allocates nothing per datagram; sealing it (about 50 ns)
// is charged to the benchmark, as the session's opening of it must be.
func lateInputs(fp *fakepeer.Peers, s **rollback.Session) func() ([]byte, int, bool) {
	var next int32
	var base [1]uint64
	pkt := wire.InputPacket{Inputs: make([]uint64, 0, 1)}
	buf := make([]byte, 0, 64)
	sealed := make([]byte, 0, 64)
	return func() ([]byte, int, bool) {
		if *s == nil || !fp.Keyed(0) || next > int32((*s).Frame())-19 {
			return nil, 0, false
		}
		pkt = wire.InputPacket{Ack: int32((*s).Frame()), First: next, Count: 1, Players: 1, Inputs: pkt.Inputs[:0]}
		if next > 0 {
			base[0] = uint64((next - 1) & 1)
			pkt.Base = base[:]
		}
		pkt.Inputs = append(pkt.Inputs, uint64(next&1))
		var err error
		if buf, err = wire.AppendInput(buf[:0], &pkt, wire.Layout{3, 8, 8}); err != nil {
			panic(err)
		}
		next++
		sealed = fp.SealTo(sealed, 0, wire.KindInput, buf)
		return sealed, 0, true
	}
}

// fakePair sets *s to a session of two players, Layout {3, 8, 8}, local
// player 0 and player 1 on the fake peer, without the start delay, after
// edit changes its Config; and completes the handshake.
func fakePair[B any](b *testing.B, g *benchGame[B], peer *fakepeer.Peers, s **rollback.Session, edit func(c *rollback.Config)) {
	c := rollback.Config{Players: 2, Local: []rollback.PlayerID{0},
		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{1}}},
		Layout: rollback.Layout{3, 8, 8}, State: g.a, Game: g, Transport: peer, Clock: peer.Now, NoStartDelay: true}
	edit(&c)
	var err error
	if *s, err = rollback.NewSession(c); err != nil {
		b.Fatal(err)
	}
	for range 3 { // the handshake
		peer.Advance(match.Tick)
		if _, err := (*s).Idle(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRollback20[B any](size, checksumEvery int, edits ...func(c *rollback.Config)) func(b *testing.B) {
	return func(b *testing.B) {
		g := newBenchGame[B](b, size)
		peer := fakepeer.New(99)
		var s *rollback.Session
		peer.Next = lateInputs(peer, &s)
		// The rollback mechanics alone: the scripted peer speaks neither
		// the start protocol nor keeps a fair pace on purpose.
		fakePair(b, g, peer, &s, func(c *rollback.Config) {
			c.FixedInputLag, c.NoFrameAdvantage, c.ChecksumEvery = true, true, checksumEvery
			for _, edit := range edits {
				edit(c)
			}
		})
		op := func() int {
			peer.Advance(match.Tick)
			if queued, err := s.AddLocalInput(0, 7); err != nil || !queued {
				b.Fatal(err)
			}
			r, err := s.Advance()
			if err != nil || r.Stalled {
				b.Fatal(err, r.Stalled)
			}
			return r.Resimulated
		}
		for range 100 {
			op()
		}
		before := s.Stats()
		b.ReportAllocs()
		for b.Loop() {
			if n := op(); n != 19 {
				b.Fatalf("re-simulated %d frames, want 19 (+1 new)", n)
			}
		}
		after := s.Stats()
		ops := float64(after.Frame - before.Frame)
		b.ReportMetric(float64(after.Rollbacks-before.Rollbacks)/ops, "rollbacks/op")
		b.ReportMetric(float64(after.Saves-before.Saves)/ops, "saves/op")
	}
}

// BenchmarkFloor is the least work the session's benchmarks can do,
// measured in the same run.
//
// steady-1KiB: one peer-frame of BenchmarkAdvance/steady-1KiB-plain: one
// input copy, one encode in Rewind's wire format (the input packet, sealed:
// its header and MAC), one hop through the same in-memory link, one open
// and decode, and one step of the same game.
//
// rollback20-*: one copy of the arena and 20 steps of the same game.
// "ring-save-every-frame" is the GGPO alternative: a restore, then 20 steps
// each followed by a save.
func BenchmarkFloor(b *testing.B) {
	rollback.NoLowFloorCheck(b)
	b.Run("steady-1KiB", benchFloorSteady)
	b.Run("rollback20-64KiB", benchFloor[blob64KiB](64<<10, false))
	b.Run("rollback20-1MiB", benchFloor[blob1MiB](1<<20, false))
	b.Run("ring-save-every-frame-1MiB", benchFloor[blob1MiB](1<<20, true))
}

func benchFloor[B any](size int, ring bool) func(b *testing.B) {
	return func(b *testing.B) {
		g := newBenchGame[B](b, size)
		if err := g.a.Save(0); err != nil {
			b.Fatal(err)
		}
		in := []rollback.PlayerInput{{Input: 7, Status: rollback.Confirmed}, {Input: 1, Status: rollback.Confirmed}}
		b.ReportAllocs()
		f := rollback.Frame(0)
		for b.Loop() {
			if err := g.a.Restore(0); err != nil {
				b.Fatal(err)
			}
			for range 20 {
				g.Step(f, in)
				f++
				if ring {
					_ = g.a.Save(1)
				}
			}
		}
	}
}

// benchFloorSteady is BenchmarkFloor/steady-1KiB: two machines, as in
// BenchmarkAdvance/steady-1KiB-plain, take turns; at its turn a machine
// takes the other's packet off the link, opens and decodes it, steps its
// game with that input and its own, and sends the other its own input for
// its next frame, encoded and sealed.
func benchFloorSteady(b *testing.B) {
	format, err := wire.NewFormat(wire.Layout{3, 8, 8})
	if err != nil {
		b.Fatal(err)
	}
	type machine struct {
		end    rollback.Transport
		seal   *wire.Sealer
		open   *wire.Opener
		g      *benchGame[blob1KiB]
		local  [256]uint64 // its input ring
		base   [1]uint64   // the other's input of the frame before the packet's
		out    wire.InputPacket
		got    wire.InputPacket
		sendTo []byte
		recv   []byte
		in     [2]rollback.PlayerInput
	}
	link := &fixedLink{}
	var ms [2]*machine
	send, recv := linkKeys(b)
	for k := range ms {
		m := &machine{end: link.end(k), g: newBenchGame[blob1KiB](b, 1024),
			sendTo: make([]byte, 0, 1200), recv: make([]byte, 1201)}
		m.out = wire.InputPacket{Players: 1, Inputs: make([]uint64, 0, 1), Base: m.local[:1]}
		m.got = wire.InputPacket{Inputs: make([]uint64, 0, wire.MaxFrames), Base: m.base[:]}
		ms[k] = m
	}
	// One direction's keys serve both: each machine seals with its own
	// sealer and the other opens with its own opener.
	ms[0].seal, ms[1].open = wire.NewSealer(send), wire.NewOpener(recv)
	ms[1].seal, ms[0].open = wire.NewSealer(send), wire.NewOpener(recv)
	sendInput := func(m *machine, f int32) {
		m.local[f%256] = 0x155 // the input copy
		m.out.Ack, m.out.First, m.out.Count = f, f, 1
		m.out.Base = m.local[(f-1)%256 : (f-1)%256+1]
		m.out.Inputs = append(m.out.Inputs[:0], m.local[f%256])
		b, err := format.AppendInput(m.seal.Begin(m.sendTo[:0], wire.KindInput), &m.out)
		if err != nil {
			panic(err)
		}
		_ = m.end.Send(0, m.seal.Seal(b))
	}
	sendInput(ms[1], 1) // machine 0's first turn has its packet
	b.ReportAllocs()
	bytes, i := 0, 0
	for b.Loop() {
		m, f := ms[i&1], int32(1+i/2)
		n, _, ok := m.end.Receive(m.recv)
		if !ok {
			b.Fatal("no packet")
		}
		bytes += n
		body, err := m.open.Open(m.recv[:n])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wire.PeekInput(body, f); err != nil {
			b.Fatal(err)
		}
		if err := format.ParseInput(body, f, 1, 0, &m.got); err != nil {
			b.Fatal(err)
		}
		m.base[0] = m.got.Inputs[0]
		m.in[0].Input, m.in[1].Input = 0x155, rollback.Input(m.got.Inputs[0])
		m.g.Step(rollback.Frame(f), m.in[:])
		if i&1 == 0 {
			sendInput(m, f) // for the other's turn at frame f
		} else {
			sendInput(m, f+1)
		}
		i++
	}
	b.ReportMetric(float64(bytes)/float64(i), "bytes/packet")
}

// linkKeys returns the keys of one direction of a link: the sender's
// sealing key and the receiver's opening key.
func linkKeys(b *testing.B) (send, recv cipher.AEAD) {
	r := rand.NewChaCha8([32]byte{7})
	x, err := wire.NewKeyShare(r)
	if err != nil {
		b.Fatal(err)
	}
	y, err := wire.NewKeyShare(r)
	if err != nil {
		b.Fatal(err)
	}
	if send, _, err = x.Keys(wire.Link{Ours: 1, Theirs: 2, TheirKey: y.Public()}); err != nil {
		b.Fatal(err)
	}
	if _, recv, err = y.Keys(wire.Link{Ours: 2, Theirs: 1, TheirKey: x.Public()}); err != nil {
		b.Fatal(err)
	}
	return send, recv
}

// StepPartial makes benchGame a PartialStepper: one step's work.
func (g *benchGame[B]) StepPartial(f rollback.Frame, in []rollback.PlayerInput, _ float64) {
	g.Step(f, in)
}

// BenchmarkExtrapolate measures Session.Extrapolate on a 1 MiB arena (one
// copy into the scratch region and a partial step), against the article's
// back up, step and restore (two copies).
func BenchmarkExtrapolate(b *testing.B) {
	rollback.NoLowFloorCheck(b)
	b.Run("fork-1MiB", func(b *testing.B) {
		g := newBenchGame[blob1MiB](b, 1<<20)
		s, err := rollback.NewSession(rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{8}, State: g.a, Game: g})
		if err != nil {
			b.Fatal(err)
		}
		render := func() {}
		b.ReportAllocs()
		_ = s.Extrapolate(0.5, render) // the scratch region is allocated once
		for b.Loop() {
			if err := s.Extrapolate(0.5, render); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backup-restore-1MiB", func(b *testing.B) {
		g := newBenchGame[blob1MiB](b, 1<<20)
		in := []rollback.PlayerInput{{Input: 7, Status: rollback.Confirmed}}
		b.ReportAllocs()
		for b.Loop() {
			_ = g.a.Save(0)
			g.StepPartial(0, in, 0.5)
			_ = g.a.Restore(0)
		}
	})
}

// BenchmarkFlood: one peer's address has 1,000 datagrams waiting at every
// call; one op is one Idle. The session judges 64 of them and drops the
// rest unjudged. "sealed" are valid but costly input packets (255 frames
// each, every input changed, all frames the session already has), as only
// the peer itself can send: each is opened and parsed. "forged" are
// copies of one with a changed byte, as a stranger can send: each fails
// the MAC. The floor, in the same run, is opening and parsing 64 costly
// packets and nothing else. The sealing of the next op's packets is not
// timed.
func BenchmarkFlood(b *testing.B) {
	rollback.NoLowFloorCheck(b)
	layout := wire.Layout{3, 8, 8}
	pkt := wire.InputPacket{Count: wire.MaxFrames, Players: 1, Gossip: []wire.Gossip{}}
	for f := range wire.MaxFrames {
		pkt.Inputs = append(pkt.Inputs, uint64(f)*0x010101&0x7ffff)
	}
	body, err := wire.AppendInput(nil, &pkt, layout)
	if err != nil {
		b.Fatal(err)
	}
	flood := func(forged bool) func(b *testing.B) {
		return func(b *testing.B) {
			g := newBenchGame[blob1KiB](b, 1024)
			peer := fakepeer.New(99)
			var s *rollback.Session
			fakePair(b, g, peer, &s, func(*rollback.Config) {})
			queue := make([][]byte, 1000)
			fill := func() {
				for i := range queue {
					queue[i] = peer.SealTo(queue[i], 0, wire.KindInput, body)
					if forged {
						queue[i][3] ^= 0x40
					}
				}
			}
			fill()
			before := s.Stats()
			b.ReportAllocs()
			for b.Loop() {
				peer.Deliver(0, queue...)
				peer.Advance(match.Tick)
				if _, err := s.Idle(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				fill()
				b.StartTimer()
			}
			after := s.Stats()
			b.ReportMetric(float64(after.PacketsOverBudget-before.PacketsOverBudget)/float64(b.N), "dropped/op")
			b.ReportMetric(float64(after.PacketsForged-before.PacketsForged)/float64(b.N), "forged/op")
		}
	}
	b.Run("sealed-1000-packets", flood(false))
	b.Run("forged-1000-packets", flood(true))
	b.Run("floor-open-parse-64-packets", func(b *testing.B) {
		send, recv := linkKeys(b)
		sealer := wire.NewSealer(send)
		sealed := make([][]byte, 64)
		for i := range sealed {
			sealed[i] = sealer.Seal(append(sealer.Begin(nil, wire.KindInput), body...))
		}
		fresh := *wire.NewOpener(recv)
		out := wire.InputPacket{Inputs: make([]uint64, 0, wire.MaxFrames), Gossip: make([]wire.Gossip, 0, 1)}
		b.ReportAllocs()
		for b.Loop() {
			open := fresh
			for _, d := range sealed {
				body, err := open.Open(d)
				if err != nil {
					b.Fatal(err)
				}
				if err := wire.ParseInput(body, 0, layout, 1, 0, &out); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
