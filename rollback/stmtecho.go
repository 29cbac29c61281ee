package rollback

import (
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the statements' echoes: what each peer says it holds of
// every machine's statements (its digests), matched against ours to
// settle an interval or to repair what it lacks.

// echoed takes peer i's echo: the first interval it wants our digest
// of, the statements it holds of that interval and the next ones, and its
// digests of the intervals from on.
func (st *statements) echoed(i int, want uint32, have []byte, from uint32, digests []byte, now time.Duration) {
	p := &st.peers[i]
	p.haveN, p.haveAt = copy(p.have[:], have), now
	if w := int32(min(want, 1<<31-1)); w != p.wantFrom {
		p.wantFrom, p.wantAt = w, now
	}
	for j := 0; j+wire.EchoDigestSize <= len(digests); j += wire.EchoDigestSize {
		k := int64(from) + int64(j/wire.EchoDigestSize)
		if k < int64(st.settled) || k >= int64(st.settled)+int64(st.kept) {
			continue
		}
		s := st.slotOf(int32(k))
		p.echoK[s] = int32(k)
		copy(p.echo[s][:], digests[j:])
	}
}

// matches reports whether peer i echoed our digest of interval k.
func (st *statements) matches(i int, k int32) bool {
	s := st.slotOf(k)
	return k < st.done && st.peers[i].echoK[s] == k && st.peers[i].echo[s] == st.digest[st.digestSlot(k)]
}

// holding appends to dst, for each interval from k on up to the one we
// sign (at most wire.MaxEchoes), the machines whose statement of it we
// hold.
func (st *statements) holding(dst []byte, k int32) []byte {
	for ; k <= st.signed && len(dst) < wire.MaxEchoes; k++ {
		var b byte
		for x := range st.machines {
			if n, _, _ := st.holds(x, k); n > 0 {
				b |= 1 << x
			}
		}
		dst = append(dst, b)
	}
	return dst
}

// echoStart returns the first interval of our next echo to peer i: the
// first it wants, as far as our digests reach back — settled ones too: it
// may have matched ours before we matched its, and still wait for our echo
// of an interval we settled.
func (st *statements) echoStart(i int) int32 {
	return max(st.peers[i].wantFrom, st.done-2*st.kept, st.base)
}

// firstUnmatched returns the first interval peer i has not echoed as we
// hold it.
func (st *statements) firstUnmatched(i int) int32 {
	k := st.settled
	for k < st.done && st.matches(i, k) {
		k++
	}
	return k
}
