//go:build rewind_adversary

package match_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// The tests here use the soak's test hooks (Config.NoStatements,
// Config.CorruptJoinState), compiled only with the build tag
// rewind_adversary (make test passes it).

// TestRejoinCorruptState: every machine hands the one that comes back a
// state with one bit flipped; their checksums of the take-over frame
// differ from its own, and it never plays: ErrJoinState. (With the
// comparison taken out of joinStep, this test fails: the joiner takes
// over with the corrupted state.)
func TestRejoinCorruptState(t *testing.T) {
	for _, players := range []int{2, 4} {
		t.Run(fmt.Sprintf("%dp", players), func(t *testing.T) {
			p, err := netsim.ParseProfile("wifi")
			require.NoError(t, err)
			r := match.Run(match.Config{Players: players, Frames: 1200, Seed: 4, Profile: p,
				DropAt: 300, DropMachine: 1, RejoinAfter: 2 * time.Second, CorruptJoinState: true})
			require.ErrorIs(t, r.Err, rollback.ErrJoinState)
			assert.False(t, r.Rejoin.Rejoined)
			assert.Contains(t, r.Err.Error(), "not played")
		})
	}
}

// TestRejoinRefutesALyingSource: of 4 machines, the one the machine that
// comes back watches first alone hands it a corrupted state; the others'
// checksums of the take-over frame refute it. The joiner watches through
// another machine, takes over from a state every machine confirmed,
// verifies, and names the liar (SuspectDesync). (It used to stop at the
// first refutation: ErrJoinState, on one machine's word.)
func TestRejoinRefutesALyingSource(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	c := match.Config{Players: 4, Frames: 1500, Seed: 4, Profile: p, DropAt: 300, DropMachine: 1, RejoinAfter: 2 * time.Second}
	honest := match.Run(c)
	require.NoError(t, honest.Err)
	require.True(t, honest.Rejoin.Rejoined)
	first := honest.Rejoin.Source
	c.CorruptJoinState, c.CorruptJoinStateBy = true, first+1
	r := match.Run(c)
	require.NoError(t, r.Err)
	assert.True(t, r.Rejoin.Rejoined)
	assert.True(t, r.Verified, r.Desync)
	assert.Equal(t, 1, r.Rejoin.Refuted, "machine %d's state, watched first, was refuted", first)
	assert.NotEqual(t, first, r.Rejoin.Source, "the state came from another machine")
	assert.Positive(t, r.Suspected[rollback.SuspectDesync], "the lying source was not named")
	assert.Zero(t, honest.Suspects)
}

// TestSpectatorWitnesses: machine 1 hands every spectator a state with
// one bit flipped (Config.CorruptJoinState). Without witnesses its
// spectators play that state to the end without a word (the 832
// of 832 frames wrong). With two witnesses each of them is outvoted,
// names its source and watches on through a witness from a true state;
// every spectator verifies. With one witness (two players) a spectator
// cannot tell who lied: it ends with ErrJoinState naming both, and none
// plays the false state to the end.
func TestSpectatorWitnesses(t *testing.T) {
	wifi, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	base := match.Config{Players: 3, Frames: 900, Seed: 11, Profile: wifi, Spectators: 6, CorruptJoinState: true, CorruptJoinStateBy: 2, DropMachine: -1}

	fooled := match.Run(base)
	require.NoError(t, fooled.Err)
	assert.Less(t, fooled.Spectators.Verified, fooled.Spectators.Joined, "without witnesses the false state goes unnoticed")
	assert.Contains(t, fmt.Sprint(fooled.Spectators.Failures), "differs from the offline re-simulation")

	c := base
	c.Witnesses = 2
	r := match.Run(c)
	require.NoError(t, r.Err)
	assert.Equal(t, r.Spectators.Joined, r.Spectators.Verified, "%v", r.Spectators.Failures)
	assert.Positive(t, r.Spectators.Refuted, "no spectator left the lying source")
	assert.Equal(t, map[int]int{1: r.Spectators.Refuted + r.Spectators.Outvoted}, r.Spectators.Named,
		"every source left and every witness outvoted is the liar, machine 1")
	assert.Positive(t, r.Spectators.Corroborated)
	t.Logf("with 2 witnesses: %d of %d verified, %d sources refuted, %d frames corroborated", r.Spectators.Verified, r.Spectators.Joined, r.Spectators.Refuted, r.Spectators.Corroborated)

	c = base
	c.Players, c.Witnesses = 2, 1
	r = match.Run(c)
	require.NoError(t, r.Err)
	assert.Less(t, r.Spectators.Verified, r.Spectators.Joined, "the lying machine's spectators cannot verify")
	assert.Contains(t, fmt.Sprint(r.Spectators.Failures), "disagree about frame")
	assert.NotContains(t, fmt.Sprint(r.Spectators.Failures), "differs from the offline", "a spectator was fooled")
}

// TestSpectatorWitnessesHonest: with honest machines on a lossy link,
// witnesses change nothing a spectator plays: every one verifies, none
// is outvoted or refuted, and each confirms its frames.
func TestSpectatorWitnessesHonest(t *testing.T) {
	hell, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	for _, players := range []int{2, 4} {
		t.Run(fmt.Sprintf("%dp", players), func(t *testing.T) {
			r := match.Run(match.Config{Players: players, Frames: 900, Seed: 12, Profile: hell, Spectators: 6, Witnesses: players - 1})
			require.NoError(t, r.Err)
			assert.Equal(t, r.Spectators.Joined, r.Spectators.Verified, "%v", r.Spectators.Failures)
			assert.Zero(t, r.Spectators.Refuted+r.Spectators.Outvoted)
			assert.Positive(t, r.Spectators.Corroborated)
		})
	}
}
