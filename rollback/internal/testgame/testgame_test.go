package testgame_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/testgame"
)

func TestCounter(t *testing.T) {
	g, err := testgame.NewCounter(4096)
	require.NoError(t, err)
	g.Record = true
	in := []rollback.PlayerInput{{Input: 3}, {Input: 5}}
	g.Step(0, in)
	g.Step(1, in)
	tot := g.Totals()
	assert.Equal(t, []uint64{3 + 3 + 1, 5 + 5 + 1}, tot[:2], "input plus frame, per player")
	assert.Equal(t, []rollback.Frame{0, 1}, g.Frames)
	assert.Equal(t, [][]rollback.Input{{3, 5}, {3, 5}}, g.Inputs)

	// A leaking game gives a different state for the same frame from the
	// same state: what the sync test must catch.
	l, err := testgame.NewCounter(4096)
	require.NoError(t, err)
	l.Leak = true
	require.NoError(t, l.Arena.Save(0))
	l.Step(30, in)
	first := l.Totals()
	require.NoError(t, l.Arena.Restore(0))
	l.Step(30, in)
	assert.NotEqual(t, first, l.Totals())
}
