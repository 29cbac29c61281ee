// Package rollback is a rollback netcode session in the GGPO tradition, for
// games of 1 to 8 players on up to 8 machines at a fixed frame rate.
//
// Every machine sends only its players' inputs. While a remote input has not
// arrived, the session predicts it (by default, by repeating the player's
// last input) and simulates on. When the real input arrives and differs from
// the prediction, the session restores a snapshot of the game state from
// before that frame and re-simulates up to the present, all inside one call,
// so the player sees at most a small pop and never waits for the network.
// On a clean link a machine whose inputs have not changed sends them only
// every other tick: the peers' predictions are right meanwhile
// (Config.SendEveryTick).
//
// A [Session] is a deterministic, single-threaded state machine driven by
// the game loop, in the manner of etcd's raft.RawNode. Its I/O goes through
// what the caller injects: datagrams through a [Transport]
// (rollback/netsim for tests, rollback/udp for play, a relay.Client
// through a relay in the middle), time through a clock (Config.Clock),
// the handshake's nonce and keys through Config.Rand. It starts no
// goroutine and uses no global randomness, so a whole match over netsim,
// handshake included, is a deterministic function of its seed.
//
// # Making a game rollback-ready
//
// The game keeps its whole simulation state in a savestate.Arena, as
// pointer-free values reached through handles, and implements [Game]: Step
// advances the state one frame from the inputs alone, bit-for-bit the same
// on every machine (fixed-point math, no maps iterated, no time, no global
// random numbers). Inputs are quantized to a [Layout] before they reach the
// game, identically for local and remote players. Step may be called again
// for frames already simulated, and may run inside a snapshot region of the
// arena (see savestate.Arena.Enter), so it must fetch its state through
// handles every time. Sync-test mode (Config.SyncTest) checks all of this
// on one machine before any network exists.
//
// # Usage
//
// Allocate the state, create the session, then once per 60 Hz tick:
//
//	a, _ := savestate.New(0) // 1 MiB
//	game := newGame(a)       // allocates its state in a
//	tr, _ := udp.New(conn, []netip.AddrPort{peerAddr})
//	s, err := rollback.NewSession(rollback.Config{
//		Players: 2, Local: []rollback.PlayerID{0},
//		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{1}}},
//		Layout: rollback.Layout{3, 8, 8},
//		State:  a, Game: game, Transport: tr,
//		SessionID: matchID, // from the lobby: the same on every machine
//		Observer:  ledger,  // a sound.Ledger: rollback-safe sound
//	})
//	defer s.Close() // tells the peers at once
//	p := pacer.New(time.Second / 60)
//	for {
//		p.Wait()
//		if _, err := s.AddLocalInput(0, sampleInput()); err != nil { ... }
//		r, err := s.Advance() // receive, correct, maybe stall, simulate, send
//		if err != nil { ... }
//		ledger.Update(game.Scene()) // stateful sounds follow the corrected state
//		render(game)                // or s.Extrapolate(fraction, render) between frames
//		for _, e := range r.Events { ... } // spinner on EventStarved, EventInputLagChanged, ...
//	}
//
// The caller's duties:
//
//  1. Offer every local player's input once per tick with
//     [Session.AddLocalInput] before [Session.Advance]. When the session
//     stalled (for a missing peer, or to give a slower peer back its
//     frames), this tick's frame already has its input and AddLocalInput
//     reports it not queued: drop that sample. While the session raises its
//     input lag it stalls but takes the input. [Session.InputFrame] tells
//     which frame an input will be used for. With an input lag of L, the
//     first L frames have no input from anyone: every player's input for
//     them is the zero input, with status Confirmed.
//  2. Call Advance once per tick at the game's frame rate, and
//     [Session.Idle] instead while paused or finished, so that peers still
//     receive inputs and acknowledgements.
//  3. Do not keep Go pointers into the arena across calls; fetch state
//     through handles (render after Advance returns).
//  4. Read [Result.Events] before the next call; the slice is reused.
//  5. Give every machine of a match the same Config.SessionID, and each
//     match a new one (and, from a lobby you trust, the same
//     Config.Secret). Until every peer has answered the handshake,
//     Advance reports Stalled and simulates nothing; it fails with a
//     [*HandshakeError] at once if a peer is configured differently, and with
//     a [*HandshakeError] after Config.Timeouts.Handshake.
//  6. Call [Session.Close] when leaving, so that the peers agree at once on
//     the frame from which this machine's players play the default input.
//
// # Sound and rendering between frames
//
// Anything outside the game state that reacts to simulated frames — sound
// first of all — is told which frames are re-simulations through an
// [Observer] (Config.Observer); package sound builds rollback-safe sound on
// it. [Session.Extrapolate] renders a fraction of a frame ahead for
// displays that are not a multiple of the frame rate: the game implements
// [PartialStepper], the session steps a throwaway copy of the state
// (savestate.Arena.Fork) with sound suppressed, and the live state is left
// bit-for-bit as it was.
//
// # Network
//
// The protocol (docs/protocol.md) runs inside the session: a handshake that
// agrees per-match keys and checks that the machines are configured alike,
// a MAC on every later datagram, pings for the round-trip time
// ([Session.PeerStats]), throttling of silent peers, interruption and
// disconnection timers, and gossip so that every machine uses the same
// disconnect frame. Anything forged, malformed, foreign or impossible is
// dropped and counted, never trusted (docs/security.md).
//
// # Spectators
//
// A [Spectator] watches a match in progress: it joins at any time through a
// player machine that serves spectators (Config.MaxSpectators) or through a
// spectator that relays (SpectatorConfig.MaxSpectators), is authenticated
// like a peer, receives the arena at a recent final frame and then every
// final input, and simulates only final frames, never predicting, never
// rolling back, optionally Delay behind. It sends only acknowledgements:
// nothing it does reaches the players (docs/protocol.md, "Spectators").
//
// # Reconnect
//
// A machine that dropped out (a crash, a link down past Timeouts.Disconnect)
// comes back within the others' Config.RejoinWindow with a new Session,
// the same Config and InProgress set: it watches the match through a peer
// as a spectator does, then takes its players back at a frame every
// machine agrees on, once the checksum of its state there is confirmed by
// a majority of the machines that play there (ErrJoinState when no source's
// state is: it never plays). Meanwhile its players play Config.StandIn (docs/protocol.md,
// "Reconnect"; docs/integration.md, "Reconnect"). A match can also start
// with slots reserved (Peer.Late) for machines that join it the same way
// later (docs/protocol.md, "Late join").
//
// # Fairness and input lag
//
// By default the session keeps the match fair and smooth as the INVERSUS
// article does (packages advantage and inputlag): it measures every peer's
// input frame advantage from the input messages, averages it every 100
// frames, and stalls the frames it is ahead, spread out by
// advantage.StallPeriod; it starts the first frame after
// advantage.StartDelay, computed from the full mesh of round-trip times, so
// that the machine that decided to start is not ahead; and it re-evaluates
// its local input lag every 100 frames with inputlag.Next, raising it by
// stalling and lowering it by simulating the queued inputs at once.
// Config.FixedInputLag, Config.NoFrameAdvantage and Config.NoStartDelay turn
// each off; Stats reports the advantage, the queued stalls and the lag.
//
// # Lockstep mode
//
// Config.Lockstep serves games that cannot or need not
// predict — an RTS at 10 Hz, a co-op game with thousands of physics
// bodies — with the same protocol, transport and tools: a frame is
// simulated only when every player's input for it is here, so there are no
// predictions, no rollbacks and (with two machines) no snapshots. Local
// inputs run on their own clock: one per tick of Config.TickRate, for the
// frame InputLag ticks ahead, sent at once; between ticks AddLocalInput
// reports the input not queued, so an RTS keeps its commands and offers
// them again next render frame, and offers until one is not queued (more
// than one input is due after a slow render frame). The
// simulation runs on a playout schedule (Gaffer's playout delay buffer):
// frame 0 is due Config.PlayoutDelay (default 100 ms) after the first
// inputs of every peer arrived, frame f f ticks later. Call Advance once
// per render frame: it simulates every due frame whose inputs are here, at
// most 4 per call; a due frame that still lacks an
// input is a hitch ([Result.Hitch], Stats.Hitches, EventStarved naming the
// peer, EventResumed when it comes). Packets repeat every unacknowledged
// input (Config.RedundantFrames -1 is the lockstep default), which is what
// beats TCP: docs/lockstep.md has the measured table.
//
// # Implementation notes
//
// Inputs live in a 256-frame ring; the session stalls rather than let a peer
// push it past what the ring, the wire header or MaxRollback allow. The
// default snapshot policy keeps two snapshots of the arena (INVERSUS) and
// moves the older one forward inside its own region, so a rollback costs one
// copy of the arena plus the frames re-simulated; with three or more
// machines a third snapshot stays at the settled frame, where the cut of a
// proven equivocator may reach. docs/architecture.md gives the invariants,
// the constant-cost alternative and the measurements.
package rollback
