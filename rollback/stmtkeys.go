package rollback

import (
	"bytes"
	"fmt"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the statements' signing keys: each machine's Ed25519 key,
// exchanged in Keys messages and compared across machines before the
// match starts (a machine that claims another key for a third is caught
// here), and taken anew when a machine comes back.

// rejoin takes machine x (peer i) back from interval k on, under its new
// signing key: it restarted, and holds none of its statements before.
func (st *statements) rejoin(x, i int, key [wire.SigningKeySize]byte, k int32) {
	st.keys[x], st.known[x] = key, true
	st.waiting[x] = [stmtSlots]waiting{}
	st.proof[x] = stmtProof{}
	for s := range st.slots[x] {
		if st.slots[x][s].k >= k {
			st.slots[x][s] = held{k: -1}
		}
	}
	st.peers[i] = stmtPeer{}
	for s := range st.peers[i].echoK {
		st.peers[i].echoK[s] = -1
	}
	st.dirty = true
}

// forget forgets machine x's signing key: it restarted, under a new one
// that only it can teach us (takeKeys).
func (st *statements) forget(x int) {
	if st != nil {
		st.known[x] = false
	}
}

// reserve notes that peer i (machine x) has a reserved slot: the match
// starts without its key, which comes with its take-over proposal (rejoin).
func (st *statements) reserve(i, x int) {
	st.keysOK[i], st.late[x] = true, true
}

// keyList writes our view of every machine's key (zeros where unknown).
func (st *statements) keyList(dst []byte) []byte {
	dst = dst[:0]
	for x := range st.machines {
		dst = append(dst, st.keys[x][:]...)
	}
	return dst
}

// takeKeys takes peer i's (machine x's) view of every key. Its own entry
// teaches us its key; any other known entry must equal ours, or the
// machines disagree and the match must not start: one of them lies.
func (st *statements) takeKeys(i, x int, list []byte) bool {
	if len(list) != st.machines*wire.SigningKeySize {
		return false
	}
	var zero [wire.SigningKeySize]byte
	own := list[x*wire.SigningKeySize : (x+1)*wire.SigningKeySize]
	if !bytes.Equal(own, zero[:]) && !st.known[x] {
		copy(st.keys[x][:], own)
		st.known[x] = true
	}
	full := true
	for y := range st.machines {
		e := list[y*wire.SigningKeySize : (y+1)*wire.SigningKeySize]
		switch {
		case bytes.Equal(e, zero[:]):
			full = full && st.late[y]
		case st.known[y] && !bytes.Equal(e, st.keys[y][:]) && st.mismatch == nil:
			who := fmt.Sprintf("peer %d's", st.peerOf[y])
			if y == st.me {
				who = "our"
			}
			st.mismatch = &HandshakeError{Peers: []int{i}, Field: fieldSigningKeys,
				Ours: fmt.Sprintf("%s is %x… (%s)", who, st.keys[y][:4], heardFrom(st.peerOf[y])), Theirs: fmt.Sprintf("%s is %x…", who, e[:4])}
			return true
		}
	}
	if full {
		st.keysOK[i] = true
	}
	return true
}

// heardFrom says where our copy of machine y's key (peer's; -1: ours)
// came from.
func heardFrom(peer int) string {
	if peer < 0 {
		return "our own"
	}
	return fmt.Sprintf("as peer %d sent it", peer)
}

// knownKeys returns how many machines' keys we know.
func (st *statements) knownKeys() int {
	n := 0
	for x := range st.machines {
		if st.known[x] {
			n++
		}
	}
	return n
}

// keysAgreed reports whether every peer's view of the keys equals ours.
func (st *statements) keysAgreed() bool {
	for i := range st.peers {
		if !st.keysOK[i] {
			return false
		}
	}
	return true
}
