package netplay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rtc"
	rdv "github.com/rewindgg/rewind/rtc/lobby"
)

// Given says which settings this machine was given explicitly (a flag on
// the command line, a parameter in the page's address): those must match
// the host's; the others are taken from it.
type Given struct{ Frames, Round, Target bool }

// Agree returns the settings a joiner plays by: the host's, unless this
// machine was given a different value for one of them, which it refuses
// with both values named: machines that disagree would end their rounds
// or their match on different frames.
func Agree(host, mine play.Settings, given Given) (play.Settings, error) {
	var diffs []string
	if given.Frames && mine.Frames != host.Frames {
		diffs = append(diffs, fmt.Sprintf("the host's match lasts %s, this machine's %s (-frames %d against %d)",
			frames(host.Frames), frames(mine.Frames), host.Frames, mine.Frames))
	}
	if given.Round && mine.RoundFrames != host.RoundFrames {
		diffs = append(diffs, fmt.Sprintf("the host's rounds last %s, this machine's %s (-round)",
			frames(host.RoundFrames), frames(mine.RoundFrames)))
	}
	if given.Target && mine.Target != host.Target {
		diffs = append(diffs, fmt.Sprintf("the host plays to a score of %d, this machine to %d (-target; 0 is none)", host.Target, mine.Target))
	}
	if len(diffs) > 0 {
		return host, fmt.Errorf("the match settings differ: %s; start this machine without them to play the host's", strings.Join(diffs, "; "))
	}
	return host, nil
}

// frames writes a frame count as a person reads it.
func frames(n int) string {
	if n == 0 {
		return "without end"
	}
	return fmt.Sprintf("%d frames (%.4g s)", n, float64(n)/60)
}

// settingsPrefix starts the settings' signal. The rendezvous relays only
// WebRTC's signal kinds, so the settings travel as a candidate that no
// ICE agent would take for one: a machine that does not know them (an
// older build) drops it as malformed.
const settingsPrefix = "rewind-arena-settings "

// encodeSettings writes s as a settings signal's data.
func encodeSettings(s play.Settings) string {
	return fmt.Sprintf("%sframes=%d round=%d target=%d", settingsPrefix, s.Frames, s.RoundFrames, s.Target)
}

// decodeSettings reads a settings signal's data; ok is false for any other
// signal.
func decodeSettings(data string) (s play.Settings, ok bool) {
	rest, found := strings.CutPrefix(data, settingsPrefix)
	if !found {
		return s, false
	}
	if _, err := fmt.Sscanf(rest, "frames=%d round=%d target=%d", &s.Frames, &s.RoundFrames, &s.Target); err != nil {
		return s, false
	}
	if s.Frames < 0 || s.Frames > maxFrames || s.Rules.Check() != nil {
		return s, false
	}
	return s, true
}

// refusedPrefix starts a joiner's refusal of the creator's settings, sent
// back to seat 0 (as a candidate, like the settings) with the settings
// the joiner was started with.
const refusedPrefix = "rewind-arena-refused "

// SendRefusal tells seat 0 that this machine refuses the match's
// settings, being started with mine: the creator's dial then fails at
// once with a *RefusedError rather than waiting out its timeout.
func SendRefusal(ctx context.Context, sig rtc.Signaler, mine play.Settings) error {
	return sig.Send(ctx, 0, rdv.KindCandidate, refusedPrefix+strings.TrimPrefix(encodeSettings(mine), settingsPrefix))
}

// RefusedError is the creator's dial's error when a joiner refused the
// match's settings (SendRefusal).
type RefusedError struct {
	Machine      int
	Theirs, Ours play.Settings
}

func (e *RefusedError) Error() string {
	var diffs []string
	if e.Theirs.Frames != e.Ours.Frames {
		diffs = append(diffs, fmt.Sprintf("a match of %s, not %s (-frames %d against %d)", frames(e.Theirs.Frames), frames(e.Ours.Frames), e.Theirs.Frames, e.Ours.Frames))
	}
	if e.Theirs.RoundFrames != e.Ours.RoundFrames {
		diffs = append(diffs, fmt.Sprintf("rounds of %s, not %s (-round)", frames(e.Theirs.RoundFrames), frames(e.Ours.RoundFrames)))
	}
	if e.Theirs.Target != e.Ours.Target {
		diffs = append(diffs, fmt.Sprintf("a score target of %d, not %d (-target)", e.Theirs.Target, e.Ours.Target))
	}
	return fmt.Sprintf("machine %d refused the match: it was started with %s", e.Machine, strings.Join(diffs, ", "))
}

// WatchRefusals is sig for the creator (seat 0), whose match has the
// settings ours: a joiner's refusal ends its Receive with a
// *RefusedError, which ends the dial.
func WatchRefusals(sig rtc.Signaler, ours play.Settings) rtc.Signaler {
	return &watch{Signaler: sig, ours: ours}
}

type watch struct {
	rtc.Signaler
	ours play.Settings
}

func (w *watch) Receive(ctx context.Context) (int, string, string, error) {
	from, kind, data, err := w.Signaler.Receive(ctx)
	if err == nil && kind == rdv.KindCandidate {
		if rest, ok := strings.CutPrefix(data, refusedPrefix); ok {
			if theirs, ok := decodeSettings(settingsPrefix + rest); ok {
				return from, kind, data, &RefusedError{Machine: from, Theirs: theirs, Ours: w.ours}
			}
		}
	}
	return from, kind, data, err
}

// SendSettings sends the settings of the match's creator (seat 0) to
// every other seat, before any WebRTC signal: each receives them first
// from seat 0.
func SendSettings(ctx context.Context, sig rtc.Signaler, seats int, s play.Settings) error {
	for to := 1; to < seats; to++ {
		if err := sig.Send(ctx, to, rdv.KindCandidate, encodeSettings(s)); err != nil {
			return fmt.Errorf("sending the match settings to machine %d: %w", to, err)
		}
	}
	return nil
}

// ReceiveSettings waits for the settings seat 0 sends (SendSettings) and
// returns them with the signaler to dial with: the other machines'
// signals that arrived first are kept for it, in order.
func ReceiveSettings(ctx context.Context, sig rtc.Signaler) (play.Settings, rtc.Signaler, error) {
	b := &held{Signaler: sig}
	for {
		from, kind, data, err := sig.Receive(ctx)
		if err != nil {
			return play.Settings{}, b, err
		}
		if from == 0 && kind == rdv.KindCandidate {
			if s, ok := decodeSettings(data); ok {
				return s, b, nil
			}
		}
		b.early = append(b.early, signal{from, kind, data})
	}
}

type signal struct {
	from       int
	kind, data string
}

// held is a signaler that first gives back the signals ReceiveSettings
// read before the settings.
type held struct {
	rtc.Signaler
	early []signal
}

func (h *held) Receive(ctx context.Context) (int, string, string, error) {
	if len(h.early) > 0 {
		s := h.early[0]
		h.early = h.early[1:]
		return s.from, s.kind, s.data, nil
	}
	return h.Signaler.Receive(ctx)
}

// Sentence is err, from the rendezvous at base (about match code, if
// any), as a sentence a person can act on; nil for errors it does not
// know and for timeouts (which the caller words).
func Sentence(err error, base, code string) error {
	match := "the match"
	if code != "" {
		match = "match " + code
	}
	var why string
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rdv.ErrRateLimited):
		why = fmt.Sprintf("the rendezvous at %s is turning this address away for a moment (too many requests): try again in a minute", base)
	case errors.Is(err, rdv.ErrUnavailable):
		why = fmt.Sprintf("the rendezvous at %s is at its limits: try again later", base)
	case errors.Is(err, rdv.ErrStoreDown):
		why = fmt.Sprintf("the rendezvous at %s cannot reach its store for a moment: try again shortly", base)
	case errors.Is(err, rdv.ErrQuota):
		why = fmt.Sprintf("this address holds as many matches at the rendezvous at %s as it allows one address: leave one first", base)
	case errors.Is(err, rdv.ErrLocked):
		why = fmt.Sprintf("%s refuses joins for a while (too many tries with wrong codes from here): wait a minute", match)
	case errors.Is(err, rdv.ErrGone):
		why = fmt.Sprintf("%s: this machine's seat was given up (it left, or was silent too long)", match)
	case errors.Is(err, rdv.ErrNotFound):
		why = fmt.Sprintf("there is no %s at %s: check the code (a match ends when its machines leave or it expires)", match, base)
	case errors.Is(err, rdv.ErrFull):
		why = fmt.Sprintf("%s at %s is full: every seat is taken", match, base)
	default:
		return nil
	}
	return &sentence{why, err}
}

// sentence is an error told in words, which still matches (errors.Is)
// the one it tells.
type sentence struct {
	text string
	err  error
}

func (s *sentence) Error() string { return s.text }
func (s *sentence) Unwrap() error { return s.err }
