// Command quickstart: two peers of the arena example over UDP on this machine (the README's quick start).
package main

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/pacer"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/udp"
	"github.com/rewindgg/rewind/savestate"
)

func main() {
	conns := make([]*net.UDPConn, 2)
	for i := range conns {
		conns[i], _ = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	}
	var sessions [2]*rollback.Session
	var arenas [2]*savestate.Arena
	for i, me := range []rollback.PlayerID{0, 1} {
		tr, _ := udp.New(conns[i], []netip.AddrPort{conns[1-i].LocalAddr().(*net.UDPAddr).AddrPort()})
		arenas[i], _ = savestate.New(64 << 10)
		game, _ := arena.New(arenas[i], 2, 7) // the same seed everywhere
		var err error
		sessions[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{me},
			Peers: []rollback.Peer{{Players: []rollback.PlayerID{1 - me}}}, Layout: arena.Layout,
			State: arenas[i], Game: game, Transport: tr, SessionID: 1}) // SessionID: new for every match
		if err != nil {
			panic(err)
		}
	}
	bots := []*arena.Bot{arena.NewBot(1), arena.NewBot(2)} // your players' pads
	for p := pacer.New(time.Second / 60); sessions[0].ConfirmedFrame() < 600 || sessions[1].ConfirmedFrame() < 600; p.Wait() {
		for i, s := range sessions {
			var err error
			if s.Frame() < 600 {
				if s.InputFrame(rollback.PlayerID(i)) < 600 { // no input past frame 600: both machines stop there
					_, err = s.AddLocalInput(rollback.PlayerID(i), bots[i].Next()) // not queued: a stall; drop the sample
				}
				if err == nil {
					_, err = s.Advance()
				}
			} else {
				_, err = s.Idle() // done: keep answering until the other is too
			}
			if err != nil {
				panic(err)
			}
		}
	}
	fmt.Printf("frame 600 on both machines: %016x %016x\n", xxhash.Sum64(arenas[0].Bytes()), xxhash.Sum64(arenas[1].Bytes()))
}
