// Package memcopy copies the large blocks of memory a rollback moves (an
// arena's regions, the desync checkpoints' copies of the state) the fastest
// way found on the machines Rewind is measured on.
package memcopy

// Blocks are copied in pieces of copyPiece bytes when they are at most
// copyPieces bytes long. Go's memmove (amd64) copies 1 MiB or more with
// cache-bypassing stores: the live region savestate's Restore writes is then
// out of the cache when the re-simulation that follows reads it, and on some
// machines those stores run at half speed unless the lines are all zero. A
// 1 MiB restore of a state holding data took 30 µs in one piece and 22 µs
// in 32 KiB to 1 MiB−64 pieces; a 4 MiB one 137 µs against 81 µs; at
// 16 MiB and more (the source and the destination no longer fit a
// last-level cache) the one copy is faster (docs/architecture.md,
// "Measurements"; BenchmarkCopy). The limit is below the crossover (8 MiB
// was still faster in pieces there, 171 against 235 µs): a machine with a
// smaller last-level cache crosses over sooner.
const (
	copyPiece  = 512 << 10
	copyPieces = 4 << 20
)

// Copy copies src to dst (of the same length): in pieces of
// copyPiece bytes up to copyPieces, in one copy above.
func Copy(dst, src []byte) {
	if len(src) > copyPieces {
		copy(dst, src)
		return
	}
	for len(src) > copyPiece {
		copy(dst[:copyPiece], src[:copyPiece])
		dst, src = dst[copyPiece:], src[copyPiece:]
	}
	copy(dst, src)
}
