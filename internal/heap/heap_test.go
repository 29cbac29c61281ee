package heap_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/internal/heap"
)

var sink []byte

// TestAllocated sees a 1 MiB allocation, and none where there is none.
func TestAllocated(t *testing.T) {
	n := heap.Allocated(func() { sink = make([]byte, 1<<20) })
	assert.GreaterOrEqual(t, n, uint64(1<<20))
	assert.Less(t, heap.Allocated(func() {}), uint64(1<<10))
}
