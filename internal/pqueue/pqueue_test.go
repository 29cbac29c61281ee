package pqueue_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/internal/pqueue"
)

func TestAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q := pqueue.Queue[int]{Less: func(a, b *int) bool { return *a < *b }}
	var want []int
	for range 1000 {
		if r.IntN(3) > 0 || q.Len() == 0 {
			v := r.IntN(100)
			q.Push(v)
			want = append(want, v)
			continue
		}
		slices.Sort(want)
		assert.Equal(t, want[0], q.Pop())
		want = want[1:]
	}
	slices.Sort(want)
	for _, w := range want {
		assert.Equal(t, w, q.Pop())
	}
	assert.Zero(t, q.Len())
	assert.Zero(t, testing.AllocsPerRun(100, func() { q.Push(1); q.Pop() }))
}
