package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestQuietTick: a lazy sender is quiet only when on, after a first
// packet, with unchanged inputs the links allow, and never twice in a
// row; a send that is not quiet moves sentEnd to the frames it carries.
func TestQuietTick(t *testing.T) {
	off := quiet{}
	assert.False(t, off.tick(5, true, true), "off")
	assert.Equal(t, Frame(5), off.sentEnd)

	q := quiet{on: true}
	assert.False(t, q.tick(1, true, true), "no packet sent yet")
	assert.Equal(t, Frame(1), q.sentEnd)
	assert.True(t, q.tick(2, true, true))
	assert.Equal(t, Frame(1), q.sentEnd, "a quiet tick sends nothing")
	assert.False(t, q.tick(3, true, true), "never two quiet ticks in a row")
	assert.Equal(t, Frame(3), q.sentEnd)
	assert.False(t, q.tick(4, false, true), "changed inputs go at once")
	assert.False(t, q.tick(5, true, false), "a link that does not allow it")
	assert.True(t, q.tick(6, true, true))
	assert.Equal(t, int64(2), q.ticks)
}
