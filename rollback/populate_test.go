package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPopulate: every zero value that means a default is filled in, in
// each mode; the values that mean "none" or "off" and the values set stay;
// populating twice changes nothing.
func TestPopulate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want func(*Config) // the populated fields checked
	}{
		{"rollback defaults", Config{}, func(c *Config) {
			c.MaxRollback, c.RedundantFrames, c.ChecksumEvery = 20, 8, 500
			c.QualityInterval, c.RejoinWindow, c.TransferRate = time.Second, time.Minute, defaultTransferRate
			c.Timeouts = Timeouts{Handshake: 10 * time.Second, Interrupt: 750 * time.Millisecond, Disconnect: 5 * time.Second}
		}},
		{"lockstep defaults", Config{Lockstep: true}, func(c *Config) {
			c.MaxRollback, c.RedundantFrames, c.ChecksumEvery = 20, -1, 500
			c.QualityInterval, c.RejoinWindow, c.TransferRate = time.Second, time.Minute, defaultTransferRate
			c.Timeouts = Timeouts{Handshake: 10 * time.Second, Interrupt: 750 * time.Millisecond, Disconnect: 5 * time.Second}
			c.TickRate, c.PlayoutDelay = 60, 100*time.Millisecond
		}},
		{"off and none stay", Config{ChecksumEvery: -1, RedundantFrames: -1, RejoinWindow: -1, Lockstep: true, PlayoutDelay: -1},
			func(c *Config) {
				c.MaxRollback, c.RedundantFrames, c.ChecksumEvery = 20, -1, -1
				c.QualityInterval, c.RejoinWindow, c.TransferRate = time.Second, -1, defaultTransferRate
				c.Timeouts = Timeouts{Handshake: 10 * time.Second, Interrupt: 750 * time.Millisecond, Disconnect: 5 * time.Second}
				c.TickRate, c.PlayoutDelay = 60, -1
			}},
		{"set values stay", Config{MaxRollback: 8, RedundantFrames: 3, ChecksumEvery: 10, QualityInterval: time.Minute,
			Timeouts: Timeouts{Disconnect: time.Second}, Snapshots: ConstantCost, TransferRate: 1000}, func(c *Config) {
			c.MaxRollback, c.RedundantFrames, c.ChecksumEvery = 8, 3, 10
			c.QualityInterval, c.RejoinWindow, c.TransferRate = time.Minute, time.Minute, 1000
			c.Timeouts = Timeouts{Handshake: 10 * time.Second, Interrupt: 750 * time.Millisecond, Disconnect: time.Second}
			c.Snapshots = ConstantCost
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cfg.populate()
			require.NotNil(t, got.Clock)
			require.NotNil(t, got.Rand)
			want := tc.cfg
			tc.want(&want)
			want.Rand = got.Rand
			noClock := func(c Config) Config { c.Clock = nil; return c } // funcs never compare equal
			assert.Equal(t, want, noClock(got))
			assert.Equal(t, noClock(got), noClock(got.populate()), "populating twice")
		})
	}
}
