package rollback

import "fmt"

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=EventKind,InputStatus,SnapshotPolicy,Suspicion -linecomment -output=strings.go

// EventKind identifies an [Event].
type EventKind uint8

// Event kinds. Each says what its Event.Frame means; where a kind is not
// about a particular frame, Frame is the next frame to simulate when it
// happened ([Session.Frame]).
const (
	// EventStarved: the session stopped advancing because it has gone
	// MaxRollback frames without input from Peer (show the spinner). In
	// lockstep mode: a frame due on the playout schedule lacks Peer's
	// input (-1: a local player's, not given in time). Frame: the frame
	// that waits.
	EventStarved EventKind = 1 + iota // starved
	// EventResumed: input arrived and the session advances again. Frame:
	// the frame that waited, simulated now.
	EventResumed // resumed
	// EventConnected: Peer completed the handshake. Frame: the next frame
	// to simulate (0 during the handshake).
	EventConnected // connected
	// EventRunning: every peer completed the handshake and the start delay
	// is over. Frame: the first frame to simulate (0).
	EventRunning // running
	// EventNetworkInterrupted: nothing heard from Peer for
	// Config.Timeouts.Interrupt (show a warning; it may come back). Frame:
	// the next frame to simulate.
	EventNetworkInterrupted // network-interrupted
	// EventNetworkResumed: an interrupted Peer spoke again. It says nothing
	// of disconnection, which is final. Frame: the next frame to simulate.
	EventNetworkResumed // network-resumed
	// EventDisconnected: every remaining machine agreed that Peer left.
	// Frame: the agreed disconnect frame; its players' inputs from Frame on
	// are the default input (it can be before the present: the frames
	// after it were re-simulated).
	EventDisconnected // disconnected
	// EventInputLagChanged: the local input lag is now Lag frames. Frame:
	// the next frame to simulate.
	EventInputLagChanged // input-lag-changed
	// EventDesyncDetected: Peer's checksum of the state at the start of
	// Frame differs from ours; the match is over. The Advance that reports
	// it returns a *desync.Error, and so does every later Advance.
	EventDesyncDetected // desync-detected
	// EventDesyncReport: the states at the start of Frame have been
	// exchanged with Peer; the *desync.Error every Advance returns from now
	// on names the first differing field and both values (the error
	// returned before is not changed).
	EventDesyncReport // desync-report
	// EventForgery: at least 32 datagrams from Peer's address
	// failed the MAC check within a second: someone is forging its
	// datagrams (they are dropped; see PeerStats.PacketsForged). Emitted at most once a second per peer.
	// Frame: the next frame to simulate.
	EventForgery // forgery
	// EventSuspect: Peer, which holds the link's keys, did something no
	// honest machine does; Event.Suspicion says what (it is counted in
	// PeerStats.Suspected). Raised the first time, then at most once a
	// second per peer and kind. What it sent was checked and bounded
	// (docs/security.md); the game may tell the player, report the peer
	// to its servers, or end the match. Frame: the next frame to simulate.
	EventSuspect // suspect
	// EventSpectatorJoined: a spectator completed the handshake with this
	// machine, which now serves it (Config.MaxSpectators). Peer: its
	// Transport index. Frame: the next frame to simulate.
	EventSpectatorJoined // spectator-joined
	// EventSpectatorLeft: a spectator this machine served left, went
	// silent for Timeouts.Disconnect, or fell further behind than the
	// machine keeps inputs for. Peer: its Transport index. Frame: the
	// next frame to simulate.
	EventSpectatorLeft // spectator-left
	// EventJoined: a Spectator has the state it starts from. Frame: that
	// state's frame, the first it simulates.
	EventJoined // joined
	// EventCaughtUp: a Spectator has caught up: it is as close to its
	// source's newest frame as its Delay allows. Frame: the next frame it
	// simulates.
	EventCaughtUp // caught-up
	// EventTookOver: the machine of Peer took its players back at Frame
	// (docs/protocol.md, "Reconnect"); on the machine that came back,
	// Peer is -1: its local inputs are used from Frame on.
	EventTookOver // took-over
)

// forgeryAlarm is how many datagrams failing the MAC check within a second
// raise EventForgery. A healthy link has none: loss, duplicates and
// reordering do not make them.
const forgeryAlarm = 32

// Event is something the game may want to show or log.
type Event struct {
	Kind  EventKind
	Frame Frame // what it means depends on Kind (see each kind)
	Peer  int   // the peer concerned, or -1
	Lag   int   // EventInputLagChanged: the new input lag
	// Suspicion is what EventSuspect's peer was caught at.
	Suspicion Suspicion
}

func (e Event) String() string {
	if e.Kind == EventSuspect {
		return fmt.Sprintf("%s frame=%d peer=%d suspicion=%s", e.Kind, e.Frame, e.Peer, e.Suspicion)
	}
	if e.Kind == EventInputLagChanged {
		return fmt.Sprintf("%s frame=%d lag=%d", e.Kind, e.Frame, e.Lag)
	}
	if e.Peer >= 0 {
		return fmt.Sprintf("%s frame=%d peer=%d", e.Kind, e.Frame, e.Peer)
	}
	return fmt.Sprintf("%s frame=%d", e.Kind, e.Frame)
}

// eventLog is the events of one call (Result.Events), of a session or a
// spectator; the next call starts it again.
type eventLog []Event

// emit adds an event of kind k at frame f about peer (-1: none).
func (l *eventLog) emit(k EventKind, f Frame, peer int) {
	*l = append(*l, Event{Kind: k, Frame: f, Peer: peer})
}
