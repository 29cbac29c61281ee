package relay

import "encoding/binary"

// De-duplication: a session sends each of its peers, in one Advance, a
// datagram of its own, sealed with that pair's key; but much of what they
// carry is the same for every peer (the machine's signed statement, 64
// bytes of signature, rides in front of its input packets to all of them).
// The client sends the first whole and spells the others, where it saves
// bytes, as copy records: their own bytes around one copy of the longest
// run they share with what the envelope already holds (envelope.go). The
// relay rebuilds each byte for byte, so the seal still covers it end to
// end.

const (
	// minCopy is the shortest run looked for: a copy record costs about
	// four bytes more than a plain one.
	minCopy = 8
	// indexBits sizes the index of the envelope's runs of minCopy bytes.
	indexBits = 10
)

// index finds runs of minCopy bytes in the envelope being gathered: by
// hash, the position of the last run seen with it (0: none; position 0 is
// the kind byte, never a run's start).
type index struct {
	at   [1 << indexBits]uint16
	upto int // runs starting before upto are indexed
}

func runHash(b []byte) int {
	return int(binary.LittleEndian.Uint64(b) * 0x9e3779b97f4a7c15 >> (64 - indexBits))
}

// reset empties the index, for an envelope begun anew.
func (x *index) reset() {
	x.at = [1 << indexBits]uint16{}
	x.upto = 1
}

// add indexes the runs of env not yet indexed.
func (x *index) add(env []byte) {
	for ; x.upto+minCopy <= len(env); x.upto++ {
		x.at[runHash(env[x.upto:])] = uint16(x.upto)
	}
}

// longest returns the longest run of at least minCopy bytes that datagram
// b shares with env (indexed up to its end) as b[j:j+n] = env[at:at+n]; n
// is 0 for none. One candidate a position of b, the last indexed with its
// hash: the statement is found whole, and the cost is linear.
func (x *index) longest(env, b []byte) (j, at, n int) {
	for k := 0; k+minCopy <= len(b); {
		c := int(x.at[runHash(b[k:])])
		if c == 0 || string(env[c:c+minCopy]) != string(b[k:k+minCopy]) {
			k++
			continue
		}
		s, e := k, k+minCopy
		for s > 0 && c-(k-s) > 1 && env[c-(k-s)-1] == b[s-1] {
			s--
		}
		for e < len(b) && c+(e-k) < len(env) && env[c+(e-k)] == b[e] {
			e++
		}
		if e-s > n {
			j, at, n = s, c-(k-s), e-s
		}
		k = e
	}
	return j, at, n
}
