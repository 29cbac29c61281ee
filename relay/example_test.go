package relay_test

import (
	"fmt"
	"time"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// Two machines and a relay on a simulated network: machine 0's session
// sends its peer 0 a datagram, which goes to the relay in an envelope and
// comes to machine 1 from its peer 0.
func Example() {
	nw, _ := netsim.New(3, 1, netsim.Profile{Latency: 10 * time.Millisecond}) // nodes 0 and 1 machines, 2 the relay
	r, _ := relay.New(relay.Config{Machines: 2, Link: nw.Endpoint(2)})
	a, _ := relay.NewClient(nw.Endpoint(0), 1, 0, 2) // the relay is each machine's peer 1
	b, _ := relay.NewClient(nw.Endpoint(1), 1, 1, 2)

	_ = a.Send(0, []byte("hello")) // what a session does in Advance
	_ = a.Flush()                  // what the game does after it
	buf := make([]byte, 1500)
	for range 3 {
		nw.Advance(time.Second / 60)
		r.Poll(nw.Now())
		if n, peer, ok := b.Receive(buf); ok {
			fmt.Printf("machine 1 got %q from its peer %d\n", buf[:n], peer)
		}
	}
	// Output: machine 1 got "hello" from its peer 0
}
