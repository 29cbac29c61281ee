package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rtc"
)

// WebRTCJSON reports -transport webrtc: how long the machines of a match
// took to connect (every Dial, signaling in memory), the route each
// connection's ICE chose (local-remote candidate types: "host-host"
// directly, "relay-relay" through the TURN relay), and with -relay what
// the relay moved: the datagrams and bytes on its socket (to and from the
// machines, both ways) per datagram and byte the sessions sent. Without
// -relay, WirePackets and WireBytes are what the machines' sockets sent
// (every connection of a machine shares one socket: rtc.Config.Conn).
// The sessions' bytes are Rewind's packets; on the wire they carry DTLS
// and SCTP (and its acknowledgements) besides, through the relay TURN's
// framing too, and every datagram crosses the relay's socket twice (in
// from the sender, out to the receiver). No figure includes UDP/IP
// headers.
type WebRTCJSON struct {
	Relay            bool           `json:"relay"`
	ConnectMs        MeanMaxMs      `json:"connect_ms"`
	Routes           map[string]int `json:"routes"`
	WirePackets      int64          `json:"wire_packets,omitempty"`
	WireBytes        int64          `json:"wire_bytes,omitempty"`
	WirePerByte      float64        `json:"wire_bytes_per_session_byte,omitempty"`
	RelayPackets     int64          `json:"relay_packets,omitempty"`
	RelayBytes       int64          `json:"relay_bytes,omitempty"`
	RelayPerPacket   float64        `json:"relay_packets_per_session_packet,omitempty"`
	RelayPerByte     float64        `json:"relay_bytes_per_session_byte,omitempty"`
	RelayBytesPerSec float64        `json:"relay_bytes_per_second,omitempty"`
}

// webrtcRun plays the matches of one profile over WebRTC data channels on
// loopback, in process, and gathers what WebRTCJSON reports.
type webrtcRun struct {
	relay  *relay.Server // with -relay
	start  relay.Stats
	played atomic.Int64 // matches begun: each has its own seats' credentials

	mu                     sync.Mutex
	connectSum, connectMax time.Duration
	matches                int
	routes                 map[string]int
	wirePackets, wireBytes int64
}

func newWebRTCRun(relayOnly bool) (*webrtcRun, error) {
	w := &webrtcRun{routes: map[string]int{}}
	if relayOnly {
		srv, err := relay.Listen(relay.Config{CredentialTTL: time.Hour})
		if err != nil {
			return nil, err
		}
		w.relay, w.start = srv, srv.Stats()
	}
	return w, nil
}

func (w *webrtcRun) close() {
	if w.relay != nil {
		w.relay.Close()
	}
}

// play connects c's machines and plays the match over their transports,
// each impaired by prof through a netsim.Shaper as over UDP.
func (w *webrtcRun) play(c match.Config, prof netsim.Profile) match.Result {
	machines := c.Machines
	if machines == 0 {
		machines = c.Players
	}
	// Each machine has its seat's credentials, as from the lobby: the
	// relay bounds the allocations of each (one per peer).
	servers := make([][]rtc.ICEServer, machines)
	if w.relay != nil {
		code := fmt.Sprintf("soak%d", w.played.Add(1))
		_, turnURL := w.relay.URLs("")
		for m := range servers {
			user, pass, err := w.relay.SeatCredentials(code, m)
			if err != nil {
				return match.Result{Err: err}
			}
			servers[m] = []rtc.ICEServer{{URLs: []string{turnURL}, Username: user, Credential: pass}}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sigs := rtc.MemorySignalers(machines)
	trs := make([]*rtc.Transport, machines)
	errs := make([]error, machines)
	conns := make([]*countingConn, machines)
	defer func() {
		for i, t := range trs {
			if t != nil {
				t.Close()
			}
			if conns[i] != nil {
				conns[i].Close()
			}
		}
	}()
	if w.relay == nil {
		for i := range conns {
			pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				return match.Result{Err: err}
			}
			conns[i] = &countingConn{PacketConn: pc}
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for m := range machines {
		wg.Go(func() {
			c := rtc.Config{Machine: m, Machines: machines, ICEServers: servers[m], Relay: w.relay != nil, Loopback: true}
			if conns[m] != nil {
				c.Conn = conns[m]
			}
			trs[m], errs[m] = rtc.Dial(ctx, c, sigs[m])
		})
	}
	wg.Wait()
	connect := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return match.Result{Err: fmt.Errorf("webrtc: %w", err)}
	}
	w.mu.Lock()
	w.matches++
	w.connectSum += connect
	w.connectMax = max(w.connectMax, connect)
	var unrelayed []string
	for m, t := range trs {
		for p := range machines - 1 {
			route := t.Route(p)
			w.routes[route]++
			if w.relay != nil && route != "relay-relay" {
				unrelayed = append(unrelayed, fmt.Sprintf("machine %d peer %d: %q", m, p, route))
			}
		}
	}
	w.mu.Unlock()
	if len(unrelayed) > 0 {
		return match.Result{Err: fmt.Errorf("webrtc -relay: connections not through the relay: %v", unrelayed)}
	}
	sessionTrs := make([]rollback.Transport, machines)
	for i, t := range trs {
		sessionTrs[i] = t
		if prof != (match.Config{}).Profile {
			sh, err := netsim.NewShaper(t, machines-1, prof, c.Seed, i)
			if err != nil {
				return match.Result{Err: err}
			}
			defer sh.Close()
			sessionTrs[i] = sh
		}
	}
	var before [2]int64
	for _, pc := range conns {
		if pc != nil {
			before[0] += pc.packets.Load()
			before[1] += pc.bytes.Load()
		}
	}
	r := match.RunLive(c, match.UDPOptions{}, sessionTrs)
	for _, t := range trs {
		st := t.Stats()
		r.TransportDrops += st.Oversized + st.QueueFull
	}
	w.mu.Lock()
	for _, pc := range conns {
		if pc != nil {
			w.wirePackets += pc.packets.Load()
			w.wireBytes += pc.bytes.Load()
		}
	}
	w.wirePackets -= before[0] // the match's, not the connection's
	w.wireBytes -= before[1]
	w.mu.Unlock()
	return r
}

// countingConn counts what a machine's socket sends.
type countingConn struct {
	net.PacketConn
	packets, bytes atomic.Int64
}

func (c *countingConn) WriteTo(b []byte, a net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, a)
	if err == nil {
		c.packets.Add(1)
		c.bytes.Add(int64(n))
	}
	return n, err
}

// report fills s.WebRTC.
func (w *webrtcRun) report(s *Summary) {
	j := &WebRTCJSON{Relay: w.relay != nil, Routes: w.routes}
	if w.matches > 0 {
		j.ConnectMs = MeanMaxMs{Mean: float64(w.connectSum.Milliseconds()) / float64(w.matches), Max: float64(w.connectMax.Milliseconds())}
	}
	if w.relay == nil && s.BytesSent > 0 {
		j.WirePackets, j.WireBytes = w.wirePackets, w.wireBytes
		j.WirePerByte = float64(w.wireBytes) / float64(s.BytesSent)
	}
	if w.relay != nil {
		st := w.relay.Stats()
		j.RelayPackets = st.PacketsIn + st.PacketsOut - w.start.PacketsIn - w.start.PacketsOut
		j.RelayBytes = st.BytesIn + st.BytesOut - w.start.BytesIn - w.start.BytesOut
		if s.PacketsSent > 0 {
			j.RelayPerPacket = float64(j.RelayPackets) / float64(s.PacketsSent)
			j.RelayPerByte = float64(j.RelayBytes) / float64(s.BytesSent)
		}
		if s.WallSeconds > 0 {
			j.RelayBytesPerSec = float64(j.RelayBytes) / s.WallSeconds
		}
	}
	s.WebRTC = j
}
