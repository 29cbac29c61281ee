package determinism

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// This file decides whether a range over a map has a result that cannot
// depend on the iteration order: the keys (or values of a basic type)
// collected into a slice that is sorted after the loop, commutative
// integer reductions (sums, counts, products, xor, and, or, min, max),
// copies into another map under the same key, and deletes.

// orderUse describes why a range over a map depends on its order, when
// the analysis can say more than "ranges over a map".
type orderUse struct {
	why, instead string
}

// orderFree says whether the range over a map rs, in node n, has a
// result independent of the iteration order. When it does not and the
// reason is specific, it returns it.
func (c *checker) orderFree(n *node, rs *ast.RangeStmt) (bool, *orderUse) {
	return c.orderFreeRange(n, rs, true)
}

// iteratorOrderFree says whether the iterator of maps.Keys, Values or
// All that id names is used in a way that does not depend on its order:
// ranged over by an order-free loop, or collected by slices.Collect into
// a slice that is sorted afterwards (keys, or values of a basic type).
func (c *checker) iteratorOrderFree(n *node, id *ast.Ident, name string, stack []ast.Node) bool {
	info := c.pass.TypesInfo
	i := len(stack) - 1
	var child ast.Node = id
	for ; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.SelectorExpr, *ast.ParenExpr, *ast.IndexExpr, *ast.IndexListExpr:
			child = p
			continue
		case *ast.CallExpr:
			if p.Fun != child {
				return false
			}
			child = p
		default:
			return false
		}
		break
	}
	for i--; i >= 0; i-- {
		if _, ok := stack[i].(*ast.ParenExpr); !ok {
			break
		}
		child = stack[i]
	}
	if i < 0 {
		return false
	}
	switch p := stack[i].(type) {
	case *ast.RangeStmt:
		if p.X != child {
			return false
		}
		free, _ := c.orderFreeRange(n, p, name != "Values")
		return free
	case *ast.CallExpr:
		fn := calledFunc(info, p)
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "slices" || fn.Name() != "Collect" || len(p.Args) != 1 || p.Args[0] != child || i == 0 {
			return false
		}
		as, ok := stack[i-1].(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 || ast.Unparen(as.Rhs[0]) != p {
			return false
		}
		s := identVar(info, as.Lhs[0])
		if s == nil {
			return false
		}
		if how, _ := c.sortedAfter(n, s, as.End()); how == "" {
			return false
		}
		if name == "Keys" {
			return true
		}
		sl, ok := typeOf(info, as.Lhs[0]).(*types.Slice)
		if !ok {
			return false
		}
		_, basic := sl.Elem().Underlying().(*types.Basic)
		return basic
	}
	return false
}

// orderFreeRange is orderFree, for a range over a map or an iterator of
// one; keyUnique says whether the range's key is the map's key.
func (c *checker) orderFreeRange(n *node, rs *ast.RangeStmt, keyUnique bool) (bool, *orderUse) {
	info := c.pass.TypesInfo
	o := &orderCheck{c: c, info: info, rs: rs, accs: make(map[string]bool), appends: make(map[*types.Var][]ast.Expr), locals: make(map[*types.Var]bool)}
	o.key = identVar(info, rs.Key)
	o.val = identVar(info, rs.Value)
	if o.key != nil {
		o.locals[o.key] = true
	}
	if o.val != nil {
		o.locals[o.val] = true
	}
	if !keyUnique {
		o.key = nil // a value: two iterations may see the same
	}
	if !o.stmts(rs.Body.List) {
		return false, o.reason
	}
	// No accumulator may be read but by its own update.
	for _, r := range o.reads {
		for acc := range o.accs {
			if r == acc || strings.HasPrefix(r, acc+".") || strings.HasPrefix(acc, r+".") {
				return false, &orderUse{why: "the loop reads " + r + ", which it also updates, so each iteration sees what the earlier ones left there"}
			}
		}
	}
	for s, elems := range o.appends {
		sorted, sortCall := c.sortedAfter(n, s, rs.End())
		if sorted == "" {
			return false, &orderUse{
				why:     "the loop appends to " + s.Name() + " in that order, and " + s.Name() + " is not sorted afterwards",
				instead: "sort " + s.Name() + " after the loop (slices.Sort), or range over slices.Sorted(maps.Keys(m))"}
		}
		for _, e := range elems {
			if !o.totalElem(e) && !o.comparesKey(e, sortCall) {
				return false, &orderUse{
					why:     "the loop appends map entries to " + s.Name() + ", and " + sorted + " leaves those that compare equal in that order",
					instead: "collect and sort the keys, then read the map in that order"}
			}
		}
	}
	return true, nil
}

// orderCheck is the state of one orderFree.
type orderCheck struct {
	c        *checker
	info     *types.Info
	rs       *ast.RangeStmt
	key, val *types.Var
	accs     map[string]bool           // what it updates: x, w.Total
	appends  map[*types.Var][]ast.Expr // slices appended to, with what
	locals   map[*types.Var]bool       // declared in the loop
	reads    []string                  // what it reads outside updates
	reason   *orderUse
}

// identVar returns the variable an identifier declares or uses.
func identVar(info *types.Info, e ast.Expr) *types.Var {
	id, ok := e.(*ast.Ident)
	if !ok || id.Name == "_" {
		return nil
	}
	if v, ok := info.Defs[id].(*types.Var); ok {
		return v
	}
	v, _ := info.Uses[id].(*types.Var)
	return v
}

// because records why the loop depends on the order, unless a reason
// is recorded already, and returns false.
func (o *orderCheck) because(why string) bool {
	if o.reason == nil {
		o.reason = &orderUse{why: why}
	}
	return false
}

func (o *orderCheck) stmts(list []ast.Stmt) bool {
	for _, s := range list {
		if !o.stmt(s) {
			return false
		}
	}
	return true
}

func (o *orderCheck) stmt(s ast.Stmt) bool {
	switch s := s.(type) {
	case *ast.EmptyStmt:
		return true
	case *ast.BlockStmt:
		return o.stmts(s.List)
	case *ast.BranchStmt:
		if s.Tok == token.CONTINUE && s.Label == nil {
			return true
		}
		return o.because("the loop stops at the first entry that reaches its " + s.Tok.String() + ", and which entry that is depends on the order")
	case *ast.ReturnStmt:
		return o.because("the loop returns at the first entry that reaches the return, and which entry that is depends on the order")
	case *ast.IncDecStmt:
		return o.reduce(s.X, nil)
	case *ast.ExprStmt:
		call, ok := ast.Unparen(s.X).(*ast.CallExpr)
		if !ok {
			return false
		}
		if !o.builtin(call, "delete") {
			return o.because("the loop calls " + types.ExprString(call.Fun) + ", whose effects happen in that order")
		}
		return o.pure(call.Args[0]) && o.pure(call.Args[1])
	case *ast.DeclStmt:
		gd, ok := s.Decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			return false
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for _, v := range vs.Values {
				if !o.pure(v) {
					return false
				}
			}
			for _, name := range vs.Names {
				if v := identVar(o.info, name); v != nil {
					o.locals[v] = true
				}
			}
		}
		return true
	case *ast.IfStmt:
		if s.Init != nil && !o.stmt(s.Init) {
			return false
		}
		if ok, handled := o.minMax(s); handled {
			return ok
		}
		if !o.pure(s.Cond) || !o.stmts(s.Body.List) {
			return false
		}
		return s.Else == nil || o.stmt(s.Else)
	case *ast.AssignStmt:
		return o.assign(s)
	}
	return false
}

// assign checks an assignment in the loop.
func (o *orderCheck) assign(s *ast.AssignStmt) bool {
	if s.Tok == token.DEFINE {
		for _, r := range s.Rhs {
			if !o.pure(r) {
				return false
			}
		}
		for _, l := range s.Lhs {
			if v := identVar(o.info, l); v != nil {
				o.locals[v] = true
			}
		}
		return true
	}
	if len(s.Lhs) != 1 || len(s.Rhs) != 1 {
		return false
	}
	lhs, rhs := ast.Unparen(s.Lhs[0]), ast.Unparen(s.Rhs[0])
	if s.Tok != token.ASSIGN {
		switch s.Tok {
		case token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.XOR_ASSIGN, token.OR_ASSIGN, token.AND_ASSIGN:
			return o.reduce(lhs, rhs)
		}
		return false
	}
	if id, ok := lhs.(*ast.Ident); ok {
		if id.Name == "_" {
			return o.pure(rhs)
		}
		v := identVar(o.info, id)
		if v == nil {
			return false
		}
		if o.locals[v] {
			return o.pure(rhs)
		}
		// s = append(s, e...)
		if call, ok := rhs.(*ast.CallExpr); ok && o.builtin(call, "append") && len(call.Args) >= 2 && call.Ellipsis == token.NoPos {
			if identVar(o.info, call.Args[0]) != v {
				return false
			}
			for _, a := range call.Args[1:] {
				if !o.pure(a) {
					return false
				}
			}
			o.appends[v] = append(o.appends[v], call.Args[1:]...)
			o.accs[v.Name()] = true
			return true
		}
		// x = min(x, e), x = max(x, e)
		if call, ok := rhs.(*ast.CallExpr); ok && (o.builtin(call, "min") || o.builtin(call, "max")) && isInteger(o.info, lhs) {
			var others []ast.Expr
			self := false
			for _, a := range call.Args {
				if identVar(o.info, a) == v && !self {
					self = true
					continue
				}
				others = append(others, a)
			}
			if !self {
				return false
			}
			for _, a := range others {
				if !o.pure(a) {
					return false
				}
			}
			o.accs[v.Name()] = true
			return true
		}
		// found = true: every iteration that writes writes the same.
		if tv, ok := o.info.Types[rhs]; ok && tv.Value != nil {
			o.accs[v.Name()] = true
			return true
		}
		return o.because("the loop assigns " + v.Name() + ", and the last entry to do so, in that order, wins")
	}
	// dst[k] = e, with k the range's key: one entry per key.
	if ix, ok := lhs.(*ast.IndexExpr); ok && o.key != nil && identVar(o.info, ix.Index) == o.key {
		if _, ok := typeOf(o.info, ix.X).(*types.Map); !ok {
			return false
		}
		o.accs[types.ExprString(ast.Unparen(ix.X))] = true
		return o.pure(rhs)
	}
	if call, ok := rhs.(*ast.CallExpr); ok && o.builtin(call, "append") {
		return o.because("the loop appends to " + types.ExprString(lhs) + " in that order")
	}
	return o.because("the loop assigns " + types.ExprString(lhs) + ", and the last entry to do so, in that order, wins")
}

// reduce checks x op= e (or x++ when e is nil): commutative only on
// integers.
func (o *orderCheck) reduce(x, e ast.Expr) bool {
	if !isInteger(o.info, x) {
		if b, ok := typeOf(o.info, x).(*types.Basic); ok && b.Info()&(types.IsFloat|types.IsComplex) != 0 {
			o.reason = &orderUse{
				why:     "the loop accumulates a floating-point value, and rounding makes the result depend on the order of the terms",
				instead: "accumulate over slices.Sorted(maps.Keys(m)), or in fixed point"}
		}
		return false
	}
	acc := ast.Unparen(x)
	if ix, ok := acc.(*ast.IndexExpr); ok {
		// hist[v.Team]++: one counter per index, each a reduction.
		if !o.pure(ix.Index) {
			return false
		}
		acc = ast.Unparen(ix.X)
	}
	v := rootVar(o.info, acc)
	if v == nil {
		return false
	}
	if !o.locals[v] {
		o.accs[types.ExprString(acc)] = true
	}
	return e == nil || o.pure(e)
}

// minMax handles if e > x { x = e } (and <, >=, <=, either side): a
// min or max reduction into an integer x.
func (o *orderCheck) minMax(s *ast.IfStmt) (ok, handled bool) {
	cond, isBin := ast.Unparen(s.Cond).(*ast.BinaryExpr)
	if !isBin || s.Else != nil || len(s.Body.List) != 1 {
		return false, false
	}
	switch cond.Op {
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
	default:
		return false, false
	}
	as, isAssign := s.Body.List[0].(*ast.AssignStmt)
	if !isAssign || as.Tok != token.ASSIGN || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return false, false
	}
	x := identVar(o.info, as.Lhs[0])
	if x == nil || o.locals[x] || !isInteger(o.info, as.Lhs[0]) {
		return false, false
	}
	ex, ey := types.ExprString(ast.Unparen(cond.X)), types.ExprString(ast.Unparen(cond.Y))
	name, val := x.Name(), types.ExprString(ast.Unparen(as.Rhs[0]))
	if !(ex == name && ey == val) && !(ey == name && ex == val) {
		return false, false
	}
	o.accs[x.Name()] = true
	return o.pure(as.Rhs[0]), true
}

// builtin says whether call calls the builtin name.
func (o *orderCheck) builtin(call *ast.CallExpr, name string) bool {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	b, ok := o.info.Uses[id].(*types.Builtin)
	return ok && b.Name() == name
}

// pure says whether e has no effects and calls nothing but builtins
// without effects, conversions and pure functions (pureFunc); it notes
// the variables e reads.
func (o *orderCheck) pure(e ast.Expr) bool {
	ok := true
	ast.Inspect(e, func(x ast.Node) bool {
		if !ok {
			return false
		}
		switch x := x.(type) {
		case *ast.FuncLit:
			ok = false
		case *ast.UnaryExpr:
			if x.Op == token.ARROW {
				ok = false
			}
		case *ast.CallExpr:
			if tv, isType := o.info.Types[x.Fun]; isType && tv.IsType() {
				break
			}
			switch {
			case o.builtin(x, "len"), o.builtin(x, "cap"), o.builtin(x, "min"), o.builtin(x, "max"):
			default:
				fn := calledFunc(o.info, x)
				ok = fn != nil && o.c.pureFunc(fn)
				if !ok {
					o.because("the loop calls " + types.ExprString(x.Fun) + ", which may have effects, in that order")
				}
			}
		case *ast.Ident, *ast.SelectorExpr, *ast.StarExpr:
			if p, isPath := o.path(x.(ast.Expr)); isPath {
				o.reads = append(o.reads, p)
				return false
			}
		}
		return ok
	})
	return ok
}

// path returns e as a path (x, x.f.g, *x) of a variable, or false.
func (o *orderCheck) path(e ast.Expr) (string, bool) {
	for x := e; ; {
		switch y := x.(type) {
		case *ast.Ident:
			if _, isVar := o.info.Uses[y].(*types.Var); !isVar {
				return "", false
			}
			return types.ExprString(e), true
		case *ast.SelectorExpr:
			sel, isSel := o.info.Selections[y]
			if !isSel {
				if _, isVar := o.info.Uses[y.Sel].(*types.Var); !isVar {
					return "", false
				}
				return types.ExprString(e), true // pkg.V
			}
			if sel.Kind() != types.FieldVal {
				return "", false
			}
			x = y.X
		case *ast.StarExpr:
			x = y.X
		case *ast.ParenExpr:
			x = y.X
		default:
			return "", false
		}
	}
}

// comparesKey says whether the element e is a composite literal that
// holds the range's key in a field, and the comparison of the sort call
// reads that field: the key is unique, so the order is total.
func (o *orderCheck) comparesKey(e ast.Expr, sortCall *ast.CallExpr) bool {
	lit, ok := ast.Unparen(e).(*ast.CompositeLit)
	if !ok || o.key == nil || sortCall == nil || len(sortCall.Args) < 2 {
		return false
	}
	st, ok := typeOf(o.info, lit).(*types.Struct)
	if !ok {
		return false
	}
	field := ""
	for i, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if identVar(o.info, kv.Value) == o.key {
				if id, ok := kv.Key.(*ast.Ident); ok {
					field = id.Name
				}
			}
		} else if identVar(o.info, el) == o.key && i < st.NumFields() {
			field = st.Field(i).Name()
		}
	}
	if field == "" {
		return false
	}
	found := false
	ast.Inspect(sortCall.Args[len(sortCall.Args)-1], func(x ast.Node) bool {
		if sel, ok := x.(*ast.SelectorExpr); ok && sel.Sel.Name == field {
			found = true
		}
		return !found
	})
	return found
}

// totalElem says whether sorting elements like e orders them totally:
// elements that compare equal are then indistinguishable (values of a
// basic type), or unique (the range's key).
func (o *orderCheck) totalElem(e ast.Expr) bool {
	if o.key != nil && identVar(o.info, e) == o.key {
		return true
	}
	_, basic := typeOf(o.info, e).(*types.Basic)
	return basic
}

// isInteger says whether e has an integer type.
func isInteger(info *types.Info, e ast.Expr) bool {
	b, ok := typeOf(info, e).(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// rootVar returns the variable at the root of a field path (x, x.f,
// x.f.g, *x): the variable an update writes into.
func rootVar(info *types.Info, e ast.Expr) *types.Var {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return identVar(info, x)
		case *ast.SelectorExpr:
			if _, ok := info.Selections[x]; !ok {
				return identVar(info, x.Sel) // pkg.V
			}
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// sortedAfter says how the slice variable s is sorted in n after pos
// ("sort.Slice", "slices.Sort", …), or "" when it is not.
func (c *checker) sortedAfter(n *node, s *types.Var, pos token.Pos) (string, *ast.CallExpr) {
	info := c.pass.TypesInfo
	how := ""
	var sortCall *ast.CallExpr
	for _, r := range n.syntax() {
		ast.Inspect(r, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok || how != "" || call.Pos() < pos || len(call.Args) == 0 {
				return how == ""
			}
			var fid *ast.Ident
			switch f := ast.Unparen(call.Fun).(type) {
			case *ast.SelectorExpr:
				fid = f.Sel
			case *ast.IndexExpr:
				if sel, ok := f.X.(*ast.SelectorExpr); ok {
					fid = sel.Sel
				}
			}
			if fid == nil {
				return true
			}
			fn, ok := info.Uses[fid].(*types.Func)
			if !ok || fn.Pkg() == nil {
				return true
			}
			arg := ast.Unparen(call.Args[0])
			if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 { // sort.Sort(byX(s))
				if tv, ok := info.Types[conv.Fun]; ok && tv.IsType() {
					arg = ast.Unparen(conv.Args[0])
				}
			}
			if identVar(info, arg) != s {
				return true
			}
			switch fn.Pkg().Path() {
			case "sort":
				switch fn.Name() {
				case "Strings", "Ints", "Float64s", "Slice", "SliceStable", "Sort", "Stable":
					how = "sort." + fn.Name()
				}
			case "slices":
				switch fn.Name() {
				case "Sort", "SortFunc", "SortStableFunc":
					how = "slices." + fn.Name()
				}
			}
			if how != "" {
				sortCall = call
			}
			return how == ""
		})
	}
	return how, sortCall
}

// pureStd are the standard packages whose functions (not methods) only
// compute a result from their arguments.
var pureStd = map[string]bool{
	"math": true, "math/bits": true, "strings": true, "unicode": true,
	"unicode/utf8": true, "cmp": true, "strconv": true,
}

// pureFunc says whether fn only computes a result from its arguments
// (and from package-level variables it reads): a function of pureStd,
// or a function of the package that assigns nothing but its own local
// variables, calls nothing but builtins without effects, conversions
// and pure functions, and neither ranges over a map nor uses channels,
// goroutines or function literals.
func (c *checker) pureFunc(fn *types.Func) bool {
	fn = fn.Origin()
	sig, _ := fn.Type().(*types.Signature)
	if fn.Pkg() == nil || sig == nil {
		return false
	}
	if pureStd[fn.Pkg().Path()] {
		return sig.Recv() == nil
	}
	if fn.Pkg() != c.pass.Pkg {
		return false
	}
	if v, ok := c.pure[fn]; ok {
		return v
	}
	c.pure[fn] = false // while computing: recursion is not pure
	n := c.decls[fn]
	if n == nil || n.decl == nil {
		return false
	}
	info := c.pass.TypesInfo
	decl := n.decl
	local := func(e ast.Expr) bool {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
			return false
		}
		if id.Name == "_" {
			return true
		}
		obj := info.ObjectOf(id)
		return obj != nil && decl.Pos() <= obj.Pos() && obj.Pos() < decl.End()
	}
	ok := true
	ast.Inspect(decl.Body, func(x ast.Node) bool {
		if !ok {
			return false
		}
		switch x := x.(type) {
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				ok = ok && local(l)
			}
		case *ast.IncDecStmt:
			ok = local(x.X)
		case *ast.RangeStmt:
			if _, isMap := typeOf(info, x.X).(*types.Map); isMap {
				ok = false
			}
			if x.Tok == token.ASSIGN {
				ok = (x.Key == nil || local(x.Key)) && (x.Value == nil || local(x.Value))
			}
		case *ast.SendStmt, *ast.GoStmt, *ast.SelectStmt, *ast.FuncLit, *ast.DeferStmt:
			ok = false
		case *ast.UnaryExpr:
			ok = x.Op != token.ARROW
		case *ast.CallExpr:
			if tv, isType := info.Types[x.Fun]; isType && tv.IsType() {
				break
			}
			if id, isID := ast.Unparen(x.Fun).(*ast.Ident); isID {
				if b, isB := info.Uses[id].(*types.Builtin); isB {
					switch b.Name() {
					case "len", "cap", "min", "max", "append", "make", "new", "panic", "complex", "real", "imag":
					default:
						ok = false
					}
					break
				}
			}
			callee := calledFunc(info, x)
			ok = callee != nil && c.pureFunc(callee)
		}
		return ok
	})
	c.pure[fn] = ok
	return ok
}
