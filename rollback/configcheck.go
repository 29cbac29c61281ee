package rollback

import "fmt"

// This file checks a Config (NewSession): every field's bounds, who plays
// where, and the fields that only one mode takes.

// validate checks c without modifying it.
func (c *Config) validate() error {
	if err := c.validatePlayers(); err != nil {
		return err
	}
	if err := c.Layout.Check(); err != nil {
		return err
	}
	if c.State == nil {
		return cfgErr("State", "nil arena")
	}
	if c.Game == nil {
		return cfgErr("Game", "nil")
	}
	if c.InProgress {
		switch {
		case len(c.Peers) == 0:
			return cfgErr("InProgress", "no peers to join")
		case c.Lockstep:
			return cfgErr("InProgress", "lockstep matches cannot be joined in progress")
		case c.Recorder != nil:
			return cfgErr("InProgress", "with a Recorder: a joiner has no inputs before the state it joins at")
		case c.SyncTest != 0:
			return cfgErr("InProgress", "with SyncTest")
		}
	}
	for i, p := range c.Peers {
		if p.Late && c.Lockstep {
			return cfgErr(fmt.Sprintf("Peers[%d].Late", i), "lockstep matches cannot be joined in progress")
		}
	}
	if len(c.Peers) > 0 && isNil(c.Transport) {
		return cfgErr("Transport", "nil, with %d peers", len(c.Peers))
	}
	if err := c.validateMode(); err != nil {
		return err
	}
	return c.validateTuning()
}

// validatePlayers checks that every player is local or exactly one peer's.
func (c *Config) validatePlayers() error {
	if c.Players < 1 || c.Players > MaxPlayers {
		return cfgErr("Players", "%d (want 1 to %d)", c.Players, MaxPlayers)
	}
	var owner [MaxPlayers]string
	claim := func(field string, p PlayerID) error {
		if p < 0 || int(p) >= c.Players {
			return cfgErr(field, "player %d does not exist (Players is %d)", p, c.Players)
		}
		if owner[p] != "" {
			return cfgErr(field, "player %d is also listed as %s", p, owner[p])
		}
		owner[p] = field
		return nil
	}
	if len(c.Local) == 0 {
		return cfgErr("Local", "no local players")
	}
	for i, p := range c.Local {
		if err := claim(fmt.Sprintf("Local[%d]", i), p); err != nil {
			return err
		}
	}
	for i, peer := range c.Peers {
		if len(peer.Players) == 0 {
			return cfgErr(fmt.Sprintf("Peers[%d].Players", i), "a peer with no players")
		}
		for j, p := range peer.Players {
			if err := claim(fmt.Sprintf("Peers[%d].Players[%d]", i, j), p); err != nil {
				return err
			}
		}
	}
	for p := range c.Players {
		if owner[p] == "" {
			return cfgErr("Players", "player %d is neither local nor any peer's", p)
		}
	}
	return nil
}

// validateMode checks the mode and the fields that only one mode takes.
func (c *Config) validateMode() error {
	if c.Lockstep {
		switch {
		case c.TickRate < 0 || c.TickRate > maxTickRate:
			return cfgErr("TickRate", "%d (want 1 to %d, or 0 for %d)", c.TickRate, maxTickRate, defaultTickRate)
		case c.MaxRollback != 0:
			return cfgErr("MaxRollback", "%d: lockstep never rolls back (leave it 0)", c.MaxRollback)
		case c.Snapshots == ConstantCost:
			return cfgErr("Snapshots", "%v: lockstep never rolls back", c.Snapshots)
		case c.SnapshotInterval != 0:
			return cfgErr("SnapshotInterval", "%d: lockstep never rolls back (leave it 0)", c.SnapshotInterval)
		case c.SyncTest != 0:
			return cfgErr("SyncTest", "%d: the sync test needs rollback mode", c.SyncTest)
		case c.Predictor != nil:
			return cfgErr("Predictor", "set: lockstep never predicts")
		case c.NoFrameAdvantage:
			return cfgErr("NoFrameAdvantage", "set: lockstep keeps no frame advantage to smooth")
		case c.FixedInputLag:
			return cfgErr("FixedInputLag", "set: lockstep's input lag is always InputLag")
		case c.SendEveryTick:
			return cfgErr("SendEveryTick", "set: lockstep sends on its own schedule")
		case c.RejoinWindow != 0:
			return cfgErr("RejoinWindow", "%v: no machine comes back into a lockstep match", c.RejoinWindow)
		case c.Recover:
			return cfgErr("Recover", "set: lockstep keeps no states to recover from")
		}
	} else {
		switch {
		case c.TickRate != 0 && c.TickRate != defaultTickRate:
			return cfgErr("TickRate", "%d: rollback mode runs at %d Hz (other rates are for Lockstep)", c.TickRate, defaultTickRate)
		case c.PlayoutDelay != 0:
			return cfgErr("PlayoutDelay", "%v: a playout delay is for Lockstep", c.PlayoutDelay)
		}
	}
	return nil
}

// validateTuning checks the bounds of the tuning fields.
func (c *Config) validateTuning() error {
	if c.MaxRollback < 0 || c.MaxRollback > maxRollbackLimit {
		return cfgErr("MaxRollback", "%d (want 1 to %d, or 0 for %d)", c.MaxRollback, maxRollbackLimit, defaultMaxRollback)
	}
	if c.InputLag < 0 || c.InputLag > maxInputLag {
		return cfgErr("InputLag", "%d (want 0 to %d)", c.InputLag, maxInputLag)
	}
	if c.Snapshots > ConstantCost {
		return cfgErr("Snapshots", "unknown policy %d", c.Snapshots)
	}
	if err := c.validateCadence(); err != nil {
		return err
	}
	if c.Recover && (c.ChecksumData != nil || c.ChecksumEvery < 0) {
		return cfgErr("Recover", "set without checksums of the whole arena (ChecksumData nil, ChecksumEvery not negative)")
	}
	if c.SyncTest < 0 || c.SyncTest > c.maxRollback() {
		return cfgErr("SyncTest", "%d (want 0 to MaxRollback, %d)", c.SyncTest, c.maxRollback())
	}
	if err := c.Timeouts.check(); err != nil {
		return err
	}
	if c.QualityInterval < 0 {
		return cfgErr("QualityInterval", "negative duration %v", c.QualityInterval)
	}
	if c.RedundantFrames < -1 || c.RedundantFrames > 255 {
		return cfgErr("RedundantFrames", "%d (want -1 to 255)", c.RedundantFrames)
	}
	if len(c.Secret) > 0 && len(c.Secret) < 16 {
		return cfgErr("Secret", "%d bytes (want at least 16, or none)", len(c.Secret))
	}
	if c.MaxSpectators < 0 || c.MaxSpectators > maxGuests {
		return cfgErr("MaxSpectators", "%d (want 0 to %d)", c.MaxSpectators, maxGuests)
	}
	if c.TransferRate < 0 {
		return cfgErr("TransferRate", "negative rate %d", c.TransferRate)
	}
	if c.SpectatorDelay < 0 || c.SpectatorDelay > maxSpectatorDelay {
		return cfgErr("SpectatorDelay", "%v (want 0 to %v)", c.SpectatorDelay, maxSpectatorDelay)
	}
	if c.MaxSpectators > 0 && (c.Transport == nil || c.SyncTest > 0) {
		return cfgErr("MaxSpectators", "%d spectators need a Transport (and no sync test)", c.MaxSpectators)
	}
	if c.SyncTest > 0 && len(c.Peers) > 0 {
		return cfgErr("SyncTest", "sync-test mode needs every player local (%d peers given)", len(c.Peers))
	}
	return nil
}
