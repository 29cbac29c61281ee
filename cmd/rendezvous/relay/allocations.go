package relay

import (
	"net"
	"net/netip"
	"sync"
)

// allocTable follows the allocations pion makes and deletes (its
// EventHandler): which credential made the allocation of each client
// address, how many each credential holds (the quota), the allocations
// being made (reserved by the quota, not yet made), and the sockets by
// relayed address. Every front's pion server shares it.
type allocTable struct {
	mu      sync.Mutex
	bySrc   map[string]allocation         // srcKey → the allocation of that client
	perKey  map[string]int                // credential.quotaKey → allocations
	pending map[string]int                // credential.quotaKey → allocations reserved, not yet made
	pended  int                           // the sum of pending
	conns   map[netip.AddrPort]*relayConn // the allocations' sockets, by relayed address
}

// allocation is what the table knows of one.
type allocation struct {
	cred   credential
	stream *streamConn // the connection it was made on; nil over UDP
}

func newAllocTable() *allocTable {
	return &allocTable{bySrc: make(map[string]allocation), perKey: make(map[string]int),
		pending: make(map[string]int), conns: make(map[netip.AddrPort]*relayConn)}
}

// srcKey names a client address: its transport and address, since a
// client may use the same address and port over UDP and over TCP.
func srcKey(a net.Addr) string { return a.Network() + " " + a.String() }

func (t *allocTable) addConn(c *relayConn) {
	t.mu.Lock()
	t.conns[c.addr] = c
	t.mu.Unlock()
}

func (t *allocTable) removeConn(c *relayConn) {
	t.mu.Lock()
	if t.conns[c.addr] == c {
		delete(t.conns, c.addr)
	}
	t.mu.Unlock()
}

// What reserve answers.
const (
	reserved = iota
	reserveQuota
	reserveCapacity
)

// reserve reserves an allocation for cred in req, unless the credential
// holds (or is making) perCred already, or the server total.
func (t *allocTable) reserve(req *request, cred credential, perCred, total int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(req)
	k := cred.quotaKey()
	if t.perKey[k]+t.pending[k] >= perCred {
		return reserveQuota
	}
	if len(t.bySrc)+t.pended >= total {
		return reserveCapacity
	}
	t.pending[k]++
	t.pended++
	req.reserved, req.quotaKey = true, k
	return reserved
}

// release gives back req's reservation, if it holds one.
func (t *allocTable) release(req *request) {
	if !req.reserved { // only req's goroutine sets it
		return
	}
	t.mu.Lock()
	t.releaseLocked(req)
	t.mu.Unlock()
}

func (t *allocTable) releaseLocked(req *request) {
	if !req.reserved {
		return
	}
	if t.pending[req.quotaKey] > 1 {
		t.pending[req.quotaKey]--
	} else {
		delete(t.pending, req.quotaKey)
	}
	t.pended--
	req.reserved = false
}

// created records src's allocation, made with cred (on req's front),
// relayed at addr; req's reservation becomes it.
func (t *allocTable) created(req *request, src net.Addr, cred credential, addr netip.AddrPort) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(req)
	t.bySrc[srcKey(src)] = allocation{cred: cred, stream: req.stream}
	t.perKey[cred.quotaKey()]++
	if c := t.conns[addr]; c != nil {
		c.bind(cred)
	}
	if req.stream != nil {
		req.stream.holding(true)
	}
}

// deleted forgets src's allocation; false when it had none.
func (t *allocTable) deleted(src net.Addr) (credential, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := srcKey(src)
	a, ok := t.bySrc[k]
	if !ok {
		return credential{}, false
	}
	delete(t.bySrc, k)
	if k := a.cred.quotaKey(); t.perKey[k] > 1 {
		t.perKey[k]--
	} else {
		delete(t.perKey, k)
	}
	if a.stream != nil {
		a.stream.holding(false)
	}
	return a.cred, true
}

// of returns the credential src's allocation was made with.
func (t *allocTable) of(src net.Addr) (credential, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.bySrc[srcKey(src)]
	return a.cred, ok
}

// count is how many allocations exist.
func (t *allocTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.bySrc)
}
