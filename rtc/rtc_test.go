package rtc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc"
)

// dialAll dials every machine of a match at once and fails the test
// unless all connect within the deadline.
func dialAll(t testing.TB, machines int) []*rtc.Transport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sigs := rtc.MemorySignalers(machines)
	trs := make([]*rtc.Transport, machines)
	errs := make([]error, machines)
	var wg sync.WaitGroup
	for m := range machines {
		wg.Go(func() {
			trs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: m, Machines: machines, Loopback: true}, sigs[m])
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, tr := range trs {
			if tr != nil {
				tr.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return trs
}

// receive waits for want datagrams on tr, up to a deadline.
func receive(t testing.TB, tr *rtc.Transport, want int) map[int][][]byte {
	t.Helper()
	got := map[int][][]byte{}
	buf := make([]byte, rtc.MaxDatagram)
	deadline := time.After(10 * time.Second)
	for n := 0; n < want; {
		k, peer, ok := tr.Receive(buf)
		if !ok {
			select {
			case <-tr.Arrived():
			case <-deadline:
				t.Fatalf("received %d of %d datagrams", n, want)
			}
			continue
		}
		got[peer] = append(got[peer], bytes.Clone(buf[:k]))
		n++
	}
	return got
}

// TestMesh: three machines connect in a full mesh, and every datagram
// arrives from the right peer index (peer p is machine p, or p+1 from p
// on).
func TestMesh(t *testing.T) {
	trs := dialAll(t, 3)
	for m, tr := range trs {
		for p := range 2 {
			to := p
			if p >= m {
				to = p + 1
			}
			if err := tr.Send(p, []byte{byte(m), byte(to)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for m, tr := range trs {
		got := receive(t, tr, 2)
		for p, ds := range got {
			from := p
			if p >= m {
				from = p + 1
			}
			if len(ds) != 1 || ds[0][0] != byte(from) || ds[0][1] != byte(m) {
				t.Errorf("machine %d peer %d: got %v, want [%d %d]", m, p, ds, from, m)
			}
		}
		if r := tr.Route(0); r != "host-host" {
			t.Errorf("machine %d route %q, want host-host", m, r)
		}
	}
}

// TestStrangeSignals: signals from no peer, of no kind, or that do not
// parse are dropped, and the match still connects.
func TestStrangeSignals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sigs := rtc.MemorySignalers(3) // machine 2 plays no part but sends junk
	for _, to := range []int{0, 1} {
		for _, k := range []string{rtc.KindOffer, rtc.KindAnswer, rtc.KindCandidate, "x"} {
			sigs[2].Send(ctx, to, k, "{junk")
		}
	}
	trs := make([]*rtc.Transport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for m := range 2 {
		wg.Go(func() {
			trs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: m, Machines: 2, Loopback: true}, sigs[m])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		defer tr.Close()
	}
	trs[0].Send(0, []byte("hi"))
	if got := receive(t, trs[1], 1); string(got[0][0]) != "hi" {
		t.Fatalf("got %q", got[0])
	}
	for m, tr := range trs {
		if st := tr.Stats(); st.Malformed < 4 {
			t.Errorf("machine %d counted %d malformed signals, want at least the stranger's 4", m, st.Malformed)
		}
	}
}

func TestDialChecksItsConfig(t *testing.T) {
	ctx := context.Background()
	sig := rtc.MemorySignalers(2)[0]
	for _, c := range []rtc.Config{{Machines: 1}, {Machines: 9}, {Machine: 2, Machines: 2}, {Machine: -1, Machines: 2},
		{Machines: 2, AllowCandidates: []netip.Prefix{{}}}} {
		if _, err := rtc.Dial(ctx, c, sig); !errors.Is(err, rtc.ErrConfig) {
			t.Errorf("Dial(%+v) = %v, want ErrConfig", c, err)
		}
	}
	if _, err := rtc.Dial(ctx, rtc.Config{Machines: 2}, nil); !errors.Is(err, rtc.ErrConfig) {
		t.Errorf("Dial without a signaler = %v", err)
	}
}

func TestSendChecksItsArguments(t *testing.T) {
	trs := dialAll(t, 2)
	if err := trs[0].Send(1, []byte{1}); !errors.Is(err, rtc.ErrPeer) {
		t.Errorf("Send to peer 1 of 1 = %v", err)
	}
	if err := trs[0].Send(0, make([]byte, rtc.MaxDatagram+1)); err == nil {
		t.Error("Send of an oversized datagram succeeded")
	}
	trs[1].Close()
	if err := trs[1].Send(0, []byte{1}); !errors.Is(err, rtc.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	if st := trs[0].Stats(); st.Oversized != 1 {
		t.Errorf("stats %+v, want one oversized", st)
	}
}

// BenchmarkRoundTrip measures a datagram's round trip over the data
// channel on loopback (ns/op is one round trip). The same through the
// TURN relay is package relay's (cmd/rendezvous/relay).
func BenchmarkRoundTrip(b *testing.B) {
	trs := dialAll(b, 2)
	msg := make([]byte, 100)
	buf := make([]byte, rtc.MaxDatagram)
	wait := func(tr *rtc.Transport) {
		for {
			if _, _, ok := tr.Receive(buf); ok {
				return
			}
		}
	}
	rtts := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		trs[0].Send(0, msg)
		wait(trs[1])
		trs[1].Send(0, msg)
		wait(trs[0])
		rtts = append(rtts, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds()), "p99-µs")
}

// TestSharedSocket: with Config.Conn every connection of a machine uses
// that one socket (and nothing else carries its datagrams).
func TestSharedSocket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sigs := rtc.MemorySignalers(3)
	conns := make([]*countingConn, 3)
	trs := make([]*rtc.Transport, 3)
	errs := make([]error, 3)
	for m := range conns {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		conns[m] = &countingConn{PacketConn: pc}
	}
	var wg sync.WaitGroup
	for m := range 3 {
		wg.Go(func() {
			trs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: m, Machines: 3, Loopback: true, Conn: conns[m]}, sigs[m])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		defer tr.Close()
	}
	before := conns[0].written.Load()
	for range 10 {
		trs[0].Send(1, make([]byte, 100))
	}
	receive(t, trs[2], 10)
	if sent := conns[0].written.Load() - before; sent < 10*100 {
		t.Fatalf("machine 0's socket carried %d bytes for 10 datagrams of 100", sent)
	}
}

type countingConn struct {
	net.PacketConn
	written atomic.Int64
}

func (c *countingConn) WriteTo(b []byte, a net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, a)
	c.written.Add(int64(n))
	return n, err
}

// TestDialEndsWhenSignalingFails: a signaler whose Receive fails ends
// Dial with that error at once, under a context that never ends.
func TestDialEndsWhenSignalingFails(t *testing.T) {
	sig := failing{rtc.MemorySignalers(2)[0]}
	done := make(chan error, 1)
	go func() {
		tr, err := rtc.Dial(context.Background(), rtc.Config{Machine: 0, Machines: 2, Loopback: true}, sig)
		if tr != nil {
			tr.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errSignaling) {
			t.Fatalf("Dial = %v, want the signaler's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Dial still waiting 10 s after its signaler failed")
	}
}

var errSignaling = errors.New("signaling server gone")

type failing struct{ rtc.Signaler }

func (failing) Receive(context.Context) (int, string, string, error) { return 0, "", "", errSignaling }

// sink is a UDP socket that counts the STUN binding requests it receives:
// an address a lying peer aims this machine's ICE checks at.
type sink struct {
	conn     *net.UDPConn
	requests atomic.Int64
	first    chan struct{} // closed at the first request
	once     sync.Once
}

// listenSink opens a sink on ip (any port) until the test ends. Every
// request it receives also sends a token on any, if not nil.
func listenSink(t testing.TB, ip string, any chan<- string) *sink {
	t.Helper()
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{conn: conn, first: make(chan struct{})}
	done := make(chan struct{})
	t.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			// A STUN binding request: type 0x0001, then the magic cookie.
			if n >= 20 && buf[0] == 0 && buf[1] == 1 && binary.BigEndian.Uint32(buf[4:8]) == 0x2112A442 {
				s.requests.Add(1)
				s.once.Do(func() { close(s.first) })
				if any != nil {
					select {
					case any <- ip:
					default:
					}
				}
			}
		}
	}()
	return s
}

// line is a host candidate at the sink's address, as in an SDP line
// (without "a=").
func (s *sink) line() string {
	a := s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	return fmt.Sprintf("candidate:1 1 udp 2130706431 %s %d typ host", a.Addr(), a.Port())
}

// signal is the sink's candidate as a candidate signal's data.
func (s *sink) signal() string { return candidateSignal(s.line()) }

func candidateSignal(line string) string {
	b, _ := json.Marshal(map[string]any{"candidate": line, "sdpMid": "0", "sdpMLineIndex": 0})
	return string(b)
}

// lying is a machine's signaler with what a lying peer adds: extra
// candidate signals from that peer, before anything else arrives or (with
// after) once the peer's first candidate of its own has, and extra
// candidate lines in its offer or answer. It counts the peer's own
// candidate signals it delivers. Only Dial's signal loop calls Receive.
type lying struct {
	rtc.Signaler
	from  int
	extra []string // candidate signals' data
	after bool
	lines []string // SDP candidate lines, without "a="
	real  atomic.Int64
}

func (s *lying) Receive(ctx context.Context) (int, string, string, error) {
	if len(s.extra) > 0 && (!s.after || s.real.Load() > 0) {
		d := s.extra[0]
		s.extra = s.extra[1:]
		return s.from, rtc.KindCandidate, d, nil
	}
	from, kind, data, err := s.Signaler.Receive(ctx)
	if err == nil && from == s.from {
		switch kind {
		case rtc.KindCandidate:
			s.real.Add(1)
		case rtc.KindOffer, rtc.KindAnswer:
			for _, l := range s.lines {
				data += "a=" + l + "\r\n" // the last (only) media section's
			}
		}
	}
	return from, kind, data, err
}

// holding is a machine's signaler that sends the candidates it is given
// only once release is closed (or Dial has ended), so that ICE checks no
// pair of the machines' own addresses before then.
type holding struct {
	rtc.Signaler
	release <-chan struct{}
}

func (s holding) Send(ctx context.Context, to int, kind, data string) error {
	if kind != rtc.KindCandidate {
		return s.Signaler.Send(ctx, to, kind, data)
	}
	go func() {
		select {
		case <-s.release:
			s.Signaler.Send(ctx, to, kind, data)
		case <-ctx.Done():
		}
	}()
	return nil
}

// dialPair dials machines 0 and 1 with configs c (Machine and Machines
// set here) and signalers sigs, and fails the test unless both connect
// and a datagram crosses each way.
func dialPair(t testing.TB, c [2]rtc.Config, sigs [2]rtc.Signaler) [2]*rtc.Transport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var trs [2]*rtc.Transport
	var errs [2]error
	var wg sync.WaitGroup
	for m := range 2 {
		c[m].Machine, c[m].Machines = m, 2
		wg.Go(func() { trs[m], errs[m] = rtc.Dial(ctx, c[m], sigs[m]) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, tr := range trs {
			if tr != nil {
				tr.Close()
			}
		}
	})
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	for m, tr := range trs {
		if err := tr.Send(0, []byte{byte(m)}); err != nil {
			t.Fatal(err)
		}
	}
	for m, tr := range trs {
		if got := receive(t, tr, 1); len(got[0]) != 1 || got[0][0][0] != byte(1-m) {
			t.Fatalf("machine %d received %v", m, got)
		}
	}
	return trs
}

// TestLyingCandidatesRefused: machine 1 lies to machine 0 about its
// candidates (ten made-up loopback addresses, five trickled and five in
// its answer), aiming machine 0's ICE checks at UDP sockets the test
// listens on. With AllowCandidates narrowed to the real 127.0.0.1/32 (and
// a decoy the test also allows), the made-up candidates draw no STUN
// request, are counted as refused, and the match connects. Before the
// policy, every made-up address drew binding requests (20 to 62 in 0.2 s).
//
// The decoy shows that the candidates ICE was given have been checked
// before the test looks: the machines' own candidates are held until the
// decoy draws a request (a connected pair would end the checks of the
// others), and ICE checks its pairs in the order it was given them, the
// decoy's last.
func TestLyingCandidatesRefused(t *testing.T) {
	aimed := make(chan string, 1)
	var fakes []*sink
	for i := range 10 {
		fakes = append(fakes, listenSink(t, fmt.Sprintf("127.0.0.%d", 2+i), aimed))
	}
	decoy := listenSink(t, "127.0.0.12", nil)
	release := make(chan struct{})
	go func() {
		select {
		case <-decoy.first:
		case <-time.After(10 * time.Second): // then the test fails below
		}
		close(release)
	}()
	sigs := rtc.MemorySignalers(2)
	liar := &lying{Signaler: holding{sigs[0], release}, from: 1}
	for _, f := range fakes[:5] {
		liar.extra = append(liar.extra, f.signal())
	}
	for _, f := range fakes[5:] {
		liar.lines = append(liar.lines, f.line())
	}
	liar.extra = append(liar.extra, decoy.signal())
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("127.0.0.12/32")}
	trs := dialPair(t, [2]rtc.Config{{Loopback: true, AllowCandidates: allow}, {Loopback: true}},
		[2]rtc.Signaler{liar, holding{sigs[1], release}})
	if decoy.requests.Load() == 0 {
		t.Fatal("the allowed decoy candidate drew no binding request")
	}
	// Anything aimed at a fake was sent before the decoy's first request;
	// 300 ms lets its reader see it.
	select {
	case ip := <-aimed:
		t.Errorf("a made-up candidate at %s drew a binding request", ip)
	case <-time.After(300 * time.Millisecond):
	}
	var drawn []int64
	for _, f := range fakes {
		drawn = append(drawn, f.requests.Load())
	}
	t.Logf("binding requests at the made-up addresses: %v; at the decoy: %d", drawn, decoy.requests.Load())
	if st := trs[0].Stats(); st.CandidatesRefused != 10 || st.CandidatesExcess != 0 || st.Malformed != 0 {
		t.Errorf("machine 0's stats %+v, want 10 candidates refused and nothing else", st)
	}
	if st := trs[1].Stats(); st != (rtc.Stats{}) {
		t.Errorf("machine 1's stats %+v, want none", st)
	}
}

// TestCandidateBound: a peer that sends more candidates than
// MaxCandidates (after its first real one, all of an allowed class) has
// the rest dropped and counted, and the match connects.
func TestCandidateBound(t *testing.T) {
	const flood = rtc.MaxCandidates + 8
	sigs := rtc.MemorySignalers(2)
	liar := &lying{Signaler: sigs[0], from: 1, after: true}
	for i := range flood {
		liar.extra = append(liar.extra, listenSink(t, fmt.Sprintf("127.0.1.%d", 1+i), nil).signal())
	}
	trs := dialPair(t, [2]rtc.Config{{Loopback: true}, {Loopback: true}}, [2]rtc.Signaler{liar, sigs[1]})
	if len(liar.extra) > 0 {
		t.Fatalf("connected with %d of the flood's candidates not yet delivered", len(liar.extra))
	}
	real := liar.real.Load()
	st := trs[0].Stats()
	t.Logf("machine 1 sent %d candidates of its own; machine 0's stats %+v", real, st)
	if want := flood + real - rtc.MaxCandidates; st.CandidatesExcess != want || st.CandidatesRefused != 0 || st.Malformed != 0 {
		t.Errorf("machine 0's stats %+v, want %d candidates past the bound and nothing else", st, want)
	}
}
