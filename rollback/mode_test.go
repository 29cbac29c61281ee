package rollback

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// modeOf names the advancer s runs.
func modeOf(s *Session) string {
	switch reflect.ValueOf(s.advance).Pointer() {
	case reflect.ValueOf((*Session).advanceRollback).Pointer():
		return "rollback"
	case reflect.ValueOf((*Session).advanceLockstep).Pointer():
		return "lockstep"
	case reflect.ValueOf((*Session).advanceJoin).Pointer():
		return "joining"
	}
	return "none"
}

// TestModes: the mode is chosen once when the session is made, from its
// Config, and the transitions set what they name.
func TestModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"rollback", func(*Config) {}, "rollback"},
		{"lockstep", func(c *Config) { c.Lockstep, c.MaxRollback, c.PlayoutDelay = true, 0, -1 }, "lockstep"},
		{"joining", func(c *Config) { c.InProgress = true }, "joining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := fourPlayers(t, tc.edit)
			assert.Equal(t, tc.want, modeOf(s))
			s.becomeJoining()
			assert.Equal(t, "joining", modeOf(s))
			s.becomePlaying()
			want := tc.want
			if want == "joining" {
				want = "rollback"
			}
			assert.Equal(t, want, modeOf(s), "playing after a join is the match's own mode")
		})
	}
}
