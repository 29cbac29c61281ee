package lobby

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rollback"
)

// testConn is a loopback socket that records the read deadline last set
// and can drop datagrams it is asked to send.
type testConn struct {
	net.PacketConn
	drop func(b []byte) bool // if not nil, WriteTo drops the datagrams it returns true for

	mu       sync.Mutex
	deadline time.Time
}

func listen(t *testing.T) *testConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testConn{PacketConn: c}
}

func (c *testConn) WriteTo(b []byte, a net.Addr) (int, error) {
	if c.drop != nil && c.drop(b) {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, a)
}

func (c *testConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.PacketConn.SetReadDeadline(t)
}

func (c *testConn) addr() netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// checkClear fails the test unless the last read deadline set on c was
// none, and c reads a datagram sent to it without one.
func (c *testConn) checkClear(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	d := c.deadline
	c.mu.Unlock()
	if !d.IsZero() {
		t.Fatalf("%v: read deadline left at %v", c.addr(), d)
	}
	if _, err := c.PacketConn.WriteTo([]byte("session"), c.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReadFrom(make([]byte, maxDatagram)); err != nil {
		t.Fatalf("%v: read after the lobby: %v", c.addr(), err)
	}
}

// dropFirst drops the first n datagrams.
func dropFirst(n int) func([]byte) bool {
	return func([]byte) bool {
		n--
		return n >= 0
	}
}

type result struct {
	plan Plan
	err  error
	log  []string // Host's
}

func runHost(ctx context.Context, c *testConn, o HostOptions) <-chan result {
	done := make(chan result, 1)
	go func() {
		var log []string
		o.Log = func(s string) { log = append(log, s) }
		p, err := Host(ctx, c, o)
		done <- result{p, err, log}
	}()
	return done
}

func runJoin(ctx context.Context, c *testConn, to *testConn, humans int) <-chan result {
	done := make(chan result, 1)
	go func() {
		p, err := Join(ctx, c, to.addr(), JoinOptions{Humans: humans})
		done <- result{plan: p, err: err}
	}()
	return done
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkMatch checks the plans of a match: the host's (hc's), and the
// joiners' (joined on jcs, asking for humans[i]).
func checkMatch(t *testing.T, o HostOptions, hc *testConn, hp Plan, jcs []*testConn, humans []int, jps []Plan) {
	t.Helper()
	plans := append([]Plan{hp}, jps...)
	addrs := make([]netip.AddrPort, o.Machines) // every machine's bound address
	addrs[0] = hc.addr()
	for i, p := range plans {
		if err := p.check(); err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
		if i > 0 {
			if p.Machine < 1 || addrs[p.Machine].IsValid() {
				t.Fatalf("joiner %d got machine %d (taken or the host's)", i-1, p.Machine)
			}
			addrs[p.Machine] = jcs[i-1].addr()
			if p.Humans[p.Machine] != humans[i-1] {
				t.Errorf("joiner %d asked for %d humans, got %d", i-1, humans[i-1], p.Humans[p.Machine])
			}
		}
	}
	if hp.Machine != 0 || hp.Machines != o.Machines || hp.Frames != o.Frames || hp.Humans[0] != o.Humans {
		t.Errorf("host plan: machine %d of %d, %d frames, %d humans", hp.Machine, hp.Machines, hp.Frames, hp.Humans[0])
	}
	// Humans are dealt in machine order (a machine without any flies one
	// ship, a bot), then the bots to the host.
	want, next := make([][]rollback.PlayerID, o.Machines), rollback.PlayerID(0)
	for m, h := range hp.Humans {
		for range max(h, 1) {
			want[m] = append(want[m], next)
			next++
		}
	}
	if o.Players != 0 && hp.Players != o.Players || o.Players == 0 && hp.Players != int(next) {
		t.Errorf("%d players, asked for %d, %d humans", hp.Players, o.Players, next)
	}
	for ; int(next) < hp.Players; next++ {
		want[0] = append(want[0], next)
	}
	for i, p := range plans {
		if p.Machines != hp.Machines || p.Players != hp.Players || p.SessionID != hp.SessionID ||
			!bytes.Equal(p.Secret, hp.Secret) || p.Seed != hp.Seed || p.Frames != hp.Frames ||
			p.RoundFrames != o.RoundFrames || p.Target != o.Target ||
			!slices.Equal(p.Humans, hp.Humans) || !slices.EqualFunc(p.Owners, want, slices.Equal) {
			t.Errorf("plan %d disagrees with the host's:\n%+v\n%+v (owners want %v)", i, p, hp, want)
		}
		if !slices.Equal(p.Addrs, addrs) {
			t.Errorf("plan %d: addresses %v, bound %v", i, p.Addrs, addrs)
		}
		peers, peerAddrs := p.Peers(), p.PeerAddrs()
		if len(peers) != o.Machines-1 || len(peerAddrs) != o.Machines-1 {
			t.Fatalf("plan %d: %d peers, %d peer addresses", i, len(peers), len(peerAddrs))
		}
		for k, m := 0, 0; m < o.Machines; m++ {
			if m == p.Machine {
				continue
			}
			if peerAddrs[k] != addrs[m] || !slices.Equal(peers[k], want[m]) {
				t.Errorf("plan %d: peer %d is %v %v, want machine %d's %v %v", i, k, peerAddrs[k], peers[k], m, addrs[m], want[m])
			}
			k++
		}
		if !slices.Equal(p.Local(), want[p.Machine]) {
			t.Errorf("plan %d: local %v, want %v", i, p.Local(), want[p.Machine])
		}
	}
	if hp.SessionID == 0 || len(hp.Secret) != secretSize || bytes.Equal(hp.Secret, make([]byte, secretSize)) {
		t.Errorf("session id %d, secret %x", hp.SessionID, hp.Secret)
	}
}

// match runs a host and joiners (asking for humans[i] each, on jcs) at
// once and checks their plans.
func match(t *testing.T, o HostOptions, hc *testConn, jcs []*testConn, humans []int) (result, []Plan) {
	t.Helper()
	ctx := timeout(t)
	h := runHost(ctx, hc, o)
	var js []<-chan result
	for i, c := range jcs {
		js = append(js, runJoin(ctx, c, hc, humans[i]))
	}
	var plans []Plan
	for i, j := range js {
		r := <-j
		if r.err != nil {
			t.Fatalf("joiner %d: %v", i, r.err)
		}
		plans = append(plans, r.plan)
	}
	hr := <-h
	if hr.err != nil {
		t.Fatalf("host: %v", hr.err)
	}
	checkMatch(t, o, hc, hr.plan, jcs, humans, plans)
	for _, c := range append([]*testConn{hc}, jcs...) {
		c.checkClear(t)
	}
	for _, l := range hr.log {
		if strings.Contains(l, "did not acknowledge") {
			t.Errorf("host log: %q", l)
		}
	}
	return hr, plans
}

func TestOneJoiner(t *testing.T) {
	before := goroutines()
	hc, jc := listen(t), listen(t)
	o := HostOptions{Machines: 2, Humans: 2, Frames: 600}
	hr, _ := match(t, o, hc, []*testConn{jc}, []int{1})
	if hr.plan.Players != 3 {
		t.Errorf("Players 0: %d players, want one for each of 3 humans", hr.plan.Players)
	}
	if !slices.Contains(hr.log, "machine 1 is ready") {
		t.Errorf("host log %q", hr.log)
	}
	if after := goroutines(); len(after) > len(before) {
		t.Errorf("%d goroutines before the lobby, %d after:\n%s", len(before), len(after), strings.Join(after, "\n\n"))
	}
}

// goroutines returns the stacks of the goroutines running, but for those
// runHost and runJoin started, which may still be exiting.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	var gs []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "created by github.com/rewindgg/rewind/cmd/arena/internal/lobby.run") {
			gs = append(gs, g)
		}
	}
	return gs
}

// TestBotsOnly: machines without people (humans 0) fly one ship each, a
// bot; the host's bots fill the rest.
func TestBotsOnly(t *testing.T) {
	hc, jc := listen(t), listen(t)
	o := HostOptions{Machines: 2, Players: 4, Humans: 0, Frames: 60}
	hr, plans := match(t, o, hc, []*testConn{jc}, []int{0})
	if !slices.Equal(hr.plan.Owners[0], []rollback.PlayerID{0, 2, 3}) || !slices.Equal(plans[0].Local(), []rollback.PlayerID{1}) {
		t.Errorf("owners %v", hr.plan.Owners)
	}
	if !slices.Equal(hr.plan.Humans, []int{0, 0}) {
		t.Errorf("humans %v", hr.plan.Humans)
	}
}

func TestThreeJoiners(t *testing.T) {
	hc := listen(t)
	jcs := []*testConn{listen(t), listen(t), listen(t)}
	o := HostOptions{Machines: 4, Players: 8, Humans: 1, Frames: 3600, RoundFrames: 900, Target: 12}
	hr, _ := match(t, o, hc, jcs, []int{2, 1, 1})
	if got := len(hr.plan.Owners[0]); got != 4 {
		t.Errorf("the host has %d players, want its human and the 3 bots", got)
	}
}

func TestLoss(t *testing.T) {
	isAck := func(b []byte) bool { return len(b) > header && b[header-1] == kindAck }
	for _, tc := range []struct {
		name       string
		host, join func() func([]byte) bool
	}{
		{"first 3 each way", func() func([]byte) bool { return dropFirst(3) }, func() func([]byte) bool { return dropFirst(3) }},
		{"first 2 acks", func() func([]byte) bool { return nil }, func() func([]byte) bool {
			acks := 0
			return func(b []byte) bool {
				if isAck(b) {
					acks++
				}
				return isAck(b) && acks <= 2
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := listen(t)
			hc.drop = tc.host()
			jcs := []*testConn{listen(t), listen(t)}
			for _, c := range jcs {
				c.drop = tc.join()
			}
			hr, _ := match(t, HostOptions{Machines: 3, Players: 4, Humans: 1}, hc, jcs, []int{1, 2})
			for m := 1; m <= 2; m++ {
				if !slices.Contains(hr.log, fmt.Sprintf("machine %d is ready", m)) {
					t.Errorf("machine %d never acknowledged: %q", m, hr.log)
				}
			}
		})
	}
}

func TestGarbage(t *testing.T) {
	hc, jc, stranger := listen(t), listen(t), listen(t)
	plan := message{kind: kindPlan, nonce: 1, plan: Plan{Machine: 1, Machines: 2, Players: 2,
		Owners: [][]rollback.PlayerID{{0}, {1}}, Humans: []int{1, 1},
		Addrs:     []netip.AddrPort{hc.addr(), jc.addr()},
		SessionID: 7, Secret: make([]byte, secretSize)}}.append(nil)
	junk := [][]byte{
		{},
		[]byte("\x9b\x07random bytes\x00\xff"),
		[]byte("RWLX\x01\x01\x00\x00\x00\x00\x00\x00\x00\x01\x01"), // a hello with a wrong magic
		[]byte("RWLB\x09\x01\x00\x00\x00\x00\x00\x00\x00\x01\x01"), // a hello of another version
		[]byte("RWLB\x02\x01\x00\x00\x00\x00\x00\x00\x00\x01"),     // a truncated hello
		[]byte("RWLB\x02\x01\x00\x00\x00\x00\x00\x00\x00\x01\x03"), // three humans
		plan[:len(plan)-1], // a truncated plan
		plan,               // a plan for another hello
		message{kind: kindFull, nonce: 1}.append(nil),
		message{kind: kindAck, nonce: 1}.append(nil),
	}
	// The junk is waiting before the lobby starts, from the addresses the
	// lobby listens to: the joiner's to the host, the host's to the joiner.
	for _, b := range junk {
		for _, w := range []struct{ from, to *testConn }{{jc, hc}, {stranger, hc}, {hc, jc}, {stranger, jc}} {
			if _, err := w.from.WriteTo(b, w.to.LocalAddr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	match(t, HostOptions{Machines: 2, Humans: 1}, hc, []*testConn{jc}, []int{1})
}

func TestFull(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     HostOptions
		early int   // joiners of one human each admitted before the one turned away
		ok    []int // humans of the joiners admitted after it
	}{
		{"no ship for a second human", HostOptions{Machines: 2, Players: 2, Humans: 1}, 0, []int{1}},
		// 1+2 humans fit 3 ships, but the third machine needs one.
		{"a ship kept for each machine to come", HostOptions{Machines: 3, Players: 3, Humans: 1}, 0, []int{1, 1}},
		{"no bots: 8 ships at most", HostOptions{Machines: 7, Humans: 2}, 5, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t)
			hc := listen(t)
			h := runHost(ctx, hc, tc.o)
			// The early joiners' hellos are waiting before the late one's:
			// they say hello by hand, as Join would return only once every
			// machine has joined.
			var early []*testConn
			for range tc.early {
				c := listen(t)
				hello := message{kind: kindHello, nonce: random(), humans: 1}.append(nil)
				if _, err := c.WriteTo(hello, hc.LocalAddr()); err != nil {
					t.Fatal(err)
				}
				early = append(early, c)
			}
			late := listen(t)
			if r := <-runJoin(ctx, late, hc, 2); !errors.Is(r.err, ErrFull) {
				t.Fatalf("2 humans: %v, want ErrFull", r.err)
			}
			late.checkClear(t)
			var js []<-chan result
			for _, humans := range tc.ok {
				js = append(js, runJoin(ctx, listen(t), hc, humans))
			}
			for _, c := range early {
				ackPlan(t, c)
			}
			for i, j := range js {
				if r := <-j; r.err != nil {
					t.Fatalf("joiner %d: %v", i, r.err)
				}
			}
			hr := <-h
			if hr.err != nil {
				t.Fatal(hr.err)
			}
			if !slices.ContainsFunc(hr.log, func(s string) bool { return strings.Contains(s, "full") }) ||
				slices.ContainsFunc(hr.log, func(s string) bool { return strings.Contains(s, "did not acknowledge") }) {
				t.Errorf("host log %q", hr.log)
			}
		})
	}
}

// ackPlan reads the plan the host sends to c and acknowledges it, as Join
// would.
func ackPlan(t *testing.T, c *testConn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := parse(buf[:n]); err == nil && m.kind == kindPlan {
			if _, err := c.WriteTo(message{kind: kindAck, nonce: m.nonce}.append(nil), from); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

func TestNobody(t *testing.T) {
	hc, silent := listen(t), listen(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Host(ctx, hc, HostOptions{Machines: 2, Humans: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Host: %v, want the deadline", err)
	}
	hc.checkClear(t)
	jc := listen(t)
	if _, err := Join(ctx, jc, silent.addr(), JoinOptions{Humans: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Join: %v, want the deadline", err)
	}
	jc.checkClear(t)

	// A context cancelled, without a deadline to read up to.
	ctx, cancel = context.WithCancel(context.Background())
	stop := time.AfterFunc(150*time.Millisecond, cancel)
	defer stop.Stop()
	start := time.Now()
	if _, err := Host(ctx, hc, HostOptions{Machines: 2, Humans: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Host: %v, want cancelled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Host took %v to notice the cancellation", d)
	}
	hc.checkClear(t)
}

func TestOptions(t *testing.T) {
	c := listen(t)
	// Invalid options fail at once; the deadline only keeps a regression
	// from waiting for joiners for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, o := range []HostOptions{
		{Machines: 1, Humans: 1},
		{Machines: 9, Humans: 1},
		{Machines: 2, Humans: -1},
		{Machines: 2, Humans: 3},
		{Machines: 2, Humans: 1, Players: 9},
		{Machines: 3, Humans: 2, Players: 3}, // 2 humans and 2 joiners: 4 ships at least
		{Machines: 8, Humans: 2},             // 9 humans at least
		{Machines: 2, Humans: 1, Frames: -1},
	} {
		if _, err := Host(ctx, c, o); err == nil {
			t.Errorf("Host %+v: no error", o)
		}
	}
	for _, humans := range []int{-1, 3} {
		if _, err := Join(ctx, c, c.addr(), JoinOptions{Humans: humans}); err == nil {
			t.Errorf("Join with %d humans: no error", humans)
		}
	}
	if _, err := Join(ctx, c, netip.AddrPort{}, JoinOptions{Humans: 1}); err == nil {
		t.Error("Join with no host address: no error")
	}
}

// TestSettingsRefused: a joiner that wants other settings than the
// host's (the ones it was given) is turned away with the host's, which
// its error holds; one that wants the same, or wants none, joins.
func TestSettingsRefused(t *testing.T) {
	ctx := timeout(t)
	hc, bad, same, other := listen(t), listen(t), listen(t), listen(t)
	o := HostOptions{Machines: 3, Humans: 1, Frames: 1200, RoundFrames: 600, Target: 10}
	h := runHost(ctx, hc, o)
	_, err := Join(ctx, bad, hc.addr(), JoinOptions{Humans: 1, Settings: Settings{Frames: 600, RoundFrames: 600, Target: 3},
		Wants: Wants{Frames: true, RoundFrames: true}})
	var se *SettingsError
	if !errors.As(err, &se) || se.Host != (Settings{1200, 600, 10}) || se.Wanted.Frames != 600 || !se.Wants.Frames {
		t.Fatalf("a joiner wanting 600 frames of a 1200-frame match: %v", err)
	}
	j1 := runJoin(ctx, other, hc, 1)
	j2 := make(chan result, 1)
	go func() {
		p, err := Join(ctx, same, hc.addr(), JoinOptions{Humans: 0, Settings: Settings{Frames: 1200, Target: 3}, Wants: Wants{Frames: true}})
		j2 <- result{plan: p, err: err}
	}()
	for i, j := range []<-chan result{j1, j2} {
		if r := <-j; r.err != nil || r.plan.Settings() != (Settings{1200, 600, 10}) {
			t.Errorf("joiner %d: %v, settings %+v", i, r.err, r.plan.Settings())
		}
	}
	hr := <-h
	if hr.err != nil {
		t.Fatal(hr.err)
	}
	found := false
	for _, l := range hr.log {
		found = found || strings.Contains(l, "wants other settings")
	}
	if !found {
		t.Errorf("the host's log does not say it turned a joiner away: %q", hr.log)
	}
}
