package relay

import (
	"net"
	"sync"
)

// allocTable follows the allocations pion makes and deletes (its
// EventHandler): which credential made the allocation of each client
// address, how many each credential holds (the quota), and the sockets by
// port.
type allocTable struct {
	mu     sync.Mutex
	bySrc  map[string]credential // client address → the credential its allocation was made with
	perKey map[string]int        // credential.quotaKey → allocations
	conns  map[uint16]*relayConn // the allocations' sockets, by port
}

func newAllocTable() *allocTable {
	return &allocTable{bySrc: make(map[string]credential), perKey: make(map[string]int),
		conns: make(map[uint16]*relayConn)}
}

func (t *allocTable) addConn(c *relayConn) {
	t.mu.Lock()
	t.conns[c.port] = c
	t.mu.Unlock()
}

func (t *allocTable) removeConn(c *relayConn) {
	t.mu.Lock()
	if t.conns[c.port] == c {
		delete(t.conns, c.port)
	}
	t.mu.Unlock()
}

// created records src's allocation, made with cred, relayed at port.
func (t *allocTable) created(src net.Addr, cred credential, port int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bySrc[src.String()] = cred
	t.perKey[cred.quotaKey()]++
	if port >= 0 && port <= 0xffff {
		if c := t.conns[uint16(port)]; c != nil {
			c.bind(cred)
		}
	}
}

// deleted forgets src's allocation.
func (t *allocTable) deleted(src net.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cred, ok := t.bySrc[src.String()]
	if !ok {
		return
	}
	delete(t.bySrc, src.String())
	if k := cred.quotaKey(); t.perKey[k] > 1 {
		t.perKey[k]--
	} else {
		delete(t.perKey, k)
	}
}

// of returns the credential src's allocation was made with.
func (t *allocTable) of(src net.Addr) (credential, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.bySrc[src.String()]
	return c, ok
}

// held is how many allocations the credential's quota key holds.
func (t *allocTable) held(cred credential) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.perKey[cred.quotaKey()]
}
