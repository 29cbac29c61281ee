package determinism

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// This file follows the calls the syntax does not show: through
// interfaces, function values held in fields, variables, slices or maps,
// method values and closures. It builds the package's SSA form (generic
// functions instantiated), a call graph by variable type analysis
// (golang.org/x/tools/go/callgraph/vta, seeded with class hierarchy
// analysis), and adds its edges to the package's nodes. A dynamic call
// that reaches another package's function is checked like a static one:
// the standard library's listed functions, or the function's fact. It
// also finds the closures that write a captured variable that outlives
// the call that created it.

// followDynamic adds the call graph's edges to the nodes. Should the
// SSA builder or the call graph fail on some package, the failure is
// reported and the package is checked as the syntax shows it.
func (c *checker) followDynamic() {
	defer func() {
		if r := recover(); r != nil && len(c.pass.Files) > 0 {
			c.pass.Reportf(c.pass.Files[0].Package, "rewindvet could not build the call graph of %s (%v): calls through interfaces and function values are not followed in it", c.pass.Pkg.Path(), r)
		}
	}()
	prog := ssa.NewProgram(c.pass.Fset, ssa.InstantiateGenerics)
	created := make(map[*types.Package]bool)
	var create func(pkgs []*types.Package)
	create = func(pkgs []*types.Package) {
		for _, p := range pkgs {
			if created[p] {
				continue
			}
			created[p] = true
			create(p.Imports())
			prog.CreatePackage(p, nil, nil, true)
		}
	}
	create(c.pass.Pkg.Imports())
	pkg := prog.CreatePackage(c.pass.Pkg, c.pass.Files, c.pass.TypesInfo, false)
	pkg.Build()

	funcs := ssautil.AllFunctions(prog)
	chg := cha.CallGraph(prog)
	cg := vta.CallGraph(funcs, chg)

	d := &dynamic{c: c, prog: prog, cg: cg, cha: chg, nodes: make(map[*ssa.Function]*node)}
	d.valueRefs()
	var own []*ssa.Function
	for fn := range funcs {
		if n := d.nodeOf(fn); n != nil {
			own = append(own, fn)
		}
	}
	// In source order, so that the diagnostics come out in a stable order.
	sortFuncs(own)
	for _, fn := range own {
		d.edges(fn)
		d.escapingMethods(fn)
		d.captures(fn)
		d.returns(fn)
	}
	d.unresolvedCalls(own)
}

// returns notes, for an exported function, the function values it
// returns: its fact lists their hazards, for the callers that call them.
func (d *dynamic) returns(fn *ssa.Function) {
	n := d.nodeOf(fn)
	if n.fn == nil || !n.fn.Exported() || fn.Parent() != nil {
		return
	}
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			ret, ok := instr.(*ssa.Return)
			if !ok {
				continue
			}
			for _, v := range ret.Results {
				var target *ssa.Function
				switch x := v.(type) {
				case *ssa.MakeClosure:
					target, _ = x.Fn.(*ssa.Function)
				case *ssa.Function:
					target = x
				}
				if target == nil {
					continue
				}
				if rn := d.nodeOf(target); rn != nil && rn != n {
					n.rets = append(n.rets, rn)
				}
			}
		}
	}
}

// unresolvedCalls matches the calls of function values that VTA resolves
// to nothing (the value comes from another package's function) with the
// imported functions the package calls that return function values with
// hazards (their facts' Returned) and the same signature.
func (d *dynamic) unresolvedCalls(own []*ssa.Function) {
	c := d.c
	type source struct {
		fn   *types.Func
		sig  *types.Signature
		fact *FuncFact
	}
	var sources []source
	seen := make(map[*types.Func]bool)
	for _, obj := range c.pass.TypesInfo.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg || seen[fn.Origin()] {
			continue
		}
		fn = fn.Origin()
		seen[fn] = true
		var f FuncFact
		if !c.pass.ImportObjectFact(fn, &f) || len(f.Returned) == 0 {
			continue
		}
		res := fn.Type().(*types.Signature).Results()
		for i := 0; i < res.Len(); i++ {
			if sig, ok := res.At(i).Type().Underlying().(*types.Signature); ok {
				sources = append(sources, source{fn, sig, &FuncFact{Hazards: f.Returned}})
			}
		}
	}
	if len(sources) == 0 {
		return
	}
	sort.Slice(sources, func(i, j int) bool { return sources[i].fn.Pos() < sources[j].fn.Pos() })
	for _, fn := range own {
		resolved := make(map[ssa.CallInstruction]bool)
		if cgn := d.cg.Nodes[fn]; cgn != nil {
			for _, e := range cgn.Out {
				resolved[e.Site] = true
			}
		}
		n := d.nodeOf(fn)
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				call, ok := instr.(ssa.CallInstruction)
				if !ok || resolved[call] {
					continue
				}
				common := call.Common()
				if common.IsInvoke() || common.StaticCallee() != nil {
					continue
				}
				if _, builtin := common.Value.(*ssa.Builtin); builtin {
					continue
				}
				sig, ok := common.Value.Type().Underlying().(*types.Signature)
				if !ok {
					continue
				}
				for _, s := range sources {
					if types.Identical(sig, s.sig) {
						n.ext = append(n.ext, extCall{pos: call.Pos(), fn: s.fn, fact: s.fact, returned: true})
					}
				}
			}
		}
	}
}

// dynamic is the state of followDynamic.
type dynamic struct {
	c     *checker
	prog  *ssa.Program // for method sets
	cg    *callgraph.Graph
	cha   *callgraph.Graph // the class hierarchy analysis VTA starts from
	nodes map[*ssa.Function]*node
	refs  map[*types.Func][]token.Pos // functions of other packages used as values
}

// nodeOf returns the node of an SSA function of the package, or nil.
func (d *dynamic) nodeOf(fn *ssa.Function) *node {
	if n, ok := d.nodes[fn]; ok {
		return n
	}
	var n *node
	switch syn := fn.Syntax().(type) {
	case *ast.FuncDecl:
		if obj, ok := fn.Object().(*types.Func); ok && fn.Synthetic == "" {
			n = d.c.decls[obj.Origin()]
		}
	case *ast.FuncLit:
		n = d.c.lits[syn]
	}
	if n == nil {
		if o := fn.Origin(); o != nil && o != fn {
			n = d.nodeOf(o)
		}
	}
	d.nodes[fn] = n
	return n
}

// valueRefs finds where the package uses another package's function as
// a value (not calling it): g.now = time.Now.
func (d *dynamic) valueRefs() {
	d.refs = make(map[*types.Func][]token.Pos)
	info := d.c.pass.TypesInfo
	for _, f := range d.c.pass.Files {
		var stack []ast.Node
		ast.Inspect(f, func(x ast.Node) bool {
			if x == nil {
				stack = stack[:len(stack)-1]
				return false
			}
			if id, ok := x.(*ast.Ident); ok {
				if fn, ok := info.Uses[id].(*types.Func); ok && fn.Pkg() != nil && fn.Pkg() != d.c.pass.Pkg && !called(id, stack) {
					fn = fn.Origin()
					d.refs[fn] = append(d.refs[fn], id.Pos())
				}
			}
			stack = append(stack, x)
			return true
		})
	}
}

// called says whether the identifier id, with ancestors stack, is the
// function of a call: f(), pkg.F(), x.M(), F[T]().
func called(id *ast.Ident, stack []ast.Node) bool {
	var child ast.Node = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.SelectorExpr:
			if p.Sel != child {
				return false
			}
		case *ast.ParenExpr, *ast.IndexExpr, *ast.IndexListExpr:
		case *ast.CallExpr:
			return p.Fun == child
		default:
			return false
		}
		child = stack[i]
	}
	return false
}

// edges adds fn's call graph edges to its node: to the package's
// functions, and, for a dynamic call, to another package's function.
func (d *dynamic) edges(fn *ssa.Function) {
	n := d.nodeOf(fn)
	cgn := d.cg.Nodes[fn]
	if cgn == nil {
		return
	}
	out := cgn.Out
	// An interface method call that VTA resolves to nothing has a
	// receiver whose type comes from another package's function (a
	// constructor returning the interface): every method that
	// implements it may be called. Only for the interfaces of
	// non-standard packages, whose implementations are few.
	resolved := make(map[ssa.CallInstruction]bool)
	for _, e := range out {
		resolved[e.Site] = true
	}
	if chn := d.cha.Nodes[fn]; chn != nil {
		for _, e := range chn.Out {
			if e.Site == nil || resolved[e.Site] || !e.Site.Common().IsInvoke() {
				continue
			}
			if m := e.Site.Common().Method; m.Pkg() != nil && isStandardPath(m.Pkg().Path()) {
				continue
			}
			out = append(out, e)
		}
	}
	for _, e := range out {
		for _, callee := range d.targets(e.Callee.Func, make(map[*ssa.Function]bool)) {
			if cn := d.nodeOf(callee); cn != nil {
				if cn != n {
					n.calls = append(n.calls, cn)
				}
				continue
			}
			if e.Site == nil {
				continue
			}
			common := e.Site.Common()
			if common.StaticCallee() != nil {
				continue // a static call: its identifier is checked already
			}
			obj, ok := callee.Object().(*types.Func)
			if !ok || obj.Pkg() == nil {
				continue
			}
			obj = obj.Origin()
			if obj.Pkg() == d.c.pass.Pkg {
				continue
			}
			d.external(n, e.Site.Pos(), common, obj)
		}
	}
}

// isStandardPath says whether an import path looks like the standard
// library's: no dot in its first element.
func isStandardPath(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// escapingMethods adds, for every value of one of the package's types
// that fn converts to an interface with methods, an edge to the type's
// methods of that interface: whoever receives the value may call them,
// also code the call graph cannot see (sort.Sort calling Less, another
// package calling an Update).
func (d *dynamic) escapingMethods(fn *ssa.Function) {
	n := d.nodeOf(fn)
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			mi, ok := instr.(*ssa.MakeInterface)
			if !ok {
				continue
			}
			iface, ok := mi.Type().Underlying().(*types.Interface)
			if !ok || iface.NumMethods() == 0 {
				continue
			}
			t := mi.X.Type()
			named, _ := types.Unalias(derefType(t)).(*types.Named)
			if named == nil || named.Obj().Pkg() != d.c.pass.Pkg {
				continue
			}
			mset := d.prog.MethodSets.MethodSet(t)
			for i := 0; i < iface.NumMethods(); i++ {
				m := iface.Method(i)
				sel := mset.Lookup(m.Pkg(), m.Name())
				if sel == nil {
					continue
				}
				if obj, ok := sel.Obj().(*types.Func); ok {
					if cn := d.c.decls[obj.Origin()]; cn != nil && cn != n {
						n.calls = append(n.calls, cn)
					}
				}
			}
		}
	}
}

// fromTypes is the Synthetic of a function of a package known only by
// its types (another package's function): a real function.
const fromTypes = "from type information"

// targets resolves a callee through the synthetic wrappers (bound
// methods, thunks, pointer-receiver wrappers) to the functions they call.
func (d *dynamic) targets(f *ssa.Function, seen map[*ssa.Function]bool) []*ssa.Function {
	if d.nodeOf(f) != nil || f.Synthetic == "" || f.Synthetic == fromTypes || seen[f] {
		return []*ssa.Function{f}
	}
	seen[f] = true
	cgn := d.cg.Nodes[f]
	if cgn == nil || len(cgn.Out) == 0 {
		return []*ssa.Function{f}
	}
	var out []*ssa.Function
	for _, e := range cgn.Out {
		out = append(out, d.targets(e.Callee.Func, seen)...)
	}
	return out
}

// sortFuncs sorts functions by position, then name.
func sortFuncs(fns []*ssa.Function) {
	sort.Slice(fns, func(i, j int) bool {
		if fns[i].Pos() != fns[j].Pos() {
			return fns[i].Pos() < fns[j].Pos()
		}
		return fns[i].String() < fns[j].String()
	})
}

// external checks a dynamic call to another package's function.
func (d *dynamic) external(n *node, pos token.Pos, common *ssa.CallCommon, fn *types.Func) {
	c := d.c
	how := "through a function value"
	if common.IsInvoke() {
		how = "through the interface method " + common.Method.Name()
	}
	if k, what, why, ok := identity(fn); ok {
		c.add(n, hazard{pos: pos, kind: k, noun: "call of " + what + " " + how, verb: "calls " + what + " " + how, why: why})
		for _, ref := range d.refs[fn] {
			// The same message as where the identifier is reached
			// itself (a variable's initialiser): reported once.
			c.add(n, hazard{pos: ref, kind: k, noun: what, verb: "calls " + what, why: why})
		}
		return
	}
	var f FuncFact
	if c.pass.ImportObjectFact(fn, &f) && len(f.Hazards) > 0 {
		n.ext = append(n.ext, extCall{pos: pos, fn: fn, fact: &f, how: how})
	}
}

// captures reports the writes of a closure to a captured variable that
// outlives the call that created it: the closure was returned or stored
// (in a field, a variable, a map, a slice) by the function that declares
// the variable, so the variable is state kept outside the arena.
func (d *dynamic) captures(fn *ssa.Function) {
	if fn.Parent() == nil || len(fn.FreeVars) == 0 {
		return
	}
	n := d.nodeOf(fn)
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			var addr ssa.Value
			pos := instr.Pos()
			switch s := instr.(type) {
			case *ssa.Store:
				addr = s.Addr
			case *ssa.MapUpdate:
				addr = s.Map
			default:
				continue
			}
			fv := rootFreeVar(addr)
			if fv == nil || throughPointer(addr) || !outlives(fn, fv, make(map[ssa.Value]bool)) {
				continue
			}
			if !pos.IsValid() {
				pos = fn.Pos()
			}
			d.c.add(n, hazard{pos: pos, kind: kCapture,
				noun: "write to the captured variable " + fv.Name(),
				verb: "writes the captured variable " + fv.Name()})
		}
	}
}

// rootFreeVar returns the captured variable an address or a map is
// derived from (v, &v.f, &v[i], *v), or nil.
func rootFreeVar(v ssa.Value) *ssa.FreeVar {
	for {
		switch x := v.(type) {
		case *ssa.FreeVar:
			return x
		case *ssa.FieldAddr:
			v = x.X
		case *ssa.IndexAddr:
			v = x.X
		case *ssa.UnOp:
			if x.Op != token.MUL {
				return nil
			}
			v = x.X
		default:
			return nil
		}
	}
}

// throughPointer says whether an address derived from a captured
// variable writes through a pointer the variable holds (g.W.X = 1 with g
// a captured *Game): what it points to was not created with the closure,
// and may well be the arena. Maps and slices the variable holds are
// taken as the closure's own.
func throughPointer(v ssa.Value) bool {
	for {
		switch x := v.(type) {
		case *ssa.FieldAddr:
			v = x.X
		case *ssa.IndexAddr:
			v = x.X
		case *ssa.UnOp:
			if _, ok := x.Type().Underlying().(*types.Pointer); ok {
				return true
			}
			v = x.X
		default:
			return false
		}
	}
}

// outlives says whether the captured variable fv of closure fn lives
// longer than the call that declares it: fn, or a closure between it and
// the declaring function, escapes its parent.
func outlives(fn *ssa.Function, fv *ssa.FreeVar, seen map[ssa.Value]bool) bool {
	idx := -1
	for i, f := range fn.FreeVars {
		if f == fv {
			idx = i
		}
	}
	parent := fn.Parent()
	if idx < 0 || parent == nil {
		return false
	}
	for _, b := range parent.Blocks {
		for _, instr := range b.Instrs {
			mc, ok := instr.(*ssa.MakeClosure)
			if !ok || mc.Fn != fn {
				continue
			}
			if escapes(mc, seen) {
				return true
			}
			if pfv, ok := mc.Bindings[idx].(*ssa.FreeVar); ok && outlives(parent, pfv, seen) {
				return true
			}
		}
	}
	return false
}

// escapes says whether a value (a closure, or an address or a slice it
// was stored in) leaves the function that makes it: returned, sent, put
// in a map, run by go, stored through an address that is not rooted at
// a local allocation (a field of a parameter, a global), stored in a
// local allocation that escapes itself, appended to a slice that
// escapes, or passed to a function of the package that stores it.
// Passing it to another call is taken as calling it there.
func escapes(v ssa.Value, seen map[ssa.Value]bool) bool {
	if seen[v] {
		return false
	}
	seen[v] = true
	refs := v.Referrers()
	if refs == nil {
		return false
	}
	for _, r := range *refs {
		switch r := r.(type) {
		case *ssa.Return, *ssa.Send, *ssa.Go, *ssa.MapUpdate:
			return true
		case *ssa.Store:
			if r.Val != v {
				continue
			}
			root := allocRoot(r.Addr)
			if root == nil || escapes(root, seen) {
				return true
			}
		case *ssa.MakeInterface, *ssa.ChangeType, *ssa.Phi, *ssa.MakeClosure,
			*ssa.FieldAddr, *ssa.IndexAddr, *ssa.Slice, *ssa.UnOp:
			if escapes(r.(ssa.Value), seen) {
				return true
			}
		case *ssa.Call:
			if r.Call.Value == v {
				continue // called here
			}
			if b, ok := r.Call.Value.(*ssa.Builtin); ok {
				if b.Name() == "append" && escapes(r, seen) {
					return true
				}
				continue
			}
			// Passed to a function of the package that stores it
			// (bus.Subscribe(func() { n++ })).
			if sc := r.Call.StaticCallee(); sc != nil && len(sc.Params) == len(r.Call.Args) {
				for i, a := range r.Call.Args {
					if a == v && escapes(sc.Params[i], seen) {
						return true
					}
				}
			}
		}
	}
	return false
}

// allocRoot returns the local allocation an address is in (&x, &x.f,
// &x[i]), or nil.
func allocRoot(v ssa.Value) *ssa.Alloc {
	for {
		switch x := v.(type) {
		case *ssa.Alloc:
			return x
		case *ssa.FieldAddr:
			v = x.X
		case *ssa.IndexAddr:
			v = x.X
		default:
			return nil
		}
	}
}
