// Package nettest has the test doubles the rendezvous's and its relay's
// tests share: a counting UDP echo service and a buffer that several
// goroutines may write.
package nettest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Echo is a UDP service on a loopback address that answers every
// datagram with itself and counts them.
type Echo struct {
	Conn net.PacketConn
	Got  atomic.Int64
}

// NewEcho starts an echo service on ip (an IPv4 address), closed with the
// test.
func NewEcho(t testing.TB, ip string) *Echo {
	t.Helper()
	conn, err := net.ListenPacket("udp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	e := &Echo{Conn: conn}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			e.Got.Add(1)
			conn.WriteTo(buf[:n], from)
		}
	}()
	return e
}

// SyncBuffer is a bytes.Buffer for several goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
