//go:build !rewind_adversary

package rollback

import "github.com/rewindgg/rewind/rollback/internal/wire"

// This file is the honest build, every game's: the soak's adversary
// (liar.go, compiled only with the build tag rewind_adversary) is absent,
// and each of its hooks below does nothing. A session's lie is always nil.

// adversary is the soak's lying session: never one in this build.
type adversary struct{}

func liarOf(Transport) *adversary { return nil }

func (*adversary) lieGossip(*wire.Gossip, Frame)                                {}
func (*adversary) lieRTTs([]uint32)                                             {}
func (*adversary) lieEnd(_ *Session, end Frame) Frame                           { return end }
func (*adversary) liePacket(*Session, int, *wire.InputPacket)                   {}
func (*adversary) lieExtra(*Session, int, *wire.InputPacket, Frame)             {}
func (*adversary) lieChecksum(*Session, int, Frame, uint64)                     {}
func (*adversary) lieStatement(*statements, int, int, int, int32, *wire.Attest) {}
func unsigned(Transport) bool                                                   { return false }
func corruptJoinState(Transport) bool                                           { return false }
