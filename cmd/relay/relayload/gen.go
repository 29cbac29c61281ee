//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/rewindgg/rewind/relay"
)

// generator plays every machine of n matches through one socket.
type generator struct {
	p        *ipv4.PacketConn
	machines int
	dsize    int
	env      [][]byte   // by machine: its envelope, its body patched each tick
	bufs     [][][]byte // by machine: env as a Message's Buffers
	oob      [][]byte   // by machine: IP_PKTINFO naming its address as the source
	bodyAt   []int      // by slot: where the body lies in its envelopes
	step     [steps][]int
	window   [2]int64 // the measured ticks, [from, to)
	upSize   int
	downSize int

	sent atomic.Int64 // envelopes sent in the window
	late atomic.Int64 // steps sent more than a step late

	// The receiver's alone until it returns.
	received, corrupt int64
	perMachine        []int32
	latency, excess   [histBins]int64
}

// A datagram from slot s to slot t: 2 header bytes {0xa0|s, t}, the body
// (the tick number and the send time, 8 bytes each, then padding), 4 MAC
// bytes {s, t, 0x5a, 0xa5}. Its body is the same to every peer: a
// relay.Client sends it once and reseal records for the others.
const bodyLen = 16

func datagram(size, s, t int, k, ts int64) []byte {
	d := make([]byte, size)
	d[0], d[1] = 0xa0|byte(s), byte(t)
	binary.LittleEndian.PutUint64(d[2:], uint64(k))
	binary.LittleEndian.PutUint64(d[10:], uint64(ts))
	for i := 2 + bodyLen; i < size-4; i++ {
		d[i] = byte(i)
	}
	copy(d[size-4:], []byte{byte(s), byte(t), 0x5a, 0xa5})
	return d
}

// capture is a relay.Link that keeps what it is sent.
type capture struct{ b []byte }

func (c *capture) Send(_ int, b []byte) error         { c.b = append(c.b[:0], b...); return nil }
func (c *capture) Receive([]byte) (n, p int, ok bool) { return 0, 0, false }

func newGenerator(p *ipv4.PacketConn, n, dsize int) (*generator, error) {
	g := &generator{p: p, machines: n * players, dsize: dsize, bodyAt: make([]int, players),
		perMachine: make([]int32, n*players)}
	const markK, markTS = 0x0123456789abcdef, 0x7edcba9876543210
	templates := make([][]byte, players)
	for s := range players {
		var c capture
		cl, err := relay.NewClient(&c, 0, s, players)
		if err != nil {
			return nil, err
		}
		for peer := range players - 1 {
			t := peer
			if peer >= s {
				t++
			}
			if err := cl.Send(peer, datagram(dsize, s, t, markK, markTS)); err != nil {
				return nil, err
			}
		}
		if err := cl.Flush(); err != nil {
			return nil, err
		}
		var mark [bodyLen]byte
		binary.LittleEndian.PutUint64(mark[:], markK)
		binary.LittleEndian.PutUint64(mark[8:], markTS)
		if bytes.Count(c.b, mark[:]) != 1 {
			return nil, errors.New("the client did not send one body and reseal records")
		}
		g.bodyAt[s] = bytes.Index(c.b, mark[:])
		templates[s] = c.b
		g.upSize = len(c.b)
	}
	g.downSize = 1 + (players-1)*(1+uvarintLen(dsize)+dsize)
	rng := rand.New(rand.NewPCG(1, 2))
	for j := range g.machines {
		env := append([]byte(nil), templates[j%players]...)
		g.env = append(g.env, env)
		g.bufs = append(g.bufs, [][]byte{env})
		src := machineAddr(j, genPort).Addr().As4()
		g.oob = append(g.oob, (&ipv4.ControlMessage{Src: net.IP(src[:])}).Marshal())
		st := rng.IntN(steps)
		g.step[st] = append(g.step[st], j)
	}
	return g, nil
}

func uvarintLen(v int) int {
	if v < 128 {
		return 1
	}
	return 2
}

// send sends every machine's envelope once a tick, at its step, until the
// tick until.
func (g *generator) send(to *net.UDPAddr, until int64) error {
	ms := make([]ipv4.Message, batchMax)
	for i := range ms {
		ms[i].Addr = to
	}
	stepLen := int64(tick) / steps
	for k := time.Now().UnixNano()/int64(tick) + 1; k < until; k++ {
		inWindow := k >= g.window[0] && k < g.window[1]
		for st := range steps {
			at := time.Unix(0, k*int64(tick)+int64(st)*stepLen)
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			} else if d < -time.Duration(stepLen) {
				g.late.Add(1)
			}
			ts := time.Now().UnixNano()
			list := g.step[st]
			for len(list) > 0 {
				chunk := list[:min(len(list), batchMax)]
				list = list[len(chunk):]
				for x, j := range chunk {
					b := g.env[j][g.bodyAt[j%players]:]
					binary.LittleEndian.PutUint64(b, uint64(k))
					binary.LittleEndian.PutUint64(b[8:], uint64(ts))
					ms[x].Buffers, ms[x].OOB = g.bufs[j], g.oob[j]
				}
				for done := 0; done < len(chunk); {
					n, err := g.p.WriteBatch(ms[done:len(chunk)], 0)
					if err != nil {
						return fmt.Errorf("sending: %v", err)
					}
					done += n
				}
			}
			if inWindow {
				g.sent.Add(int64(len(g.step[st])))
			}
		}
	}
	return nil
}

// receive reads the relay's envelopes until its socket fails (its owner
// sets a past read deadline to stop it).
func (g *generator) receive(stop <-chan struct{}) {
	ms := make([]ipv4.Message, batchMax)
	bufs := make([][]byte, batchMax)
	cms := make([]ipv4.ControlMessage, batchMax)
	for i := range ms {
		bufs[i] = make([]byte, relay.MaxDatagram+1)
		ms[i].Buffers = bufs[i : i+1]
		ms[i].OOB = make([]byte, 128)
	}
	for {
		n, err := g.p.ReadBatch(ms, 0)
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		for i := range n {
			if cms[i].Parse(ms[i].OOB[:ms[i].NN]) != nil || cms[i].Dst.To4() == nil {
				g.corrupt++
				continue
			}
			j := machineIndex([4]byte(cms[i].Dst.To4()))
			if j < 0 || j >= g.machines {
				g.corrupt++
				continue
			}
			g.envelope(j, bufs[i][:ms[i].N], now)
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

// envelope takes an envelope the relay sent machine j at now.
func (g *generator) envelope(j int, env []byte, now int64) {
	t := j % players
	if len(env) < 2 || env[0] != 0xe1 {
		g.corrupt++
		return
	}
	for pos := 1; pos < len(env); {
		s := int(env[pos])
		size, w := int(env[pos+1]), 1
		if size >= 0x80 && pos+2 < len(env) {
			size, w = size&0x7f|int(env[pos+2])<<7, 2
		}
		pos += 1 + w
		if pos+size > len(env) {
			g.corrupt++
			return
		}
		d := env[pos : pos+size]
		pos += size
		if size != g.dsize || s == t || d[0] != 0xa0|byte(s) || d[1] != byte(t) ||
			!bytes.Equal(d[size-4:], []byte{byte(s), byte(t), 0x5a, 0xa5}) {
			g.corrupt++
			continue
		}
		k := int64(binary.LittleEndian.Uint64(d[2:]))
		ts := int64(binary.LittleEndian.Uint64(d[10:]))
		if k < g.window[0] || k >= g.window[1] {
			continue
		}
		g.received++
		g.perMachine[j]++
		g.latency[bin(now-ts)]++
		g.excess[bin(now-(ts/int64(tick)+1)*int64(tick))]++
	}
}

func bin(ns int64) int {
	return min(max(int(ns/int64(histBin)), 0), histBins-1)
}
