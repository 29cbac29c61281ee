package match

import (
	"github.com/rewindgg/rewind/desync/bundle"
)

// divergence collects every machine's desync bundles into r, and sets
// what two of them name side by side: the last machine's first bundle
// (InjectDesync's machine) against the first of the first other machine
// that made one, whose re-simulations differ.
func (rn *run) divergence(r *Result) {
	if !rn.c.Bundle {
		return
	}
	r.Bundles = make([][]*bundle.Bundle, len(rn.ms))
	for i := range rn.ms {
		r.Bundles[i] = rn.ms[i].bundles
	}
	last := len(rn.ms) - 1
	if len(r.Bundles[last]) == 0 {
		return
	}
	for i := range last {
		if len(r.Bundles[i]) == 0 {
			continue
		}
		d := bundle.Compare(r.Bundles[last][0], r.Bundles[i][0], rn.ms[i].a, 4)
		r.Divergence = &d
		if d.Frame >= 0 {
			return
		}
	}
}
