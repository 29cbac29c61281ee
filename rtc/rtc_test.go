package rtc_test

import (
	"bytes"
	"context"
	"errors"
	"net"
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
	for _, c := range []rtc.Config{{Machines: 1}, {Machines: 9}, {Machine: 2, Machines: 2}, {Machine: -1, Machines: 2}} {
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
