package main

import (
	"fmt"
	"strings"

	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/internal/match"
)

// online is what the machines' own desync reports named of a match's
// desync (desync.Error.FirstFrame and System: the time machine, which
// exchanges the re-simulations' checksums and marks over the network).
type online struct {
	reporters []int  // the machines that reported it (with -recover: that played on past it)
	frame     int32  // the first divergent frame the first report naming one names (0: none)
	system    string // and its system
	frameBy   []int  // the machines whose report named the first divergent frame
	systemBy  []int  // those whose report named a system too
	disagree  string // why the reports disagree with one another or with the bundles offline; "" when they agree
}

// onlineOf collects what r's reports named: with -recover each
// recovery's (Stats.Desync), else each machine's latest Advance error.
func onlineOf(r *match.Result) online {
	var on online
	var named []int32
	var systems []string
	take := func(m int, frame int32, system string) {
		on.reporters = append(on.reporters, m)
		if frame <= 0 {
			return
		}
		on.frameBy = append(on.frameBy, m)
		if system != "" {
			on.systemBy = append(on.systemBy, m)
		}
		named, systems = append(named, frame), append(systems, system)
	}
	if len(r.Recoveries) > 0 {
		for _, rc := range r.Recoveries {
			take(rc.Machine, rc.Report.FirstFrame, rc.Report.System)
		}
	} else {
		for m, e := range r.Reports {
			if e != nil {
				take(m, e.FirstFrame, e.System)
			}
		}
	}
	if len(named) == 0 {
		return on
	}
	on.frame, on.system = named[0], systems[0]
	var why []string
	for k := range named {
		if named[k] != on.frame || systems[k] != on.system {
			why = append(why, fmt.Sprintf("machine %d's report names frame %d, system %q; machine %d's frame %d, system %q",
				on.frameBy[0], on.frame, on.system, on.frameBy[k], named[k], systems[k]))
		}
	}
	if d := r.Divergence; d != nil && d.Frame >= 0 && (d.Frame != on.frame || d.System != on.system) {
		why = append(why, fmt.Sprintf("the reports name frame %d, system %q; the bundles offline frame %d, system %q", on.frame, on.system, d.Frame, d.System))
	}
	on.disagree = strings.Join(why, "; ")
	return on
}

// everywhere reports whether every machine that reported the desync (one
// at least; both ends of a two-machine match) named the first divergent
// frame and a system.
func (on online) everywhere() bool {
	return len(on.reporters) > 0 && len(on.systemBy) == len(on.reporters)
}

// diverged adds to a desync's report the first divergent frame and
// system: what the machines' reports named online, and what their
// bundles set side by side offline name (the field too, when the report
// has none).
func diverged(r DesyncReport, on online, d *bundle.Divergence) DesyncReport {
	r.FrameNamedBy, r.SystemNamedBy = on.frameBy, on.systemBy
	if on.frame > 0 {
		f := on.frame
		r.DivergentFrame, r.System = &f, on.system
	}
	if d == nil || d.Frame < 0 {
		return r
	}
	f := d.Frame
	r.OfflineFrame, r.OfflineSystem = &f, d.System
	if r.DivergentFrame == nil {
		r.DivergentFrame, r.System = &f, d.System
	}
	if r.Field == "" && len(d.Fields) > 0 {
		r.Field = d.Fields[0].String()
	}
	return r
}

// timeMachineFail says why match r's desync reports fail the soak ("" if
// they do not): with -inject-desync (the sessions trace), the reports
// that name the first divergent frame and system must agree with one
// another and with the bundles offline; with -inject-desync-system every
// machine that reported must name that system.
func timeMachineFail(o options, r *match.Result) string {
	if o.injectDesync <= 0 || o.injectDesync >= o.frames {
		return ""
	}
	on := onlineOf(r)
	switch {
	case on.disagree != "":
		return "the time machine: " + on.disagree
	case o.injectSystem != "" && len(on.reporters) > 0 && (!on.everywhere() || on.system != o.injectSystem):
		return fmt.Sprintf("the desync injected inside %q was not named online by every machine that reported it (reported by %v; frame named by %v, system by %v: %q)",
			o.injectSystem, on.reporters, on.frameBy, on.systemBy, on.system)
	}
	return ""
}
