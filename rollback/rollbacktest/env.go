// Package rollbacktest is an interaction environment for tests of rollback
// sessions, as net/http/httptest is for HTTP handlers and etcd's rafttest
// for raft nodes.
//
// An [Env] runs real [rollback.Session]s (one player each) and
// [rollback.Spectator]s over a rollback/netsim network, on the network's
// virtual clock, one 60 Hz tick at a time. Between ticks a test can hold,
// drop, delay, reorder and deliver the datagrams of any directed link,
// crash a machine and bring it back, and put datagrams on a link that no
// machine sent: handshakes spoofed from a machine's address, a stranger's
// hello, junk, replays and tampered copies of what was really sent. Every
// source of randomness is seeded from [Config.Seed] and nothing reads the
// wall clock, so a test's whole history, and every report the Env prints,
// is the same on every run.
//
// The reports ([Env.Stats], [Env.Events], [Env.Agreement], ...) are text,
// stable from run to run and meant to be compared with expected output:
// the package's own tests run testdata/*.txt transcripts of commands and
// their expected reports (go test -rewrite regenerates them).
package rollbacktest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/testgame"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// Tick is the period of one step of an Env: one frame at 60 Hz.
const Tick = time.Second / 60

// layout is the input layout of every match: one 8-bit field (inputs 0
// to 255).
var layout = rollback.Layout{8}

// SessionID is the SessionID of every machine unless [Config.Edit] sets
// another.
const SessionID = 77

// arenaSize is each machine's arena: the test game's totals fit in it.
const arenaSize = 4096

// lockstepCatchUp is the most frames a lockstep Advance simulates to catch
// up with its schedule (the rollback package's bound): offer tries once
// more, so that a session that wants no more says so.
const lockstepCatchUp = 4

// Config describes the match an Env runs.
type Config struct {
	// Machines is the number of machines, 1 to rollback.MaxPlayers;
	// machine i plays player i, whose inputs are 8 bits (0 to 255).
	Machines int
	// Seed seeds the network's impairments, every machine's Rand and the
	// forged datagrams.
	Seed uint64
	// Profile applies to every link of the network; the zero Profile
	// delivers every datagram at the next tick.
	Profile netsim.Profile
	// Late are the machines whose slots are reserved (rollback.Peer.Late):
	// they do not start with the others; [Env.Restart] starts them.
	Late []int
	// Edit, if not nil, changes machine i's Config before each NewSession
	// (a Restart too: InProgress is then already set).
	Edit func(i int, c *rollback.Config)
}

// Env is an interaction environment: a match of real sessions on a
// simulated network. It is not safe for concurrent use.
type Env struct {
	cfg        Config
	nw         *netsim.Network
	src        *rand.ChaCha8 // the forgeries' keys
	rng        *rand.Rand    // and everything else random in them
	tick       int
	machines   []*machine
	spectators []*spectator
	links      map[[2]int]*link
	seen       map[[2]int]*seen
	stranger   int // the stranger's node, or -1 before it is needed
}

// Stranger, as the From of a [Forgery], is an address of its own that is
// no machine's: a node of the network that runs nothing.
const Stranger = -1

// New returns an Env running cfg's match: every machine not Late has its
// session, and no tick has run yet.
func New(cfg Config) (*Env, error) {
	if cfg.Machines < 1 || cfg.Machines > rollback.MaxPlayers {
		return nil, fmt.Errorf("rollbacktest: %d machines (want 1 to %d)", cfg.Machines, rollback.MaxPlayers)
	}
	nw, err := netsim.New(cfg.Machines, cfg.Seed, cfg.Profile)
	if err != nil {
		return nil, err
	}
	src := seeded(cfg.Seed, 1<<16, 0)
	e := &Env{cfg: cfg, nw: nw, src: src, rng: rand.New(src),
		links: map[[2]int]*link{}, seen: map[[2]int]*seen{}, stranger: -1}
	nw.Tap = e.observe
	for i := range cfg.Machines {
		if slices.Contains(cfg.Late, i) && i == 0 {
			return nil, fmt.Errorf("rollbacktest: machine 0 cannot be late: it starts the match")
		}
		m := &machine{id: i, wrap: fakepeer.Wrap(&port{e: e, node: i}, maxPeers)}
		e.machines = append(e.machines, m)
		m.state = stateAbsent
		if !slices.Contains(cfg.Late, i) {
			if err := e.start(m, false); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// maxPeers is the transport indexes a machine's scripted datagrams may
// come from: every node the network can have but its own.
const maxPeers = 63

// seeded returns the random stream number i of salt under seed.
func seeded(seed, salt uint64, i int) *rand.ChaCha8 {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], salt)
	binary.LittleEndian.PutUint64(key[16:], uint64(i)+1)
	return rand.NewChaCha8(key)
}

// machine is one player's machine: its session (nil while absent), its
// game, and its transport (scripted datagrams, then the link filters).
type machine struct {
	id     int
	s      *rollback.Session
	cfg    rollback.Config // the last session's
	game   *game
	rec    *recorder       // nil after a restart (a joiner has no Recorder)
	wrap   *fakepeer.Peers // Forge's datagrams, before port's
	input  rollback.Input
	starts int // sessions started so far
	state  string
	err    error
	events []string
	// per command: ticks stalled and frames re-simulated
	stalled, resim int
}

// Machine states, as the reports print them.
const (
	stateRunning = "running"
	stateAbsent  = "absent"
	stateCrashed = "crashed"
	stateClosed  = "closed"
	stateFailed  = "failed"
)

// config returns machine i's Config as the match gives it.
func (e *Env) config(m *machine, inProgress bool) (rollback.Config, error) {
	g, err := newGame()
	if err != nil {
		return rollback.Config{}, err
	}
	m.game = g
	c := rollback.Config{Players: e.cfg.Machines, Local: []rollback.PlayerID{rollback.PlayerID(m.id)},
		Layout: layout, State: g.Arena, Game: g, Clock: e.nw.Now, SessionID: SessionID,
		Rand: seeded(e.cfg.Seed, 0, m.id*64+m.starts), InProgress: inProgress}
	if e.cfg.Machines > 1 {
		// Only Send and Receive: the session sees a plain Transport (the
		// fakepeer's other methods would change what it does).
		c.Transport = transport{m.wrap}
	}
	for j := range e.cfg.Machines {
		if j != m.id {
			c.Peers = append(c.Peers, rollback.Peer{Players: []rollback.PlayerID{rollback.PlayerID(j)},
				Late: !inProgress && slices.Contains(e.cfg.Late, j)})
		}
	}
	if !inProgress {
		m.rec = &recorder{}
		c.Recorder = m.rec
	} else {
		m.rec = nil
	}
	if e.cfg.Edit != nil {
		e.cfg.Edit(m.id, &c)
	}
	return c, nil
}

// start creates machine m's session.
func (e *Env) start(m *machine, inProgress bool) error {
	c, err := e.config(m, inProgress)
	if err != nil {
		return err
	}
	m.starts++
	s, err := rollback.NewSession(c)
	if err != nil {
		return fmt.Errorf("machine %d: %w", m.id, err)
	}
	m.s, m.cfg, m.state, m.err = s, c, stateRunning, nil
	return nil
}

// transport hides every method of its Transport but Send and Receive.
type transport struct{ rollback.Transport }

// game is the test game (testgame.Counter), which can be made to go wrong
// at one frame on one machine (Env.Corrupt).
type game struct {
	*testgame.Counter
	corrupt rollback.Frame // -1: never
}

func newGame() (*game, error) {
	c, err := testgame.NewCounter(arenaSize)
	if err != nil {
		return nil, err
	}
	return &game{Counter: c, corrupt: -1}, nil
}

// Step simulates frame f, adding one to a total no input explains at the
// corrupt frame.
func (g *game) Step(f rollback.Frame, in []rollback.PlayerInput) {
	g.Counter.Step(f, in)
	if f == g.corrupt {
		g.State.Get(g.Arena)[127]++
	}
}

// recorder keeps a running digest of a machine's final inputs, one per
// final frame, so that machines can be compared on the frames they all
// have.
type recorder struct {
	digests   []uint64 // digests[f]: of every final input of frames 0 to f
	checksums int
}

func (r *recorder) Begin(rollback.MatchInfo) {}

func (r *recorder) Confirmed(f rollback.Frame, in []rollback.PlayerInput) {
	var d uint64 = 14695981039346656037 // FNV-1a
	if n := len(r.digests); n > 0 {
		d = r.digests[n-1]
	}
	for _, p := range in {
		for _, b := range [...]byte{byte(p.Input), byte(p.Input >> 8), byte(p.Status)} {
			d = (d ^ uint64(b)) * 1099511628211
		}
	}
	r.digests = append(r.digests, d)
}

func (r *recorder) Checksum(rollback.Frame, uint64) { r.checksums++ }

// Machines returns the number of machines.
func (e *Env) Machines() int { return len(e.machines) }

// Session returns machine i's current session: nil while it is absent
// (Late, before Restart), and a new one after each Restart.
func (e *Env) Session(i int) *rollback.Session {
	if i < 0 || i >= len(e.machines) {
		return nil
	}
	return e.machines[i].s
}

// Network returns the simulated network. Nodes 0 to Machines-1 are the
// machines; spectators and the stranger get nodes as they appear.
func (e *Env) Network() *netsim.Network { return e.nw }

// Ticks returns how many ticks have run.
func (e *Env) Ticks() int { return e.tick }

func (e *Env) machine(i int) (*machine, error) {
	if i < 0 || i >= len(e.machines) {
		return nil, fmt.Errorf("rollbacktest: no machine %d", i)
	}
	return e.machines[i], nil
}

// SetInput makes in machine i's input on every tick it advances, until
// the next SetInput.
func (e *Env) SetInput(i int, in rollback.Input) error {
	m, err := e.machine(i)
	if err != nil {
		return err
	}
	m.input = in
	return nil
}

// Corrupt makes machine i's game simulate frame f wrongly (a bug, a
// non-deterministic game): its state differs from the others' from then
// on. Call it before the machine simulates f.
func (e *Env) Corrupt(i int, f rollback.Frame) error {
	m, err := e.machine(i)
	if err != nil {
		return err
	}
	if m.game == nil {
		return fmt.Errorf("rollbacktest: machine %d has no game yet", i)
	}
	m.game.corrupt = f
	return nil
}

// Advance runs n ticks. On each, the machines in advancing (every machine
// when advancing is nil) add their input and call Advance, every other
// running machine calls Idle, every spectator Advances, and the network's
// clock moves one Tick. It returns a line per machine and spectator:
// its frame, the ticks it stalled and the frames it re-simulated during
// these n ticks, and the error that stopped it, if any.
func (e *Env) Advance(advancing []int, n int) string {
	failed := e.reset()
	for range n {
		e.step(func(i int) bool { return advancing == nil || slices.Contains(advancing, i) }, failed)
	}
	return e.summary(failed)
}

// Idle runs n ticks on which every machine calls Idle (spectators
// Advance), and reports as Advance does.
func (e *Env) Idle(n int) string {
	failed := e.reset()
	for range n {
		e.step(func(int) bool { return false }, failed)
	}
	return e.summary(failed)
}

// AdvanceTo runs ticks on which each running machine Advances while it
// has simulated fewer than f frames and Idles once it has, until every
// running machine and spectator is at frame f or limit ticks have run,
// and reports as Advance does.
func (e *Env) AdvanceTo(f rollback.Frame, limit int) string {
	failed := e.reset()
	for range limit {
		done := true
		for _, m := range e.machines {
			done = done && (m.state != stateRunning || m.s.Frame() >= f)
		}
		for _, sp := range e.spectators {
			done = done && (sp.err != nil || sp.s.Frame() >= f)
		}
		if done {
			break
		}
		e.step(func(i int) bool { return e.machines[i].s.Frame() < f }, failed)
	}
	return e.summary(failed)
}

// reset starts a command's counts.
func (e *Env) reset() map[any]bool {
	for _, m := range e.machines {
		m.stalled, m.resim = 0, 0
	}
	for _, sp := range e.spectators {
		sp.stalled = 0
	}
	return map[any]bool{}
}

// step runs one tick.
func (e *Env) step(advance func(i int) bool, failed map[any]bool) {
	e.tick++
	e.release()
	for _, m := range e.machines {
		if m.state != stateRunning {
			continue
		}
		var r rollback.Result
		var err error
		if advance(m.id) {
			err = m.offer()
			if err == nil {
				r, err = m.s.Advance()
			}
		} else {
			r, err = m.s.Idle()
		}
		if r.Stalled {
			m.stalled++
		}
		m.resim += r.Resimulated
		for _, ev := range r.Events {
			m.events = append(m.events, fmt.Sprintf("t=%d %v", e.tick, ev))
		}
		if err != nil {
			m.state, m.err = stateFailed, err
			m.events = append(m.events, fmt.Sprintf("t=%d error: %v", e.tick, err))
			failed[m] = true
		}
	}
	for _, sp := range e.spectators {
		if sp.err != nil {
			continue
		}
		r, err := sp.s.Advance()
		if r.Stalled {
			sp.stalled++
		}
		for _, ev := range r.Events {
			sp.events = append(sp.events, fmt.Sprintf("t=%d %v", e.tick, ev))
		}
		if err != nil {
			sp.err = err
			sp.events = append(sp.events, fmt.Sprintf("t=%d error: %v", e.tick, err))
			failed[sp] = true
		}
	}
	e.nw.Advance(Tick)
}

// offer adds the machine's input as a game loop does: once in rollback
// mode (a stalled session did not want it), and in lockstep mode while
// the session takes one.
func (m *machine) offer() error {
	for range lockstepCatchUp + 1 {
		queued, err := m.s.AddLocalInput(rollback.PlayerID(m.id), m.input)
		if err != nil || !queued {
			return err
		}
	}
	return nil
}

func (e *Env) summary(failed map[any]bool) string {
	var out []byte
	for _, m := range e.machines {
		switch m.state {
		case stateRunning:
			out = fmt.Appendf(out, "m%d: frame=%d stalled=%d resimulated=%d\n", m.id, m.s.Frame(), m.stalled, m.resim)
		case stateFailed:
			if failed[m] {
				out = fmt.Appendf(out, "m%d: error: %v\n", m.id, m.err)
			} else {
				out = fmt.Appendf(out, "m%d: failed\n", m.id)
			}
		default:
			out = fmt.Appendf(out, "m%d: %s\n", m.id, m.state)
		}
	}
	for k, sp := range e.spectators {
		switch {
		case failed[sp]:
			out = fmt.Appendf(out, "s%d: error: %v\n", k, sp.err)
		case sp.err != nil:
			out = fmt.Appendf(out, "s%d: failed\n", k)
		default:
			out = fmt.Appendf(out, "s%d: frame=%d stalled=%d\n", k, sp.s.Frame(), sp.stalled)
		}
	}
	return string(out)
}

// Crash stops machine i at once, without a word to the others: its
// session is never called again.
func (e *Env) Crash(i int) error {
	m, err := e.machine(i)
	if err != nil {
		return err
	}
	if m.state != stateRunning {
		return fmt.Errorf("rollbacktest: machine %d is %s", i, m.state)
	}
	m.state = stateCrashed
	return nil
}

// Close closes machine i's session (it tells its peers it leaves).
func (e *Env) Close(i int) error {
	m, err := e.machine(i)
	if err != nil {
		return err
	}
	if m.state != stateRunning {
		return fmt.Errorf("rollbacktest: machine %d is %s", i, m.state)
	}
	m.state = stateClosed
	return m.s.Close()
}

// Restart starts machine i again, as a new process with a new arena and a
// new Rand, on the same address: a session with InProgress set, which
// joins the match under way (a machine coming back, or a Late one
// arriving).
func (e *Env) Restart(i int) error {
	m, err := e.machine(i)
	if err != nil {
		return err
	}
	if m.state == stateRunning {
		return fmt.Errorf("rollbacktest: machine %d is running", i)
	}
	return e.start(m, true)
}

// spectator is one Spectator and its node.
type spectator struct {
	s       *rollback.Spectator
	node    int
	game    *game
	events  []string
	stalled int
	err     error
}

// Spectate starts a spectator on a new node that joins through machine
// via, and returns its index (the k of the reports' sK).
func (e *Env) Spectate(via int) (int, error) {
	m, err := e.machine(via)
	if err != nil {
		return 0, err
	}
	g, err := newGame()
	if err != nil {
		return 0, err
	}
	if m.s == nil {
		return 0, fmt.Errorf("rollbacktest: machine %d has not started", via)
	}
	node := e.nw.AddNode()
	if node < 0 {
		return 0, fmt.Errorf("rollbacktest: the network is full")
	}
	k := len(e.spectators)
	// The new node is the highest: via keeps its index in the node's view.
	s, err := rollback.NewSpectator(rollback.SpectatorConfig{Players: e.cfg.Machines, Layout: layout,
		State: g.Arena, Game: g, Transport: &port{e: e, node: node}, Source: via, SessionID: m.cfg.SessionID,
		Secret: m.cfg.Secret, Clock: e.nw.Now, Rand: seeded(e.cfg.Seed, 1, k), Timeouts: m.cfg.Timeouts})
	if err != nil {
		return 0, err
	}
	e.spectators = append(e.spectators, &spectator{s: s, node: node, game: g})
	return k, nil
}
