// Package pqueue is a binary min-heap over a slice of values, for the
// network simulators' delivery queues. Unlike container/heap it neither
// boxes values in interfaces nor allocates once its slice has grown.
package pqueue

// Queue is a min-heap ordered by Less. The zero value is not usable: set
// Less. A Queue is not safe for concurrent use.
type Queue[T any] struct {
	Items []T // heap order; Items[0] is the least
	Less  func(a, b *T) bool
}

// Len returns the number of items.
func (q *Queue[T]) Len() int { return len(q.Items) }

// Push adds v.
func (q *Queue[T]) Push(v T) {
	q.Items = append(q.Items, v)
	for i := len(q.Items) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.Less(&q.Items[i], &q.Items[parent]) {
			break
		}
		q.Items[i], q.Items[parent] = q.Items[parent], q.Items[i]
		i = parent
	}
}

// Pop removes and returns the least item. The queue must not be empty.
func (q *Queue[T]) Pop() T {
	top := q.Items[0]
	last := len(q.Items) - 1
	q.Items[0] = q.Items[last]
	var zero T
	q.Items[last] = zero
	q.Items = q.Items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.Less(&q.Items[l], &q.Items[m]) {
			m = l
		}
		if r < last && q.Less(&q.Items[r], &q.Items[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.Items[i], q.Items[m] = q.Items[m], q.Items[i]
		i = m
	}
	return top
}
