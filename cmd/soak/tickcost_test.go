package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// soakJSON runs the soak with args and -json, and returns its report as
// decoded both ways.
func soakJSON(t *testing.T, args ...string) (map[string]any, Summary, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "soak.json")
	var out, errOut bytes.Buffer
	code := run(append(args, "-json", path), &out, &errOut)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	var s Summary
	require.NoError(t, json.Unmarshal(raw, &s))
	return m, s, out.String()
}

// TestTickCostModel: with two backups -step-cost changes nothing in the
// soak but adds the model's figures; with the default adaptive policy,
// told the model's costs, it changes only which frames are saved (the
// work of the rollbacks, not their number nor the game); with the copy
// cost given the figures are the same run after run; they add up; a
// profile with more rollbacks costs more than lan, and a larger state
// more than the arena's own.
func TestTickCostModel(t *testing.T) {
	t.Parallel()
	base := []string{"-matches", "2", "-frames", "600", "-parallel", "1", "-profile", "wifi"}
	model := []string{"-step-cost", "500us", "-copy-cost", "0.05"}
	twoBackups := append(append([]string{}, base...), "-snapshots", "two-backups")
	plain, _, _ := soakJSON(t, twoBackups...)
	modelled, _, _ := soakJSON(t, append(twoBackups, model...)...)
	assert.NotContains(t, plain, "tick_cost")
	for _, m := range []map[string]any{plain, modelled} {
		delete(m, "wall_seconds")
	}
	delete(modelled, "tick_cost")
	assert.Equal(t, plain, modelled, "two backups: the model changes nothing but adds tick_cost")

	plain, plainS, _ := soakJSON(t, base...)
	modelled, s, out := soakJSON(t, append(base, model...)...)
	require.NotNil(t, s.TickCost)
	assert.Contains(t, out, "tick cost (Step 500µs, copy 0.05 ns/B")
	assert.Less(t, s.ResimulatedFrames, plainS.ResimulatedFrames/2, "told a dear Step, the adaptive policy saves every frame")
	for _, m := range []map[string]any{plain, modelled} {
		// The work of the rollbacks, and the sounds of the frames stepped
		// in a snapshot (which the Observer hears as extrapolated).
		for _, k := range []string{"wall_seconds", "tick_cost", "resimulated_frames", "max_resimulated_frames",
			"resimulated_per_rollback_mean", "resimulated_per_rollback_p95", "sound", "sound_per_match"} {
			delete(m, k)
		}
	}
	assert.Equal(t, plain, modelled, "adaptive: the model changes only the rollbacks' work")

	tc := *s.TickCost
	t.Logf("wifi: %+v", tc)
	assert.Equal(t, int64(500_000), tc.StepCostNs)
	assert.Equal(t, 0.05, tc.CopyNsPerByte)
	assert.False(t, tc.CopyCostMeasured)
	assert.Positive(t, tc.CopyBytes)
	assert.Equal(t, int64(2*2*600), tc.Simulated, "every machine simulates every frame once as new")
	assert.GreaterOrEqual(t, tc.Steps, tc.Simulated+s.ResimulatedFrames)
	assert.Equal(t, s.Rollbacks, tc.Restores)
	assert.Equal(t, (tc.Saves+tc.Restores)*int64(tc.CopyBytes), tc.BytesCopied)
	// Every tick's steps at 0.5 ms and copies at 0.05 ns a byte, over 20 s
	// of game per machine.
	want := (float64(tc.Steps)*0.5 + float64(tc.BytesCopied)*0.05e-6) / (float64(tc.Simulated) / 60)
	assert.InDelta(t, want, tc.CPUMsPerSecond, 0.002)
	assert.GreaterOrEqual(t, tc.P50Ms, 0.5)
	assert.LessOrEqual(t, tc.P50Ms, tc.P99Ms)
	assert.Less(t, tc.P99Ms, tc.MaxMs)
	assert.GreaterOrEqual(t, tc.MaxMs, 0.5*float64(s.MaxResimulatedFrames+1))

	_, again, _ := soakJSON(t, append(base, model...)...)
	assert.Equal(t, tc, *again.TickCost, "the same seed and -copy-cost: the same figures")

	// far re-simulates more than lan (deeper mispredictions): it costs more.
	withProfile := func(name string) Summary {
		args := append(append([]string{}, base...), model...)
		args[len(base)-1] = name
		_, s, _ := soakJSON(t, args...)
		t.Logf("%s: %+v", name, *s.TickCost)
		return s
	}
	lan, far := withProfile("lan"), withProfile("far")
	assert.Greater(t, far.ResimulatedFrames, lan.ResimulatedFrames)
	assert.Greater(t, far.TickCost.CPUMsPerSecond, lan.TickCost.CPUMsPerSecond)
	assert.Greater(t, far.TickCost.P99Ms, lan.TickCost.P99Ms)

	_, big, _ := soakJSON(t, append(append(base, model...), "-state-size", "1MiB")...)
	t.Logf("wifi at 1 MiB: %+v", *big.TickCost)
	assert.Equal(t, 1<<20, big.TickCost.CopyBytes)
	assert.Equal(t, tc.Steps, big.TickCost.Steps)
	assert.Greater(t, big.TickCost.CPUMsPerSecond, tc.CPUMsPerSecond)
}

// TestTickCostMeasured: without -copy-cost the soak measures it, says so
// with the flag that reproduces it, and writes it to the JSON.
func TestTickCostMeasured(t *testing.T) {
	t.Parallel()
	_, s, out := soakJSON(t, "-matches", "1", "-frames", "300", "-step-cost", "50us", "-state-size", "64KiB")
	require.NotNil(t, s.TickCost)
	assert.True(t, s.TickCost.CopyCostMeasured)
	assert.Positive(t, s.TickCost.CopyNsPerByte)
	assert.Equal(t, 64<<10, s.TickCost.CopyBytes)
	assert.Contains(t, out, "-copy-cost "+formatNs(s.TickCost.CopyNsPerByte)+" reproduces it")
}

// TestSizeFlag: byte counts with and without a unit.
func TestSizeFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"4096": 4096, "64KiB": 64 << 10, "1MiB": 1 << 20, "1GiB": 1 << 30, "10B": 10} {
		var s sizeFlag
		require.NoError(t, s.Set(in), in)
		assert.Equal(t, sizeFlag(want), s, in)
	}
	for _, in := range []string{"", "MiB", "-1", "2GiB", "1.5MiB", "1 TiB"} {
		var s sizeFlag
		assert.Error(t, s.Set(in), in)
	}
}
