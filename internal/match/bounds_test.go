package match

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// TestBounds checks bounds.go's copies of the rollback package's bounds:
// NewSession accepts each and refuses one past it.
func TestBounds(t *testing.T) {
	session := func(set func(*rollback.Config)) error {
		arena, err := savestate.New(64)
		require.NoError(t, err)
		c := rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{8}, State: arena,
			Game: rollback.GameFunc(func(rollback.Frame, []rollback.PlayerInput) {})}
		set(&c)
		s, err := rollback.NewSession(c)
		if err == nil {
			s.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name string
		set  func(*rollback.Config, int)
		max  int
	}{
		{"MaxRollback", func(c *rollback.Config, n int) { c.MaxRollback = n }, maxRollbackLimit},
		{"InputLag", func(c *rollback.Config, n int) { c.InputLag = n }, maxInputLag},
	} {
		require.NoError(t, session(func(c *rollback.Config) { tc.set(c, tc.max) }), tc.name)
		err := session(func(c *rollback.Config) { tc.set(c, tc.max+1) })
		var ce *rollback.ConfigError
		require.True(t, errors.As(err, &ce), "%s %d: %v", tc.name, tc.max+1, err)
		require.Equal(t, tc.name, ce.Field)
	}
}
