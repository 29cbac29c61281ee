package rollbacktest_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/rollbacktest"
)

// TestInteraction runs the transcripts in testdata: each is a script of
// commands and the output each must print. go test -rewrite rewrites the
// expected outputs from what the commands print now: commit the changes
// only if you understand what caused them.
//
// The commands (handle has an example of each):
//
//	new-match players=N [seed latency jitter loss nostartdelay send-every-tick
//	          spectators rejoin handshake interrupt disconnect stream-delay late=(i...)]
//	          [secret session bits checksum lockstep]=(one value, or one a machine)
//	advance [machine=(i...)] [n=]     the named machines Advance, the others Idle
//	advance-to frame=F [limit=]       each machine Advances until it reaches F
//	idle [n=]
//	input machine=i value=v           from then on, every tick
//	drop|hold|deliver|reorder|delay|heal from=a to=b [n=] [by=]
//	links, net from= to=, traffic from= to=
//	forge from=(i|stranger) to=i kind=(hello|handshake|junk|replay|tamper) [n nonce echo=(n|leaked) session size]
//	spectate via=i, crash|close|restart machine=i, corrupt machine=i frame=f
//	stats|events [machine=(i...)] [spectator=(k...)], agree [frame=]
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &handler{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.handle(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			if out == "" {
				return "ok\n"
			}
			return out
		})
	})
}

// handler is one transcript's state: the Env of its last new-match.
type handler struct {
	env *rollbacktest.Env
}

// handle runs one command. Nodes (from=, to=, via=) are machines 0 to
// players-1, then spectators and the stranger in the order they appeared.
func (h *handler) handle(t *testing.T, d *datadriven.TestData) (string, error) {
	if d.Cmd != "new-match" && h.env == nil {
		return "", fmt.Errorf("%s before new-match", d.Cmd)
	}
	a := args{t: t, d: d}
	e := h.env
	switch d.Cmd {
	case "new-match":
		// Example: new-match players=3 seed=2 latency=20ms loss=10% secret=(lobby,lobby,other)
		// spectators=1 rejoin=30s stream-delay=2s late=(2) lockstep=(false,true) checksum=10 bits=(8,4)
		// session=(77,78) handshake=1s interrupt=250ms disconnect=1s nostartdelay
		env, err := newMatch(a)
		h.env = env
		return "", err
	case "advance":
		// Example: advance n=30 machine=(0,1)
		var who []int
		if a.has("machine") {
			who = a.ints("machine")
		}
		return e.Advance(who, a.intOr("n", 1)), nil
	case "advance-to":
		// Example: advance-to frame=120 limit=600 (machines at frame 120 Idle until all are there)
		return e.AdvanceTo(rollback.Frame(a.int("frame")), a.intOr("limit", 600)), nil
	case "idle":
		// Example: idle n=60
		return e.Idle(a.intOr("n", 1)), nil
	case "input":
		// Example: input machine=1 value=9
		return "", e.SetInput(a.int("machine"), rollback.Input(a.int("value")))
	case "drop":
		// Example: drop from=0 to=1 n=3 (no n: every datagram until heal)
		return "", e.Drop(a.int("from"), a.int("to"), a.intOr("n", -1))
	case "hold":
		// Example: hold from=1 to=0
		return "", e.Hold(a.int("from"), a.int("to"))
	case "deliver", "reorder":
		// Example: deliver from=1 to=0 n=2; reorder from=1 to=0 (every held one, newest first)
		n, err := e.Deliver(a.int("from"), a.int("to"), a.intOr("n", -1), d.Cmd == "reorder")
		return fmt.Sprintf("%d datagrams %d→%d\n", n, a.int("from"), a.int("to")), err
	case "delay":
		// Example: delay from=0 to=1 by=200ms
		return "", e.Delay(a.int("from"), a.int("to"), a.duration("by"))
	case "heal":
		// Example: heal from=0 to=1
		return "", e.Heal(a.int("from"), a.int("to"))
	case "links":
		return e.Links(), nil
	case "net":
		// Example: net from=0 to=1
		return e.NetworkStats(a.int("from"), a.int("to"))
	case "traffic":
		// Example: traffic from=0 to=1
		return e.Traffic(a.int("from"), a.int("to")) + "\n", nil
	case "forge":
		// Example: forge from=stranger to=0 kind=hello; forge from=1 to=0 kind=handshake echo=leaked n=5
		return forge(e, a)
	case "spectate":
		// Example: spectate via=0
		k, err := e.Spectate(a.int("via"))
		return fmt.Sprintf("s%d\n", k), err
	case "crash":
		return "", e.Crash(a.int("machine"))
	case "close":
		return "", e.Close(a.int("machine"))
	case "restart":
		return "", e.Restart(a.int("machine"))
	case "corrupt":
		// Example: corrupt machine=1 frame=30
		return "", e.Corrupt(a.int("machine"), rollback.Frame(a.int("frame")))
	case "stats", "events":
		// Example: stats machine=(0,1); events spectator=0; events (every machine and spectator)
		return report(e, a, d.Cmd == "stats")
	case "agree":
		// Example: agree frame=120 (no frame: the states of all, if all are at one frame)
		return e.Agreement(a.intOr("frame", -1)), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func newMatch(a args) (*rollbacktest.Env, error) {
	// Every knob is read now: Edit runs again at each restart, when d is
	// another command.
	per := func(key string) func(i int) (string, bool) {
		if !a.has(key) {
			return func(int) (string, bool) { return "", false }
		}
		vs := a.strings(key)
		return func(i int) (string, bool) {
			if len(vs) == 1 {
				return vs[0], true
			}
			if i >= len(vs) {
				return "", false
			}
			return vs[i], true
		}
	}
	secret, session, bits, checksum, lockstep := per("secret"), per("session"), per("bits"), per("checksum"), per("lockstep")
	num := func(v string) int { return int(a.parseInt(v)) }
	for i := range a.int("players") {
		for _, f := range []func(int) (string, bool){session, bits, checksum} {
			if v, ok := f(i); ok {
				num(v) // fails the test now on a malformed number
			}
		}
	}
	spectators, rejoin, streamDelay := a.intOr("spectators", 0), a.durationOr("rejoin", 0), a.durationOr("stream-delay", 0)
	hs, interrupt, disconnect := a.durationOr("handshake", 0), a.durationOr("interrupt", 0), a.durationOr("disconnect", 0)
	noStartDelay, sendEveryTick := a.has("nostartdelay"), a.has("send-every-tick")
	var p netsim.Profile
	p.Latency, p.Jitter = a.durationOr("latency", 0), a.durationOr("jitter", 0)
	if a.has("loss") {
		var err error
		if p, err = netsim.ParseProfile(fmt.Sprintf("latency=%v,jitter=%v,loss=%s", p.Latency, p.Jitter, a.str("loss"))); err != nil {
			return nil, err
		}
	}
	var late []int
	if a.has("late") {
		late = a.ints("late")
	}
	return rollbacktest.New(rollbacktest.Config{Machines: a.int("players"), Seed: uint64(a.intOr("seed", 1)), Profile: p, Late: late,
		Edit: func(i int, c *rollback.Config) {
			if v, ok := secret(i); ok && v != "none" {
				c.Secret = []byte(v + " — a lobby's secret of 16 bytes or more")
			}
			if v, ok := session(i); ok {
				c.SessionID = uint64(num(v))
			}
			if v, ok := bits(i); ok {
				c.Layout = rollback.Layout{uint8(num(v))}
			}
			if v, ok := checksum(i); ok {
				c.ChecksumEvery = num(v)
			}
			if v, ok := lockstep(i); ok && v != "false" {
				c.Lockstep = true
			}
			c.MaxSpectators, c.RejoinWindow, c.SpectatorDelay = spectators, rejoin, streamDelay
			c.Timeouts.Handshake, c.Timeouts.Interrupt, c.Timeouts.Disconnect = hs, interrupt, disconnect
			c.NoStartDelay, c.SendEveryTick = noStartDelay, sendEveryTick
		}})
}

func forge(e *rollbacktest.Env, a args) (string, error) {
	kind, err := rollbacktest.ParseForgeKind(a.str("kind"))
	if err != nil {
		return "", err
	}
	f := rollbacktest.Forgery{Kind: kind, To: a.int("to"), N: a.intOr("n", 1), Size: a.intOr("size", 0)}
	if a.str("from") == "stranger" {
		f.From = rollbacktest.Stranger
	} else {
		f.From = a.int("from")
	}
	if a.has("nonce") {
		f.Nonce = uint64(a.int("nonce"))
	}
	if a.has("session") {
		f.SessionID = uint64(a.int("session"))
	}
	if a.has("echo") {
		if a.str("echo") == "leaked" {
			f.EchoLeaked = true
		} else {
			f.Echo = uint64(a.int("echo"))
		}
	}
	out, err := e.Forge(f)
	return out + "\n", err
}

// report is stats or events for the machines and spectators named (every
// one when none is).
func report(e *rollbacktest.Env, a args, stats bool) (string, error) {
	var machines, spectators []int
	if a.has("machine") {
		machines = a.ints("machine")
	}
	if a.has("spectator") {
		spectators = a.ints("spectator")
	}
	all := machines == nil && spectators == nil
	if all {
		for i := range e.Machines() {
			machines = append(machines, i)
		}
		for k := 0; ; k++ {
			if _, err := e.SpectatorStats(k); err != nil {
				break
			}
			spectators = append(spectators, k)
		}
	}
	var b strings.Builder
	for _, i := range machines {
		var out string
		var err error
		if stats {
			out, err = e.Stats(i)
		} else {
			out, err = e.Events(i)
			if len(machines)+len(spectators) > 1 {
				out = fmt.Sprintf("m%d:\n%s", i, indent(out))
			}
		}
		if err != nil {
			return "", err
		}
		b.WriteString(out)
	}
	for _, k := range spectators {
		var out string
		var err error
		if stats {
			out, err = e.SpectatorStats(k)
		} else {
			out, err = e.SpectatorEvents(k)
			if len(machines)+len(spectators) > 1 {
				out = fmt.Sprintf("s%d:\n%s", k, indent(out))
			}
		}
		if err != nil {
			return "", err
		}
		b.WriteString(out)
	}
	return b.String(), nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// args reads a command's arguments, failing the test on a malformed one.
type args struct {
	t *testing.T
	d *datadriven.TestData
}

func (a args) has(key string) bool { return a.d.HasArg(key) }

func (a args) strings(key string) []string {
	arg, ok := a.d.Arg(key)
	if !ok {
		a.d.Fatalf(a.t, "missing argument %s", key)
	}
	return arg.Vals
}

func (a args) str(key string) string {
	vs := a.strings(key)
	if len(vs) != 1 {
		a.d.Fatalf(a.t, "%s takes one value", key)
	}
	return vs[0]
}

func (a args) parseInt(v string) uint64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.d.Fatalf(a.t, "%q is not a number", v)
	}
	return uint64(n)
}

func (a args) int(key string) int { return int(a.parseInt(a.str(key))) }

func (a args) intOr(key string, def int) int {
	if !a.has(key) {
		return def
	}
	return a.int(key)
}

func (a args) ints(key string) []int {
	var out []int
	for _, v := range a.strings(key) {
		out = append(out, int(a.parseInt(v)))
	}
	return out
}

func (a args) duration(key string) time.Duration {
	v := a.str(key)
	if v == "off" {
		return -1
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.d.Fatalf(a.t, "%s: %v", key, err)
	}
	return d
}

func (a args) durationOr(key string, def time.Duration) time.Duration {
	if !a.has(key) {
		return def
	}
	return a.duration(key)
}
