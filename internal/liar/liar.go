// Package liar is test support for the adversary soak (docs/security.md,
// "A peer that lies"): a session whose Config carries a Script
// (rollback.WithTestHooks, which exists only in a build with the tag
// rewind_adversary) lies, as the Script's Kind says, in the fields an
// authenticated peer controls. A game cannot reach it: the package is
// internal to the module, and the rollback package a game builds has no
// way to ask for a lie.
//
// Each lie is one a modified client could tell; the honest machines must
// keep playing at full speed, agree with each other, and (for the lies
// that gain anything) name the liar.
package liar

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Kind -linecomment -output=strings.go

// Kind is one way to lie.
type Kind uint8

// Kinds. The comment of each is its name on the soak's command line.
const (
	// None tells no lie.
	None Kind = iota // none
	// ForgedGossip says, in every packet, that each third machine left at
	// a frame well behind the one it is at (2 machines: nothing to say).
	ForgedGossip // forged-gossip
	// AdvantageLie claims the largest input lag the header can say, and
	// sends 8 extra header-only packets a tick that claim to be 255 frames
	// behind.
	AdvantageLie // advantage-lie
	// Lookahead holds each of its inputs back until it has every peer's
	// input for the same frame and the 9 after it (it could choose it
	// after seeing theirs), and acknowledges 20 frames fewer than it has
	// to hide the lead.
	Lookahead // lookahead
	// InflateLag acknowledges 20 frames fewer than it has and claims the
	// largest input lag, to raise the others' input lag.
	InflateLag // inflate-lag
	// WithholdCounts never says how many frames of a third machine it has
	// (a legal encoding; 2 machines: nothing to withhold).
	WithholdCounts // withhold-counts
	// StallAck acknowledges 200 frames fewer than it has.
	StallAck // stall-ack
	// ForgedChecksum sends, besides its real checksums, one for a frame it
	// cannot have finished (2^31-1024), and with 3 or more machines a
	// wrong checksum of a real frame to one of them.
	ForgedChecksum // forged-checksum
	// Equivocate sends one peer another input than the rest for one frame
	// in every 100 (2 machines: re-sends an already-sent frame with
	// another input).
	Equivocate // equivocate
	// StartGrief reports round trips of 2^32-1 µs in the start protocol.
	StartGrief // start-grief
	// HiddenLookahead looks ahead as Lookahead does, and once the match
	// runs never answers a ping, so that a machine that has not measured
	// its round trip at the start (Config.NoStartDelay, a late joiner, a
	// rejoin) has none for it. (It answers the start protocol's: without
	// them the match does not start.)
	HiddenLookahead // hidden-lookahead
	// FalseState hands every spectator, and every machine that comes
	// back, a state with one bit flipped, and flips a bit of one final
	// input in every 100 frames it feeds them.
	FalseState // false-state
	// NumKinds is the number of kinds, None included.
	NumKinds // kinds
)

// Parse returns the kind named s (its String).
func Parse(s string) (Kind, bool) {
	for k := range NumKinds {
		if k.String() == s {
			return k, true
		}
	}
	return None, false
}

// Script is what a lying session does, and what it counts as it goes.
// Only the session's goroutine touches it while the match runs.
type Script struct {
	Kind Kind
	// Lies counts the messages the session changed or added.
	Lies int64
	// Lookahead: for each of its frames f, when it first sent its input
	// for f, how many of the slowest peer's inputs from f on it already
	// had (its lookahead, in frames; negative: none); Looked sums them
	// over Decided frames.
	Looked, Decided int64
}
