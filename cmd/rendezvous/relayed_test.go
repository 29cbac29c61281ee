package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	harness "github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rtc"
	"github.com/rewindgg/rewind/rtc/lobby"
)

const testRelayToken = "relay-token-for-tests"

var (
	relayBinOnce sync.Once
	relayBin     string
	relayBinErr  error
)

// matchRelayBinary is cmd/relay's binary: $REWIND_RELAY, or built once
// from ../relay into a directory of the test run's.
func matchRelayBinary(t *testing.T) string {
	if b := os.Getenv("REWIND_RELAY"); b != "" {
		return b
	}
	relayBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rewind-relay-")
		if err != nil {
			relayBinErr = err
			return
		}
		relayBin = filepath.Join(dir, "relay")
		cmd := exec.Command("go", "build", "-o", relayBin, ".")
		cmd.Dir = "../relay"
		if out, err := cmd.CombinedOutput(); err != nil {
			relayBinErr = fmt.Errorf("go build ../relay: %v\n%s", err, out)
		}
	})
	if relayBinErr != nil {
		t.Fatal(relayBinErr)
	}
	return relayBin
}

// startMatchRelay runs cmd/relay on loopback (its admin call too),
// announcing itself to the rendezvous at base every 200 ms, and returns
// once the rendezvous s knows it: its announcement.
func startMatchRelay(t *testing.T, s *server, base string) relayInfo {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(testRelayToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(matchRelayBinary(t), "-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-webrtc", "127.0.0.1:0",
		"-webrtc-loopback", "-token-file", tokenFile, "-announce", base, "-announce-every", "200ms", "-stats", "0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case logs <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			for len(logs) > 0 {
				t.Log("relay: " + <-logs)
			}
		}
	})
	// The relay logs each announcement the rendezvous took (204): wait
	// for the first, then the rendezvous knows it.
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-logs:
			if !strings.Contains(line, "msg=announce") || !strings.Contains(line, "ok=true") {
				continue
			}
			live, err := s.reg.liveRelays()
			if err != nil || len(live) != 1 {
				t.Fatalf("the relay announced itself, and the rendezvous knows %d relays (%v)", len(live), err)
			}
			return live[0]
		case <-timeout:
			t.Fatal("the relay did not announce itself")
		}
	}
}

// relayedConfig is a test server that places relayed matches.
func relayedConfig() config {
	cfg := testConfig(newFakeClock())
	cfg.Now = time.Now // announcements expire on the real clock
	cfg.RelayToken = testRelayToken
	return cfg
}

// heard is one signal a seat received.
type heard struct {
	from       int
	kind, data string
}

// recordingSignaler is a seat's lobby client that keeps every signal the
// seat receives.
type recordingSignaler struct {
	*lobby.Client
	mu  sync.Mutex
	got []heard
}

func (r *recordingSignaler) Receive(ctx context.Context) (int, string, string, error) {
	from, kind, data, err := r.Client.Receive(ctx)
	if err == nil {
		r.mu.Lock()
		r.got = append(r.got, heard{from, kind, data})
		r.mu.Unlock()
	}
	return from, kind, data, err
}

// recordingConn is a machine's one UDP socket (rtc.Config.Conn), keeping
// the source address of every datagram it reads.
type recordingConn struct {
	net.PacketConn
	mu   sync.Mutex
	from map[netip.AddrPort]int
}

func (c *recordingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if ua, ok := a.(*net.UDPAddr); ok && err == nil {
		ap := ua.AddrPort()
		c.mu.Lock()
		c.from[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())]++
		c.mu.Unlock()
	}
	return n, a, err
}

func (c *recordingConn) sources() map[netip.AddrPort]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyCounts(c.from)
}

func copyCounts(m map[netip.AddrPort]int) map[netip.AddrPort]int {
	out := make(map[netip.AddrPort]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// candidateAddrs are the addresses an SDP or a trickled candidate (its
// JSON) names: each candidate's connection address and related address.
func candidateAddrs(t *testing.T, kind, data string) []netip.AddrPort {
	t.Helper()
	var lines []string
	if kind == lobby.KindCandidate {
		var c struct {
			Candidate string `json:"candidate"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("a candidate that is not JSON: %q", data)
		}
		lines = []string{c.Candidate}
	} else {
		for l := range strings.SplitSeq(data, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "a=candidate:") {
				lines = append(lines, strings.TrimPrefix(l, "a="))
			}
		}
	}
	var out []netip.AddrPort
	for _, l := range lines {
		f := strings.Fields(strings.TrimPrefix(l, "candidate:"))
		if len(f) < 6 {
			continue
		}
		add := func(host, port string) {
			a, err1 := netip.ParseAddr(host)
			p, err2 := strconv.Atoi(port)
			if err1 != nil || err2 != nil {
				t.Fatalf("candidate %q: an address that is no IP address and port", l)
			}
			out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(p)))
		}
		add(f[4], f[5])
		for i := 6; i+1 < len(f); i += 2 {
			if f[i] == "raddr" && i+3 < len(f) && f[i+2] == "rport" {
				add(f[i+1], f[i+3])
			}
		}
	}
	return out
}

// TestRelayedLobby: a relayed match end to end. The rendezvous and a
// relay (cmd/relay, announcing itself) on loopback; three native machines
// create and join a relayed lobby, each connects with one peer connection
// to the relay the rendezvous placed the match on (rtc.DialRelay over the
// lobby's signaling), and they play a match over relay.Clients to the
// end, verified against the offline re-simulation. And no machine learns
// another's address: every signal each seat received came from the relay
// and names only the relay's address, and every datagram each machine's
// socket read came from the relay's.
func TestRelayedLobby(t *testing.T) {
	const machines = 3
	s, base := start(t, relayedConfig())
	info := startMatchRelay(t, s, base)
	relayAt, err := netip.ParseAddrPort(info.WebRTC)
	if err != nil {
		t.Fatalf("the relay announced WebRTC address %q: %v", info.WebRTC, err)
	}
	ctx := testCtx(t, 30*time.Second)
	clients := fullMatchWith(t, ctx, base, machines, &lobby.Options{Relayed: true})
	sigs, conns, ports := recorders(t, clients) // ports: each machine's own address
	rtcs := make([]*rtc.Transport, machines)
	errs := make([]error, machines)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			m, err := c.Wait(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			if !m.Relayed {
				errs[i] = fmt.Errorf("seat %d: the full match is not relayed: %+v", i, m)
				return
			}
			rtcs[i], errs[i] = rtc.DialRelay(ctx, rtc.Config{Machine: c.Seat(), Machines: m.Seats, ICEServers: m.ICEServers,
				Loopback: true, Conn: conns[i]}, sigs[i])
		})
	}
	wg.Wait()
	for _, tr := range rtcs {
		if tr != nil {
			t.Cleanup(func() { _ = tr.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	trs := make([]rollback.Transport, machines)
	for i, tr := range rtcs {
		if r := tr.Route(0); r != "host-host" {
			t.Errorf("machine %d's route to the relay: %q", i, r)
		}
		if trs[i], err = relay.NewClient(tr, 0, i, machines); err != nil {
			t.Fatal(err)
		}
	}
	r := harness.RunLive(harness.Config{Players: machines, Frames: 300, Seed: 11, Relay: true}, harness.UDPOptions{}, trs)
	if r.Err != nil || !r.Completed || !r.Verified {
		t.Fatalf("relayed match: err %v, completed %v, verified %v (%s)", r.Err, r.Completed, r.Verified, r.Desync)
	}
	for i, tr := range trs {
		if st := tr.(*relay.Client).Stats(); st.EnvelopesIn == 0 || st.Dropped != 0 {
			t.Errorf("machine %d's relay client: %+v", i, st)
		}
	}

	// What each machine learned of the others: nothing.
	for _, leak := range addressLeaks(t, sigs, conns, ports, relayAt) {
		t.Error(leak)
	}
	for i := range machines {
		t.Logf("seat %d: %d signals, all from the relay; its socket read %v", i, len(sigs[i].heard()), conns[i].sources())
	}
}

func (r *recordingSignaler) heard() []heard {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// addressLeaks lists every way a machine learned another's address: a
// signal from anyone but the relay (party len(sigs)), an address in a
// signal that is a machine's own (own) or not the relay's, a datagram its
// socket read from an address not the relay's. A machine that received
// no candidate, or read nothing, is listed too: the check would be empty.
func addressLeaks(t *testing.T, sigs []*recordingSignaler, conns []*recordingConn, own map[netip.AddrPort]int, relayAt netip.AddrPort) []string {
	var leaks []string
	machines := len(sigs)
	for i := range machines {
		named := 0
		for _, h := range sigs[i].heard() {
			if h.from != machines {
				leaks = append(leaks, fmt.Sprintf("seat %d received a %s from seat %d, not the relay (party %d)", i, h.kind, h.from, machines))
			}
			for _, a := range candidateAddrs(t, h.kind, h.data) {
				named++
				if m, ok := own[a]; ok {
					leaks = append(leaks, fmt.Sprintf("seat %d received machine %d's address %v in a %s", i, m, a, h.kind))
				} else if a != relayAt && !a.Addr().IsUnspecified() {
					leaks = append(leaks, fmt.Sprintf("seat %d received address %v in a %s: not the relay's %v", i, a, h.kind, relayAt))
				}
			}
		}
		if named == 0 {
			leaks = append(leaks, fmt.Sprintf("seat %d received no candidate at all", i))
		}
		src := conns[i].sources()
		if len(src) == 0 {
			leaks = append(leaks, fmt.Sprintf("machine %d's socket read nothing", i))
		}
		for a, n := range src {
			if a != relayAt {
				leaks = append(leaks, fmt.Sprintf("machine %d's socket read %d datagrams from %v, not the relay's %v", i, n, a, relayAt))
			}
		}
	}
	return leaks
}

// TestAddressLeaksMesh is addressLeaks' control: three machines of a
// lobby that is not relayed, connected in a full mesh (rtc.Dial) with the
// same recording signalers and sockets, learn each other's addresses, and
// addressLeaks names them (with no relay address allowed).
func TestAddressLeaksMesh(t *testing.T) {
	const machines = 3
	_, base := start(t, testConfig(newFakeClock()))
	ctx := testCtx(t, 20*time.Second)
	sigs, conns, own := recorders(t, fullMatch(t, ctx, base, machines))
	errs := make([]error, machines)
	var wg sync.WaitGroup
	for i := range machines {
		wg.Go(func() {
			m, err := sigs[i].Wait(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			tr, err := rtc.Dial(ctx, rtc.Config{Machine: i, Machines: m.Seats, Loopback: true, Conn: conns[i]}, sigs[i])
			if err == nil { // its socket has read the ICE checks and DTLS of every peer
				t.Cleanup(func() { _ = tr.Close() })
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	leaks := addressLeaks(t, sigs, conns, own, netip.AddrPort{})
	for a, m := range own {
		for i := range machines {
			if m == i {
				continue
			}
			// In a signal (a candidate may also come after the
			// connection, found by ICE's checks), or on the socket.
			inSignal := fmt.Sprintf("seat %d received machine %d's address", i, m)
			onSocket := fmt.Sprintf("machine %d's socket read", i)
			if !slices.ContainsFunc(leaks, func(l string) bool {
				return strings.HasPrefix(l, inSignal) || strings.HasPrefix(l, onSocket) && strings.Contains(l, " from "+a.String()+",")
			}) {
				t.Errorf("addressLeaks did not name that machine %d learned machine %d's address %v (it named %q)", i, m, a, leaks)
			}
		}
	}
}

// TestRelayedLobbyRefusals: in a relayed lobby a seat cannot signal
// another seat (403); a relayed lobby on a server without relays is
// refused; announcements and the relay's admin call refuse a stranger's
// token.
func TestRelayedLobbyRefusals(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	_, plain := start(t, testConfig(newFakeClock()))
	if _, err := lobby.Create(ctx, plain, 2, &lobby.Options{Relayed: true}); !errors.Is(err, lobby.ErrBadRequest) {
		t.Fatalf("a relayed lobby where no relay is: %v, want ErrBadRequest", err)
	}
	if a := call(t, plain, http.MethodPost, "/v1/relays", testRelayToken, []byte(`{"id":"x","admin":"http://127.0.0.1:1"}`)); a.status != http.StatusNotFound {
		t.Fatalf("an announcement to a server without relays: %d", a.status)
	}

	s, base := start(t, relayedConfig())
	info := startMatchRelay(t, s, base)
	cs := make([]*lobby.Client, 0, 2)
	host, err := lobby.Create(ctx, base, 2, &lobby.Options{Relayed: true})
	if err != nil {
		t.Fatal(err)
	}
	guest, err := lobby.Join(ctx, base, host.Code(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs = append(cs, host, guest)
	for _, c := range cs {
		if _, err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := host.Send(ctx, 1, lobby.KindOffer, "v=0"); !errors.Is(err, lobby.ErrForbidden) {
		t.Fatalf("seat 0 signalling seat 1 in a relayed lobby: %v, want ErrForbidden", err)
	}
	if a := call(t, base, http.MethodPost, "/v1/relays", "wrong", []byte(`{"id":"x","admin":"http://127.0.0.1:1"}`)); a.status != http.StatusUnauthorized {
		t.Fatalf("an announcement with a wrong token: %d", a.status)
	}
	for _, token := range []string{"", "wrong"} {
		if a := call(t, info.Admin, http.MethodPost, "/matches", token, []byte(`{"seats":2}`)); a.status != http.StatusUnauthorized {
			t.Fatalf("the relay's admin call with token %q: %d", token, a.status)
		}
	}
	// The placement happened when the match filled: one match on the relay.
	p, err := s.reg.placement(host.Code())
	if err != nil || p.Relay != info.ID || p.Match == "" {
		t.Fatalf("placement %+v, %v; want on relay %s", p, err, info.ID)
	}
	if got := testutil.ToFloat64(s.metrics.placements.WithLabelValues("placed")); got != 1 {
		t.Errorf("placements counted: %v, want 1", got)
	}
	if a := call(t, info.Admin, http.MethodPost, "/matches/"+p.Match+"/signals", "", []byte(`{"seat":0,"kind":"offer","data":"v=0"}`)); a.status != http.StatusUnauthorized {
		t.Fatalf("a stranger's signal to the relay: %d", a.status)
	}
}

// recorders gives each lobby client a signaler and a loopback socket that
// record what the machine receives, and the sockets' addresses by machine.
func recorders(t *testing.T, clients []*lobby.Client) ([]*recordingSignaler, []*recordingConn, map[netip.AddrPort]int) {
	t.Helper()
	sigs, conns, own := make([]*recordingSignaler, len(clients)), make([]*recordingConn, len(clients)), map[netip.AddrPort]int{}
	for i, c := range clients {
		sigs[i] = &recordingSignaler{Client: c}
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		conns[i] = &recordingConn{PacketConn: pc, from: map[netip.AddrPort]int{}}
		own[pc.LocalAddr().(*net.UDPAddr).AddrPort()] = i
	}
	return sigs, conns, own
}
