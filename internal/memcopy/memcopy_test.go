package memcopy

import (
	"bytes"
	"testing"
)

// TestCopy: the pieces copy every byte, whatever the length around
// the piece size and the limit.
func TestCopy(t *testing.T) {
	for _, n := range []int{0, 1, copyPiece - 1, copyPiece, copyPiece + 1, 3*copyPiece + 5, copyPieces, copyPieces + 7} {
		src, dst := make([]byte, n), make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + i>>9)
		}
		Copy(dst, src)
		if !bytes.Equal(dst, src) {
			t.Fatalf("%d bytes: the copy differs", n)
		}
	}
}
