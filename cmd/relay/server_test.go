package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/relay"
)

// testServer is a server whose writes land in sent and whose clock is
// now: the tests drive it by calls, with no socket and no goroutine.
type testServer struct {
	*server
	mu   sync.Mutex // guards sent
	now  time.Time
	sent []packet
	logs bytes.Buffer
}

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func newTestServer(t *testing.T, cfg serverConfig) *testServer {
	ts := &testServer{now: t0}
	ts.server = newServer(cfg, slog.New(slog.NewTextHandler(&ts.logs, nil)), func(_ int, ps []packet) {
		ts.mu.Lock() // the writers run at once
		defer ts.mu.Unlock()
		for _, p := range ps {
			ts.sent = append(ts.sent, packet{to: p.to, ua: p.ua, b: append([]byte(nil), p.b...)})
		}
	})
	ts.clock = func() time.Time { return ts.now }
	return ts
}

// advance moves the clock on by d and ticks.
func (ts *testServer) advance(d time.Duration) {
	ts.now = ts.now.Add(d)
	ts.tick(ts.now)
}

func (ts *testServer) from(a netip.AddrPort, b []byte) {
	ts.receive([][]byte{b}, []netip.AddrPort{a})
}

// addrs are n machines' addresses, on 10.0.0.ip from port 7000.
func addrs(ip byte, n int) []netip.AddrPort {
	var out []netip.AddrPort
	for i := range n {
		out = append(out, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, ip}), uint16(7000+i)))
	}
	return out
}

// capture is a relay.Link that keeps the last datagram it was sent, and
// hands over in what it was given.
type capture struct {
	out []byte
	in  [][]byte
}

func (c *capture) Send(_ int, b []byte) error { c.out = append([]byte(nil), b...); return nil }
func (c *capture) Receive(buf []byte) (n, peer int, ok bool) {
	if len(c.in) == 0 {
		return 0, 0, false
	}
	n, c.in = copy(buf, c.in[0]), c.in[1:]
	return n, 0, true
}

// envelope is what a relay.Client of slot self among machines sends for
// datagrams to its session's peers (by peer index).
func envelope(t testing.TB, self, machines int, dgs map[int][]byte) []byte {
	var c capture
	cl, err := relay.NewClient(&c, 0, self, machines)
	require.NoError(t, err)
	for peer := range machines - 1 {
		if d, ok := dgs[peer]; ok {
			require.NoError(t, cl.Send(peer, d))
		}
	}
	require.NoError(t, cl.Flush())
	return c.out
}

// opened reads the datagrams a relay.Client of slot self gets from the
// envelopes in sent to addr, by its session's peer index.
func (ts *testServer) opened(t *testing.T, addr netip.AddrPort, self, machines int) map[int][][]byte {
	c := &capture{}
	for _, p := range ts.sent {
		if p.to == addr {
			require.Equal(t, addr, p.ua.AddrPort(), "the batched address")
			c.in = append(c.in, p.b)
		}
	}
	cl, err := relay.NewClient(c, 0, self, machines)
	require.NoError(t, err)
	got := map[int][][]byte{}
	buf := make([]byte, relay.MaxDatagram)
	for {
		n, peer, ok := cl.Receive(buf)
		if !ok {
			break
		}
		got[peer] = append(got[peer], append([]byte(nil), buf[:n]...))
	}
	require.Zero(t, cl.Stats().Dropped)
	return got
}

// TestRoute: two matches on one server, each machine's datagrams reach
// its own match's peers only, gathered into one envelope each a tick, and
// nothing goes before the tick.
func TestRoute(t *testing.T) {
	ts := newTestServer(t, defaultServerConfig())
	a, b := addrs(1, 3), addrs(2, 2)
	ida, err := ts.open(append([]netip.AddrPort(nil), a...), false)
	require.NoError(t, err)
	_, err = ts.open(append([]netip.AddrPort(nil), b...), false)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{32}$`, ida)
	ts.advance(time.Millisecond) // the relays begin
	// Slot 0 of match a sends its two peers (slots 1 and 2) a datagram
	// each; slot 1 sends slot 0 one; match b's slot 1 sends its slot 0.
	ts.from(a[0], envelope(t, 0, 3, map[int][]byte{0: []byte("a0 to a1"), 1: []byte("a0 to a2")}))
	ts.from(a[1], envelope(t, 1, 3, map[int][]byte{0: []byte("a1 to a0")}))
	ts.from(b[1], envelope(t, 1, 2, map[int][]byte{0: []byte("b1 to b0")}))
	require.Empty(t, ts.server.pending, "nothing before the tick")
	require.Empty(t, ts.sent)
	ts.advance(time.Second / 60)
	require.Len(t, ts.sent, 4, "one envelope per machine that has something")
	require.Equal(t, map[int][][]byte{0: {[]byte("a0 to a1")}}, ts.opened(t, a[1], 1, 3))
	require.Equal(t, map[int][][]byte{0: {[]byte("a0 to a2")}}, ts.opened(t, a[2], 2, 3))
	require.Equal(t, map[int][][]byte{0: {[]byte("a1 to a0")}}, ts.opened(t, a[0], 0, 3))
	require.Equal(t, map[int][][]byte{0: {[]byte("b1 to b0")}}, ts.opened(t, b[0], 0, 2))
	ts.sent = nil
	ts.advance(time.Second / 60)
	require.Empty(t, ts.sent, "nothing gathered, nothing sent")
	sn := ts.snapshot()
	require.Equal(t, int64(3), sn.stats.EnvelopesIn)
	require.Equal(t, int64(4), sn.stats.Forwarded)
	require.Equal(t, int64(2), sn.open)
	require.Contains(t, ts.logs.String(), "msg=\"match opened\" id="+ida+" machines=3")
}

// TestExpire: a match closes when none of its machines sent anything for
// Idle, or at MaxLife however busy; a static one never; an admin close at
// once. Each frees its addresses.
func TestExpire(t *testing.T) {
	cfg := defaultServerConfig()
	cfg.Idle, cfg.MaxLife = 30*time.Second, time.Hour
	ts := newTestServer(t, cfg)
	// A datagram before the first tick keeps its match as new as its opening.
	early := addrs(5, 2)
	_, err := ts.open(early, false)
	require.NoError(t, err)
	ts.from(early[0], envelope(t, 0, 2, map[int][]byte{0: []byte("early")}))
	ts.advance(time.Millisecond)
	require.Len(t, ts.list, 1, "not idle since the zero time")
	require.NoError(t, ts.close(ts.list[0].id))
	quiet, busy, static, deleted := addrs(1, 2), addrs(2, 2), addrs(3, 2), addrs(4, 2)
	for _, m := range [][]netip.AddrPort{quiet, busy, static, deleted} {
		_, err := ts.open(m, m[0] == static[0])
		require.NoError(t, err)
	}
	idDeleted := ts.list[3].id
	require.Equal(t, deleted, ts.list[3].machines)
	require.NoError(t, ts.close(idDeleted))
	require.ErrorIs(t, ts.close(idDeleted), errNoMatch)
	ping := [][]byte{envelope(t, 0, 2, map[int][]byte{0: []byte("ping")}), envelope(t, 1, 2, map[int][]byte{0: []byte("pong")})}
	ts.advance(cfg.Idle - time.Second)
	ts.from(quiet[1], ping[1]) // one datagram, then nothing
	ts.from(busy[0], ping[0])
	for range 60 {
		ts.advance(time.Second)
		ts.from(busy[1], ping[1])
	}
	// quiet was last heard 59 s ago; busy a second ago; static never.
	require.Equal(t, int64(1), ts.snapshot().closedBy[closedIdle])
	_, ok := ts.byAddr[quiet[0]]
	require.False(t, ok)
	_, ok = ts.byAddr[busy[0]]
	require.True(t, ok)
	for ts.now.Sub(t0) < cfg.MaxLife-20*time.Second {
		ts.from(busy[0], ping[0])
		ts.advance(20 * time.Second)
	}
	require.Equal(t, int64(0), ts.snapshot().closedBy[closedLifetime], "busy until its lifetime")
	ts.from(busy[0], ping[0])
	ts.advance(20 * time.Second)
	sn := ts.snapshot()
	require.Equal(t, int64(1), sn.closedBy[closedLifetime])
	require.Equal(t, int64(1), sn.closedBy[closedIdle])
	require.Equal(t, int64(2), sn.closedBy[closedDeleted])
	require.Equal(t, int64(1), sn.open, "the static match stays")
	require.Equal(t, static, ts.list[0].machines)
	require.Contains(t, ts.logs.String(), "reason=lifetime")
	require.Contains(t, ts.logs.String(), "reason=idle")
	// The closed matches' addresses are free again.
	_, err = ts.open(append(append([]netip.AddrPort(nil), quiet...), busy...), false)
	require.NoError(t, err)
	ts.stop()
	require.Equal(t, int64(2), ts.snapshot().closedBy[closedStopped])
}

// TestQuota: every refusal is its own *refusal, counted by reason.
func TestQuota(t *testing.T) {
	cfg := defaultServerConfig()
	cfg.MaxMatches, cfg.MaxPerIP = 3, 3
	ts := newTestServer(t, cfg)
	_, err := ts.open(addrs(1, 3), false)
	require.NoError(t, err)
	for _, c := range []struct {
		machines []netip.AddrPort
		want     error
		reason   string
	}{
		{addrs(2, 1), nil, "bad_request"},
		{append(addrs(2, 1), addrs(2, 1)...), nil, "bad_request"},
		{append(addrs(2, 1), netip.MustParseAddrPort("[2001:db8::1]:7000")), nil, "bad_request"},
		{append(addrs(2, 1), netip.MustParseAddrPort("10.0.0.3:0")), nil, "bad_request"},
		{append(addrs(2, 1), netip.MustParseAddrPort("0.0.0.0:7000")), nil, "bad_request"},
		{append(addrs(2, 1), addrs(1, 1)...), errAddressInUse, "address_in_use"},
		{append(addrs(2, 2), netip.MustParseAddrPort("10.0.0.1:9000")), errAddressQuota, "address_quota"},
		{addrs(5, 4), errAddressQuota, "address_quota"},
		// A mapped IPv4 address is the IPv4 one.
		{[]netip.AddrPort{netip.MustParseAddrPort("[::ffff:10.0.0.1]:7000"), netip.MustParseAddrPort("10.0.0.9:1")}, errAddressInUse, "address_in_use"},
	} {
		_, err := ts.open(c.machines, false)
		var r *refusal
		require.ErrorAs(t, err, &r, "%v", c.machines)
		require.Equal(t, c.reason, r.reason, "%v", c.machines)
		if c.want != nil {
			require.ErrorIs(t, err, c.want)
		}
	}
	_, err = ts.open(addrs(2, 3), false)
	require.NoError(t, err)
	_, err = ts.open(addrs(3, 2), false)
	require.NoError(t, err)
	_, err = ts.open(addrs(4, 2), false)
	require.ErrorIs(t, err, errCapacity)
	sn := ts.snapshot()
	require.Equal(t, map[string]int64{"bad_request": 5, "address_in_use": 2, "address_quota": 2, "capacity": 1}, sn.refused)
	require.Equal(t, int64(3), sn.opened)
}

// TestMalformed: what no live match's machine sent, and what a machine
// sent that is no envelope it may send, is counted and goes nowhere; the
// match goes on.
func TestMalformed(t *testing.T) {
	ts := newTestServer(t, defaultServerConfig())
	m := addrs(1, 2)
	_, err := ts.open(m, false)
	require.NoError(t, err)
	ts.advance(time.Millisecond)
	ts.from(addrs(9, 1)[0], envelope(t, 0, 2, map[int][]byte{0: []byte("stranger")}))
	ts.from(m[0], []byte("not an envelope"))
	ts.from(m[0], []byte{0xe1, 0, 1, 'x'}) // to itself
	ts.from(m[0], make([]byte, relay.MaxDatagram+1))
	ts.from(m[1], envelope(t, 1, 2, map[int][]byte{0: []byte("fine")}))
	ts.advance(time.Second / 60)
	require.Len(t, ts.sent, 1)
	require.Equal(t, map[int][][]byte{0: {[]byte("fine")}}, ts.opened(t, m[0], 0, 2))
	sn := ts.snapshot()
	require.Equal(t, int64(1), sn.unknown)
	require.Equal(t, int64(3), sn.stats.Malformed)
	require.Equal(t, int64(1), sn.stats.EnvelopesIn)
}

// TestStaggered: many matches on one tick, past a chunk of tickChunk:
// every machine gets its envelope at the tick.
func TestStaggered(t *testing.T) {
	cfg := defaultServerConfig()
	cfg.MaxPerIP = 1000
	ts := newTestServer(t, cfg)
	const matches = 2*tickChunk + 5
	var all [][]netip.AddrPort
	for i := range matches {
		m := []netip.AddrPort{netip.MustParseAddrPort(fmt.Sprintf("10.1.%d.1:7000", i)), netip.MustParseAddrPort(fmt.Sprintf("10.1.%d.2:7000", i))}
		_, err := ts.open(m, false)
		require.NoError(t, err)
		all = append(all, m)
	}
	ts.advance(time.Millisecond)
	for i, m := range all {
		ts.from(m[0], envelope(t, 0, 2, map[int][]byte{0: fmt.Appendf(nil, "match %d", i)}))
	}
	ts.advance(time.Second / 60)
	require.Len(t, ts.sent, matches)
	for i, m := range all {
		require.Equal(t, map[int][][]byte{0: {fmt.Appendf(nil, "match %d", i)}}, ts.opened(t, m[1], 1, 2))
	}
}

// BenchmarkTick: the server's own work for one tick of 1,000 4-machine
// matches, each machine sending one envelope (a 31-byte datagram to each
// peer, one plain and two reseal records, as relayload's): routing the
// 4,000 envelopes to their relays and flushing the 4,000 replies into the
// write queue. The system calls are not in it (the writes go nowhere).
func BenchmarkTick(b *testing.B) {
	const matches, machines = 1000, 4
	cfg := defaultServerConfig()
	cfg.MaxMatches = matches
	s := newServer(cfg, slog.New(slog.DiscardHandler), func(int, []packet) {})
	now := t0
	s.clock = func() time.Time { return now }
	var from []netip.AddrPort
	var envs [][]byte
	for m := range matches {
		var ms []netip.AddrPort
		for k := range machines {
			ms = append(ms, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(m >> 8), byte(m), byte(k + 1)}), 7000))
			dgs := map[int][]byte{}
			for peer := range machines - 1 {
				d := make([]byte, 31)
				d[0], d[1], d[30] = byte(k), byte(peer), byte(peer)
				dgs[peer] = d
			}
			envs = append(envs, envelope(b, k, machines, dgs))
		}
		if _, err := s.open(ms, false); err != nil {
			b.Fatal(err)
		}
		from = append(from, ms...)
	}
	s.tick(now)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := 0; i < len(envs); i += 64 {
			s.receive(envs[i:min(i+64, len(envs))], from[i:min(i+64, len(from))])
		}
		now = now.Add(cfg.Tick)
		s.tick(now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/matches, "ns/match-tick")
}
