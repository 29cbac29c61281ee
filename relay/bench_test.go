package relay_test

import (
	"testing"
	"time"

	"github.com/rewindgg/rewind/relay"
)

// memLink is a relay's link in memory: what the machines sent it, and a
// count of what it sends them.
type memLink struct {
	in   [][]byte
	from []int
	k    int
	sent int
}

func (l *memLink) Send(peer int, b []byte) error { l.sent += len(b); return nil }

func (l *memLink) Receive(buf []byte) (n, peer int, ok bool) {
	if l.k == len(l.in) {
		return 0, 0, false
	}
	n, peer = copy(buf, l.in[l.k]), l.from[l.k]
	l.k++
	return n, peer, true
}

// BenchmarkRelayTick is one tick of a 4-machine match at the relay: four
// envelopes in, each with a 27-byte datagram for each of the three other
// machines (the mean of 4 players on far), and four out. ns/op is the
// relay's CPU per match per tick, without the sockets' system calls.
// Reseal: the second and third datagram of each envelope are reseal
// records of the first, which the relay rebuilds.
func BenchmarkRelayTick(b *testing.B) {
	for _, reseal := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "reseal"}[reseal], func(b *testing.B) { benchTick(b, reseal) })
	}
}

func benchTick(b *testing.B, reseal bool) {
	const machines = 4
	link := &memLink{}
	dgram := make([]byte, 27)
	for i := range machines {
		env := []byte{0xe1}
		for s := range machines {
			switch {
			case s == i:
			case reseal && len(env) > 1:
				env = append(env, 0xff, byte(s), 0, 1, 2, 3, 4, 5, 6)
			default:
				env = append(env, byte(s), byte(len(dgram)))
				env = append(env, dgram...)
			}
		}
		link.in, link.from = append(link.in, env), append(link.from, i)
	}
	r, err := relay.New(relay.Config{Machines: machines, Link: link})
	if err != nil {
		b.Fatal(err)
	}
	tick := time.Second / 60
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		link.k = 0
		r.Poll(time.Duration(n) * tick)
	}
	if got := r.Stats().Forwarded; got < int64(machines*(machines-1)) {
		b.Fatalf("forwarded %d", got)
	}
	if reseal && r.Stats().Rebuilt == 0 {
		b.Fatal("nothing rebuilt")
	}
}

// BenchmarkNewRelay: B/op is a 4-machine match's memory at the relay.
func BenchmarkNewRelay(b *testing.B) {
	link := &memLink{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := relay.New(relay.Config{Machines: 4, Link: link}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientTick is one tick of a machine of a 4-machine match at its
// client: three sealed datagrams of 60 bytes (a statement's signature and
// an input packet) sent, the last two with the first's body, and flushed.
// ns/op is what the de-duplication costs the game's machine a tick.
func BenchmarkClientTick(b *testing.B) {
	link := &memLink{}
	c, err := relay.NewClient(link, 3, 0, 4)
	if err != nil {
		b.Fatal(err)
	}
	var dgrams [3][]byte
	for p := range dgrams {
		dgrams[p] = make([]byte, 60)
		for k := range dgrams[p] {
			dgrams[p][k] = byte(k * 7)
		}
		dgrams[p][0], dgrams[p][59] = byte(p), byte(p)
	}
	b.ReportAllocs()
	for b.Loop() {
		for p, d := range dgrams {
			_ = c.Send(p, d)
		}
		_ = c.Flush()
	}
	if c.Stats().Copies == 0 {
		b.Fatal("no copies")
	}
}
