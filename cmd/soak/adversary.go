package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
)

// checkAdversary parses -adversary and checks -adversary-machine.
func (o *options) checkAdversary() error {
	switch {
	case o.adversary == "":
		if o.adversaryMachine != -1 {
			return fmt.Errorf("-adversary-machine: %d without -adversary", o.adversaryMachine)
		}
		return nil
	case !match.AdversaryBuilt:
		return fmt.Errorf("-adversary: this soak was built without the adversary; run it as %s -adversary %s", strings.Join(soakCommand(true), " "), o.adversary)
	case o.adversary == "all":
	default:
		k, ok := liar.Parse(o.adversary)
		if !ok || k == liar.None || k >= liar.NumKinds {
			return fmt.Errorf("-adversary: %q (want %s, or all)", o.adversary, kindNames())
		}
		o.adversaryKind = k
	}
	if o.adversaryMachine < -1 || o.adversaryMachine >= o.machines {
		return fmt.Errorf("-adversary-machine: %d (want 0 to %d, or -1 for machine i%%machines in match i)", o.adversaryMachine, o.machines-1)
	}
	return nil
}

// adversaryOf is match i's adversary: its kind (liar.None without
// -adversary) and machine. With -adversary all, match i tells kind
// i%10+1; a rotating machine is then (i%10 + i/10) % machines, not
// i % machines, which would give a kind the same machine in every round
// when machines divides their number: each round of the kinds moves every kind to
// the next machine.
func (o *options) adversaryOf(i int) (liar.Kind, int) {
	if o.adversary == "" {
		return liar.None, 0
	}
	k, m := o.adversaryKind, o.adversaryMachine
	kinds := int(liar.NumKinds) - 1
	switch {
	case o.adversary == "all":
		k = liar.Kind(1 + i%kinds)
		if m < 0 {
			m = (i%kinds + i/kinds) % o.machines
		}
	case m < 0:
		m = i % o.machines
	}
	return k, m
}

// adversaryFlags are the flags that give one match its adversary.
func adversaryFlags(k liar.Kind, machine int) string {
	return fmt.Sprintf("-adversary %v -adversary-machine %d", k, machine)
}

// kindNames lists the kinds of lie -adversary takes.
func kindNames() string {
	var names []string
	for k := liar.None + 1; k < liar.NumKinds; k++ {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// machineName says which machine lies: "machine 2", or "machine i%3" when
// it rotates.
func machineName(m int) string {
	if m < 0 {
		return "machine i%machines"
	}
	return "machine " + strconv.Itoa(m)
}

// counts prints a count per name, in name order.
func counts(m map[string]int64) string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []string
	for _, k := range names {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

// adversaries sums the matches' Result.Adversary: over all of them, and
// per kind.
type adversaries struct {
	o      options
	all    advSum
	byKind map[liar.Kind]*advSum
}

// advSum is one AdversaryJSON in the making.
type advSum struct {
	j            AdversaryJSON
	lookahead    float64
	speedMatches int
}

func newAdversaries(o options) *adversaries {
	return &adversaries{o: o, byKind: map[liar.Kind]*advSum{}}
}

// add counts one match's report a, with named, its spectators' namings by
// machine (match.SpectatorReport.Named; a key from machines on is a
// relaying spectator).
func (as *adversaries) add(a match.AdversaryReport, named map[int]int, machines int) {
	if as.o.adversary == "" {
		return
	}
	k := as.byKind[a.Kind]
	if k == nil {
		k = &advSum{}
		as.byKind[a.Kind] = k
	}
	as.all.add(a, named, machines)
	k.add(a, named, machines)
}

// liarOf returns the machine that lied in a match whose report is a, or
// -1 for none.
func liarOf(a match.AdversaryReport) int {
	if a.Kind == liar.None {
		return -1
	}
	return a.Machine
}

// spectatorsNamedHonest returns how often the spectators named a machine
// other than the adversary adv.
func spectatorsNamedHonest(named map[int]int, adv, machines int) int64 {
	var n int64
	for m, k := range named {
		if m != adv && m < machines {
			n += int64(k)
		}
	}
	return n
}

func (s *advSum) add(a match.AdversaryReport, named map[int]int, machines int) {
	j := &s.j
	j.Matches++
	if a.Detected {
		j.Detected++
		j.DetectedAtFrameMax = max(j.DetectedAtFrameMax, int32(a.DetectedAt))
	}
	if named[a.Machine] > 0 {
		j.NamedBySpectators++
	}
	j.SpectatorsSuspectedHonest += spectatorsNamedHonest(named, liarOf(a), machines)
	if a.HonestVerified {
		j.HonestVerified++
	}
	if s.speedMatches == 0 || a.HonestSpeedMin < j.HonestSpeedMin {
		j.HonestSpeedMin = a.HonestSpeedMin
	}
	s.speedMatches++
	j.HonestInputLagMax = max(j.HonestInputLagMax, a.HonestInputLagMax)
	s.lookahead += a.Lookahead
	j.Lies += a.Lies
	j.SuspectedHonest += a.SuspectedHonest
	if a.HonestDisconnected {
		j.HonestDisconnected++
	}
	if j.Suspicions == nil {
		j.Suspicions = map[string]int64{}
	}
	for k, n := range a.SuspectsByKind {
		if n > 0 {
			j.Suspicions[rollback.Suspicion(k).String()] += n
		}
	}
}

// done returns the summary, kind and machine set.
func (s *advSum) done(kind string, machine int) *AdversaryJSON {
	j := s.j
	j.Kind, j.Machine = kind, machine
	if j.Matches > 0 {
		j.LookaheadFrames = round2(s.lookahead / float64(j.Matches))
	}
	j.HonestSpeedMin = math.Round(j.HonestSpeedMin*1e4) / 1e4
	if j.Suspicions == nil {
		j.Suspicions = map[string]int64{}
	}
	return &j
}

// json is the soak's adversary object; nil without -adversary.
func (as *adversaries) json() *AdversaryJSON {
	if as.o.adversary == "" {
		return nil
	}
	j := as.all.done(as.o.adversary, as.o.adversaryMachine)
	if as.o.adversary == "all" {
		j.ByKind = map[string]*AdversaryJSON{}
		for k, s := range as.byKind {
			j.ByKind[k.String()] = s.done(k.String(), as.o.adversaryMachine)
		}
	}
	return j
}
