package rollback_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// onlineOpts configures onlineMatch: each machine's marks (nil: none),
// whether it makes bundles, and Config.Recover.
type onlineOpts struct {
	marks   [2]*desync.Marks
	bundles [2]bool
	recover bool
	profile netsim.Profile
}

// onlineMatch plays two machines of games gs, checksums every every
// frames, until each one's report names the field and the first
// divergent frame (or ticks run out), and returns the reports: the error
// Advance returned last, or Stats.Desync with Config.Recover. No bundle
// is compared offline here: what the reports name, the machines found.
func onlineMatch(t *testing.T, gs [2]rollback.Game, arenas [2]*savestate.Arena, o onlineOpts, every, ticks int) [2]*desync.Error {
	t.Helper()
	nw, err := netsim.New(2, 1, o.profile)
	require.NoError(t, err)
	var ss [2]*rollback.Session
	var got [2]*desync.Error
	for i := range ss {
		cfg := rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: arenas[i], Game: gs[i], Transport: nw.Endpoint(i), Marks: o.marks[i],
			Clock: nw.Now, Rand: match.SeededRand(1, i), SessionID: 5, ChecksumEvery: every, Recover: o.recover}
		if o.bundles[i] {
			cfg.Bundle = func(*bundle.Bundle) {}
		}
		ss[i], err = rollback.NewSession(cfg)
		require.NoError(t, err)
	}
	done := func(e *desync.Error) bool { return e != nil && e.Field != "" && e.FirstFrame > 0 }
	for tick := 0; tick < ticks && !(done(got[0]) && done(got[1])); tick++ {
		for i, s := range ss {
			offer(t, s, rollback.PlayerID(i), rollback.Input((tick*(i+1))%16))
			if _, err := s.Advance(); err != nil {
				require.True(t, errors.As(err, &got[i]), "unexpected error %v", err)
			}
			if o.recover {
				got[i] = s.Stats().Desync
			}
		}
		nw.Advance(match.Tick)
	}
	return got
}

// TestTimeMachineNamesSystem: one machine's game flips a bit inside its
// "hit" system at a frame; with marks alone (no bundle), or bundles
// alone (the frame, no system), each machine's own report names the
// field, the first divergent frame (the one after the fault) and "hit":
// the two machines exchanged their re-simulations' checksums and marks.
// With Config.Recover the recovery's report (Stats.Desync) does too.
func TestTimeMachineNamesSystem(t *testing.T) {
	for _, tc := range []struct {
		name         string
		every, fault int
		marks        bool
		bundles      bool
		recover      bool
		profile      netsim.Profile
	}{
		{name: "marks", every: 10, fault: 25, marks: true},
		{name: "marks-every-300", every: 300, fault: 350, marks: true},
		{name: "marks-and-bundles", every: 10, fault: 25, marks: true, bundles: true},
		{name: "bundles-without-marks", every: 10, fault: 25, bundles: true},
		{name: "marks-recover", every: 10, fault: 25, marks: true, recover: true},
		{name: "marks-lossy", every: 100, fault: 150, marks: true, profile: netsim.Profile{Latency: 40e6, Jitter: 10e6, Loss: 0.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gs [2]*systemsGame
			var o onlineOpts
			for i := range gs {
				gs[i] = newSystemsGame(t)
				if tc.marks {
					o.marks[i] = gs[i].marks
				} else {
					gs[i].marks = nil
				}
				o.bundles[i] = tc.bundles
			}
			o.recover, o.profile = tc.recover, tc.profile
			gs[1].fault, gs[1].faultAt = true, rollback.Frame(tc.fault)
			es := onlineMatch(t, [2]rollback.Game{gs[0], gs[1]}, [2]*savestate.Arena{gs[0].a, gs[1].a}, o, tc.every, 3*tc.every+tc.fault+600)
			for i, e := range es {
				require.NotNil(t, e, "machine %d reported", i)
				assert.Equal(t, int32(tc.fault/tc.every*tc.every+tc.every), e.Frame, "machine %d: the checksum frame", i)
				assert.NotEmpty(t, e.Field, "machine %d names the field", i)
				assert.Equal(t, int32(tc.fault+1), e.FirstFrame, "machine %d: the first divergent frame: %v", i, e)
				if tc.marks {
					assert.Equal(t, "hit", e.System, "machine %d: %v", i, e)
				} else {
					assert.Empty(t, e.System, "machine %d: no marks, no system", i)
				}
				assert.Equal(t, tc.recover, e.Recovered, "machine %d", i)
				if tc.marks {
					assert.Contains(t, e.Error(), fmt.Sprintf("the states first differ at frame %d, after system hit of frame %d's step", tc.fault+1, tc.fault))
				}
			}
		})
	}
}

// TestTimeMachineMapOrder: the real non-determinism of TestBundleMapOrder
// (a Go map ranged over in the "ai" system from frame 50 on), named by
// the machines themselves: each report names "ai" and the same first
// divergent frame, with marks and no bundle.
func TestTimeMachineMapOrder(t *testing.T) {
	var gs [2]*mapGame
	var o onlineOpts
	for i := range gs {
		gs[i] = newMapGame(t)
		gs[i].marks = &desync.Marks{}
		o.marks[i] = gs[i].marks
	}
	es := onlineMatch(t, [2]rollback.Game{gs[0], gs[1]}, [2]*savestate.Arena{gs[0].a, gs[1].a}, o, 10, 600)
	for i, e := range es {
		require.NotNil(t, e, "machine %d reported", i)
		assert.GreaterOrEqual(t, e.FirstFrame, int32(51), "machine %d: %v", i, e)
		assert.Less(t, e.FirstFrame, int32(61), "machine %d: %v", i, e)
		assert.Equal(t, "ai", e.System, "machine %d: %v", i, e)
		assert.Equal(t, es[0].FirstFrame, e.FirstFrame, "both name the same frame")
		assert.Contains(t, e.Field, "[4]uint64[3]", "machine %d", i)
	}
}

// TestTimeMachineWithheld: a peer that traces nothing (no marks, no
// bundle: its payload has no trace section) still gets the field named
// at both ends, as before; the machine that traces names no frame or
// system, and its report is not held back for them.
func TestTimeMachineWithheld(t *testing.T) {
	var gs [2]*systemsGame
	var o onlineOpts
	for i := range gs {
		gs[i] = newSystemsGame(t)
	}
	o.marks[0] = gs[0].marks
	gs[1].marks = nil
	gs[1].fault, gs[1].faultAt = true, 25
	es := onlineMatch(t, [2]rollback.Game{gs[0], gs[1]}, [2]*savestate.Arena{gs[0].a, gs[1].a}, o, 10, 300)
	for i, e := range es {
		require.NotNil(t, e, "machine %d reported", i)
		assert.NotEmpty(t, e.Field, "machine %d names the field", i)
		assert.Zero(t, e.FirstFrame, "machine %d: no trace from the peer, or none of its own", i)
		assert.Empty(t, e.System, "machine %d", i)
	}
}
