package rollback

import "fmt"

// EventKind identifies an [Event].
type EventKind uint8

// Event kinds.
const (
	// EventStarved: the session stopped advancing because it has gone
	// MaxRollback frames without input from Peer (show the spinner). In
	// lockstep mode: a frame due on the playout schedule lacks Peer's
	// input (-1: a local player's, not given in time).
	EventStarved EventKind = 1 + iota
	// EventResumed: input arrived and the session advances again.
	EventResumed
	// EventSyncTestFailed: in sync-test mode, re-simulating Frame gave a
	// different state; the Advance that reports it also returns a
	// [*SyncTestError].
	EventSyncTestFailed
	// EventConnected: Peer completed the handshake.
	EventConnected
	// EventRunning: every peer completed the handshake; frame 0 can run.
	EventRunning
	// EventNetworkInterrupted: nothing heard from Peer for Config.InterruptTimeout.
	EventNetworkInterrupted
	// EventNetworkResumed: Peer was interrupted and spoke again.
	EventNetworkResumed
	// EventDisconnected: every remaining machine agreed that Peer left;
	// its players' inputs from Frame on are the default input.
	EventDisconnected
	// EventInputLagChanged: the local input lag is now Lag frames.
	EventInputLagChanged
	// EventDesyncDetected: Peer's checksum of Frame differs from ours; the
	// match is over. The Advance that reports it returns a *desync.Error,
	// and so does every later Advance.
	EventDesyncDetected
	// EventDesyncReport: the states at the diverged frame have been
	// exchanged with Peer; the *desync.Error's Field now names the first
	// differing field and both values.
	EventDesyncReport
)

func (k EventKind) String() string {
	switch k {
	case EventStarved:
		return "starved"
	case EventResumed:
		return "resumed"
	case EventDesyncDetected:
		return "desync-detected"
	case EventDesyncReport:
		return "desync-report"
	case EventSyncTestFailed:
		return "sync-test-failed"
	case EventConnected:
		return "connected"
	case EventRunning:
		return "running"
	case EventNetworkInterrupted:
		return "interrupted"
	case EventNetworkResumed:
		return "reconnected"
	case EventDisconnected:
		return "disconnected"
	case EventInputLagChanged:
		return "input-lag-changed"
	default:
		return fmt.Sprintf("EventKind(%d)", uint8(k))
	}
}

// Event is something the game may want to show or log.
type Event struct {
	Kind  EventKind
	Frame Frame // the session's frame when it happened
	Peer  int   // the peer concerned, or -1
	Lag   int   // EventInputLagChanged: the new input lag
}

func (e Event) String() string {
	if e.Kind == EventInputLagChanged {
		return fmt.Sprintf("%s frame=%d lag=%d", e.Kind, e.Frame, e.Lag)
	}
	if e.Peer >= 0 {
		return fmt.Sprintf("%s frame=%d peer=%d", e.Kind, e.Frame, e.Peer)
	}
	return fmt.Sprintf("%s frame=%d", e.Kind, e.Frame)
}
