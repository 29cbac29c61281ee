package determinism

import (
	"fmt"
	"strings"
)

// maxFactHazards bounds the hazards a function's fact lists.
const maxFactHazards = 8

// Hazard is a determinism hazard that a function reaches, as carried
// across packages in a [FuncFact].
type Hazard struct {
	Kind    string // the kind's name: maprange, time, …
	Verb    string // what the code does: "ranges over a map", "calls time.Now"
	Why     string // why it breaks determinism
	Instead string // what to do instead
	Pos     string // where: file.go:12
	Func    string // the function it is in: pkg.F
}

// FuncFact is exported for every exported function and method whose body,
// or whatever it calls statically, has determinism hazards (those not
// silenced by //rewind:allow), or which returns an unrounded
// floating-point product (which a caller's addition may fuse with).
type FuncFact struct {
	Hazards    []Hazard
	Truncated  bool   // more hazards were found than are listed
	Product    string // the unrounded product it returns, or ""
	ProductPos string // where that product is: file.go:12
	// Returned are the hazards of the function values (closures,
	// functions) it returns, which a caller may call later.
	Returned []Hazard
}

// AFact marks FuncFact as an analysis fact.
func (*FuncFact) AFact() {}

func (f *FuncFact) String() string {
	var kinds []string
	for _, h := range f.Hazards {
		kinds = append(kinds, h.Kind)
	}
	var parts []string
	if len(kinds) > 0 {
		s := "hazards(" + strings.Join(kinds, " ") + ")"
		if f.Truncated {
			s += "+"
		}
		parts = append(parts, s)
	}
	if f.Product != "" {
		parts = append(parts, "returns "+f.Product+" at "+f.ProductPos)
	}
	if len(f.Returned) > 0 {
		var kinds []string
		for _, h := range f.Returned {
			kinds = append(kinds, h.Kind)
		}
		parts = append(parts, "returns-func("+strings.Join(kinds, " ")+")")
	}
	return strings.Join(parts, " ")
}

// VarFact is exported for every exported package-level variable that its
// package writes outside its declaration (and outside init functions).
type VarFact struct {
	Written string // where: file.go:12
}

// AFact marks VarFact as an analysis fact.
func (*VarFact) AFact() {}

func (f *VarFact) String() string { return fmt.Sprintf("written(%s)", f.Written) }

// addHazard adds h to list unless it is there already or the list is
// full; it reports whether the list was full.
func addHazard(list []Hazard, h Hazard) ([]Hazard, bool) {
	for _, o := range list {
		if o.Kind == h.Kind && o.Pos == h.Pos && o.Verb == h.Verb {
			return list, false
		}
	}
	if len(list) >= maxFactHazards {
		return list, true
	}
	return append(list, h), false
}
