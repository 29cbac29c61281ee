//go:build rewind_adversary

package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
)

// The tests here run the soak's adversary: they need the build tag
// rewind_adversary (make tools-test passes it).

// TestAdversary: -adversary all gives every match its own kind of lie and
// lying machine (match i: kind i%10+1, each round of the kinds on the next
// machines), and the JSON has
// the adversary object, with a per-kind summary; without the flag there is
// none, and the suspicions are reported either way. A match whose honest
// machines suspected one of their own fails, with the flags that
// reproduce it.
func TestAdversary(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	run([]string{"-matches", strconv.Itoa(int(liar.NumKinds) - 1), "-players", "3", "-frames", "300", "-adversary", "all", "-json", "-"}, &out, &errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &m), errOut.String())
	assert.Contains(t, m, "suspects")
	assert.Contains(t, m, "suspects_by_kind")
	require.Contains(t, m, "adversary")
	adv := m["adversary"].(map[string]any)
	for _, k := range []string{"kind", "machine", "matches", "detected", "detected_at_frame_max", "honest_verified",
		"honest_speed_min", "honest_input_lag_max", "lookahead_frames", "lies", "suspected_honest", "honest_disconnected",
		"suspicions", "by_kind"} {
		assert.Contains(t, adv, k)
	}
	var s Summary
	require.NoError(t, json.Unmarshal(out.Bytes(), &s))
	a := s.Adversary
	require.NotNil(t, a)
	assert.Equal(t, "all", a.Kind)
	assert.Equal(t, -1, a.Machine)
	assert.Equal(t, int(liar.NumKinds)-1, a.Matches)
	require.Len(t, a.ByKind, int(liar.NumKinds)-1)
	for k := liar.None + 1; k < liar.NumKinds; k++ {
		bk := a.ByKind[k.String()]
		require.NotNil(t, bk, "%v", k)
		assert.Equal(t, 1, bk.Matches, "%v", k)
		assert.Equal(t, k.String(), bk.Kind)
		assert.Nil(t, bk.ByKind)
	}
	assert.Contains(t, errOut.String(), "adversary all on machine i%machines: named in ")

	o := options{matches: 3, players: 3, machines: 3, frames: 60, seed: 7, adversary: "all", adversaryMachine: -1}
	// 11 kinds: kind 1 + i%11 on machine (i%11 + i/11) % 3.
	for i, want := range map[int][2]int{0: {1, 0}, 1: {2, 1}, 2: {3, 2}, 3: {4, 0}, 9: {10, 0}, 10: {11, 1}, 11: {1, 1}, 20: {10, 1}, 30: {9, 1}} {
		k, mach := o.adversaryOf(i)
		assert.Equal(t, want, [2]int{int(k), mach}, "match %d", i)
	}
	one := options{machines: 3, adversary: "stall-ack", adversaryKind: liar.StallAck, adversaryMachine: -1}
	for i := range 4 {
		k, mach := one.adversaryOf(i)
		assert.Equal(t, [2]int{int(liar.StallAck), i % 3}, [2]int{int(k), mach})
	}
	ok := match.Result{Completed: true, Verified: true, Rollbacks: 1, Adversary: match.AdversaryReport{Kind: liar.ForgedGossip,
		HonestVerified: true, Detected: true, DetectedAt: 240, HonestSpeedMin: 0.97, HonestInputLagMax: 1, Lies: 10}}
	ok.Adversary.SuspectsByKind[rollback.SuspectGossip] = 2
	bad := ok
	bad.Adversary.Kind, bad.Adversary.Machine, bad.Adversary.SuspectedHonest, bad.Adversary.Detected = liar.AdvantageLie, 1, 3, false
	sum := summarize(o, []match.Result{ok, bad}, rollback.TwoBackups)
	assert.False(t, sum.Passed)
	require.Len(t, sum.Failures, 1)
	assert.Equal(t, "-adversary advantage-lie -adversary-machine 1", sum.Failures[0].Flags)
	assert.Contains(t, sum.Failures[0].Reason, "suspected each other 3 times")
	require.NotNil(t, sum.Adversary)
	assert.Equal(t, 1, sum.Adversary.Detected)
	assert.Equal(t, int32(240), sum.Adversary.DetectedAtFrameMax)
	assert.Equal(t, 2, sum.Adversary.HonestVerified)
	assert.Equal(t, int64(3), sum.Adversary.SuspectedHonest)
	assert.Equal(t, int64(20), sum.Adversary.Lies)
	assert.Equal(t, int64(4), sum.Adversary.Suspicions["gossip"])
	assert.Equal(t, 1, sum.Adversary.ByKind["forged-gossip"].Detected)
	assert.Zero(t, sum.Adversary.ByKind["advantage-lie"].Detected)

	// The spectators' namings: of the liar, counted; of an honest machine
	// (or, without a liar, of any machine), a failure.
	seen := ok
	seen.Spectators.Named = map[int]int{0: 3, 3: 1} // the liar (machine 0) and a relaying spectator (node 3)
	wrong := ok
	wrong.Spectators.Named = map[int]int{2: 1}
	sum = summarize(o, []match.Result{seen, wrong}, rollback.TwoBackups)
	require.Len(t, sum.Failures, 1)
	assert.Contains(t, sum.Failures[0].Reason, "spectators named honest machines 1 times")
	assert.Equal(t, 1, sum.Adversary.NamedBySpectators)
	assert.Equal(t, int64(1), sum.Adversary.SpectatorsSuspectedHonest)
	honest := match.Result{Completed: true, Verified: true, Rollbacks: 1}
	honest.Spectators.Named = map[int]int{0: 1}
	sum = summarize(options{matches: 1, players: 3, machines: 3, frames: 60, seed: 7}, []match.Result{honest}, rollback.TwoBackups)
	require.Len(t, sum.Failures, 1, "a spectator that names a machine of an honest match")

	out.Reset()
	errOut.Reset()
	run([]string{"-matches", "1", "-frames", "300", "-json", "-"}, &out, &errOut)
	m = nil
	require.NoError(t, json.Unmarshal(out.Bytes(), &m), errOut.String())
	assert.NotContains(t, m, "adversary")
	assert.Contains(t, m, "suspects")
	assert.Zero(t, m["suspects"])
}

// TestJoinAgainstALiar: a machine comes back into a match of 4 (or joins
// it late) whose liar withholds its counts of the others' frames, forges
// reports that a machine left, or equivocates. Each denied the join
// before. The withheld counts held the anchor countSlack behind the liar's
// inputs, below the take-over frame where every machine waited for the
// joiner (0 of 10 matches verified); with the anchor raised to the
// statements' settled frontier, the forger's checksum of the take-over
// frame, unlike the others', refuted each honest source in turn
// (ErrJoinState): a majority of the checksums now carries the take-over.
// Seed 71: the joiner watched through the forger after the others had cut
// it off, and its final frames stopped short of the take-over frame; it
// now moves to a source that plays. Seeds 1027, 1061, 1068 and 1096: the
// forger's stale report that the leaver left at frame 0 was raised to
// each honest machine's own floor for the forger, and two honest machines
// cut the leaver at different frames (TestForgedGossipCutAgrees). Late join, equivocate: the proof of
// the equivocation went to the joiner every round trip for ever (its
// report of the departure was the first frame it held), holding back every
// repair to it, until a statement it lost stalled the match 16 intervals
// on and the others cut it off (4 of 20 verified). Seed 7 guards the
// proposal past a new source's state at the take-over frame (one that
// accepted it holds its final frames there, without the frame before's
// inputs): with the refusals of this round's first try at seeds 3 and 8,
// the joiner took over there against a zero base and named honest
// machines for equivocation. Seeds 3 and 8: the equivocator, cut off and
// hundreds of frames behind, refused every proposal as too far ahead of
// it, and each refusal moved the proposal to the watch's newest frame, so
// the others' acceptances started again every 100 ms until the join timed
// out; a refusal naming a frame before the proposal no longer moves it.
func TestJoinAgainstALiar(t *testing.T) {
	for _, tc := range []struct{ join, kind, seed, machine string }{
		{"-rejoin", "withhold-counts", "1", "0"}, {"-rejoin", "withhold-counts", "2", "0"},
		{"-rejoin", "forged-gossip", "1", "0"}, {"-rejoin", "forged-gossip", "5", "0"}, {"-rejoin", "forged-gossip", "71", "3"},
		{"-rejoin", "forged-gossip", "1027", "3"}, {"-rejoin", "forged-gossip", "1061", "1"}, {"-rejoin", "forged-gossip", "1068", "0"},
		{"-rejoin", "forged-gossip", "1096", "0"},
		{"-late-join", "equivocate", "2", "1"}, {"-late-join", "equivocate", "4", "3"},
		{"-late-join", "equivocate", "7", "2"}, {"-late-join", "equivocate", "3", "2"}, {"-late-join", "equivocate", "8", "3"},
	} {
		t.Run(tc.join+"/"+tc.kind+"/"+tc.seed, func(t *testing.T) {
			t.Parallel()
			var out, errs bytes.Buffer
			code := run([]string{"-players", "4", tc.join, "1", "-profile", "wifi", "-seed", tc.seed, "-matches", "1",
				"-adversary", tc.kind, "-adversary-machine", tc.machine, "-json", "-"}, &out, &errs)
			require.Equal(t, 0, code, "%s\n%s", errs.String(), out.String())
		})
	}
}
