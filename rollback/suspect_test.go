package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSuspicionsNote: every occurrence is counted; the event is raised the
// first time, then at most once per suspectEvery for each kind.
func TestSuspicionsNote(t *testing.T) {
	var s suspicions
	steps := []struct {
		k     Suspicion
		at    time.Duration
		raise bool
	}{
		{SuspectAck, 0, true},
		{SuspectAck, 500 * time.Millisecond, false},
		{SuspectGossip, 600 * time.Millisecond, true}, // another kind has its own pace
		{SuspectAck, time.Second, true},
		{SuspectAck, 1500 * time.Millisecond, false},
		{Suspicion(numSuspicions), 0, false}, // no such kind: ignored
	}
	for i, st := range steps {
		assert.Equal(t, st.raise, s.note(st.k, st.at), "step %d", i)
	}
	assert.Equal(t, int64(4), s.count[SuspectAck])
	assert.Equal(t, int64(1), s.count[SuspectGossip])
}
