// Package fusion finds the floating-point expressions that the Go compiler
// may fuse into one fused multiply-add (FMA) instruction.
//
// The Go specification lets an implementation fuse x*y + z (and x*y - z,
// z + x*y, z - x*y, and so r += x*y and r -= x*y) into one operation that
// rounds once, "possibly across statements", unless the product is
// explicitly converted: float64(x*y) + z is never fused. The gc compiler
// does this on arm64, loong64, ppc64x, riscv64, s390x and amd64 with
// GOAMD64=v3, and because it works on SSA values, "across statements"
// includes a product stored in a local variable, a struct field or through
// a pointer and read back, a product returned by a function that is
// inlined, and a product passed as an argument to a function that is
// inlined.
//
// An unrounded product is found flow-insensitively, per package: a product
// expression as written (also in parentheses or negated); a variable, a
// field path of one (v.f.g, v[3], v[i] with the same i, *v) that is
// assigned one anywhere in the package (or multiplied in place, v *= y);
// the result of a function of the package that returns one; a parameter
// of a function of the package that some static call passes one; and,
// through the caller's callback, the result of an imported function. A
// conversion to a floating-point type rounds and ends it.
//
// It does not follow products through slices or maps passed around,
// through interface or function-value calls, through imported functions'
// parameters, nor through package-level variables' initialisers, and it
// ignores complex arithmetic. Being flow-insensitive, it may report a sum
// whose operand held a product only on another path.
package fusion

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// Source is an unrounded product: where it is computed and how it reads.
type Source struct {
	Pos   token.Pos
	Expr  string
	Where string // where it is, when Pos is not known (another package's product)
}

// Site is an addition or subtraction that may be fused with a product.
type Site struct {
	Node    ast.Node // the *ast.BinaryExpr or *ast.AssignStmt
	Text    string   // the expression as written, shortened
	Product Source   // the product it may be fused with
	// Direct is true when the product is an operand as written; then
	// Operand is that product, which a conversion to Type would round.
	Direct  bool
	Operand ast.Expr
	// Via names what carries the product when it is not direct: a
	// variable, a field, a parameter or a call.
	Via  string
	Type types.Type // the operand's type, for the conversion
}

// External says whether an imported function returns an unrounded
// product, and which.
type External func(fn *types.Func) (Source, bool)

// Analysis holds a package's unrounded products.
type Analysis struct {
	info  *types.Info
	pkg   *types.Package
	ext   External
	paths map[pathKey]Source
	funcs map[*types.Func]Source

	changed bool
}

// pathKey names a storage location: a variable and a path of fields,
// constant indices, index variables and dereferences below it.
type pathKey struct {
	root *types.Var
	path string
}

// Analyze finds the unrounded products of a package's files: info must
// have Types, Defs, Uses and Selections. ext may be nil.
func Analyze(pkg *types.Package, info *types.Info, files []*ast.File, ext External) *Analysis {
	a := &Analysis{info: info, pkg: pkg, ext: ext,
		paths: make(map[pathKey]Source), funcs: make(map[*types.Func]Source)}
	// Each round can only add marks, and there are finitely many
	// locations and functions: it ends. The bound is a safeguard.
	for range 64 {
		a.changed = false
		for _, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					a.walk(nil, nil, d)
					continue
				}
				fn, _ := info.Defs[fd.Name].(*types.Func)
				var sig *types.Signature
				if fn != nil {
					sig, _ = fn.Type().(*types.Signature)
				}
				if fd.Body != nil {
					a.walk(fn, sig, fd.Body)
				}
			}
		}
		if !a.changed {
			break
		}
	}
	return a
}

// Returns says whether fn, a function of the package, returns an
// unrounded product.
func (a *Analysis) Returns(fn *types.Func) (Source, bool) {
	s, ok := a.funcs[fn.Origin()]
	return s, ok
}

// walk propagates products through the statements of one function body
// (fn and sig are nil for a function literal or a declaration outside a
// function).
func (a *Analysis) walk(fn *types.Func, sig *types.Signature, root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if n != root {
				var lsig *types.Signature
				if tv, ok := a.info.Types[n]; ok {
					lsig, _ = tv.Type.(*types.Signature)
				}
				a.walk(nil, lsig, n.Body)
				return false
			}
		case *ast.AssignStmt:
			switch n.Tok {
			case token.ASSIGN, token.DEFINE:
				if len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if s, ok := a.product(n.Rhs[i]); ok {
							a.mark(l, s)
						}
					}
				}
			case token.MUL_ASSIGN:
				if len(n.Lhs) == 1 && isFloat(a.info.TypeOf(n.Lhs[0])) {
					a.mark(n.Lhs[0], Source{Pos: n.Pos(), Expr: short(n)})
				}
			}
		case *ast.ValueSpec:
			if len(n.Names) == len(n.Values) {
				for i, name := range n.Names {
					if s, ok := a.product(n.Values[i]); ok {
						a.mark(name, s)
					}
				}
			}
		case *ast.ReturnStmt:
			if fn == nil || sig == nil || sig.Results().Len() != 1 {
				break
			}
			var s Source
			var ok bool
			switch len(n.Results) {
			case 0:
				s, ok = a.paths[pathKey{root: sig.Results().At(0)}]
			case 1:
				s, ok = a.product(n.Results[0])
			}
			if ok {
				if _, done := a.funcs[fn]; !done {
					a.funcs[fn] = s
					a.changed = true
				}
			}
		case *ast.CallExpr:
			a.call(n)
		}
		return true
	})
}

// call marks the parameters of a function of the package that a static
// call passes an unrounded product.
func (a *Analysis) call(call *ast.CallExpr) {
	callee, recvArg := a.staticCallee(call.Fun)
	if callee == nil || callee.Pkg() != a.pkg {
		return
	}
	sig, ok := callee.Type().(*types.Signature)
	if !ok {
		return
	}
	args := call.Args
	if recvArg {
		if len(args) == 0 {
			return
		}
		args = args[1:]
	}
	params := sig.Params()
	for i, arg := range args {
		if i >= params.Len() || (sig.Variadic() && i >= params.Len()-1) {
			break
		}
		if s, ok := a.product(arg); ok {
			k := pathKey{root: params.At(i)}
			if _, done := a.paths[k]; !done && isFloat(params.At(i).Type()) {
				a.paths[k] = s
				a.changed = true
			}
		}
	}
}

// staticCallee returns the function or concrete method that fun denotes,
// and whether it is a method expression (whose first argument is the
// receiver).
func (a *Analysis) staticCallee(fun ast.Expr) (*types.Func, bool) {
	fun = ast.Unparen(fun)
	if ix, ok := fun.(*ast.IndexExpr); ok { // explicit instantiation
		fun = ix.X
	} else if ix, ok := fun.(*ast.IndexListExpr); ok {
		fun = ix.X
	}
	var id *ast.Ident
	methodExpr := false
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
		if sel, ok := a.info.Selections[f]; ok {
			methodExpr = sel.Kind() == types.MethodExpr
		}
	default:
		return nil, false
	}
	fn, ok := a.info.Uses[id].(*types.Func)
	if !ok {
		return nil, false
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil && types.IsInterface(sig.Recv().Type()) {
		return nil, false
	}
	return fn.Origin(), methodExpr
}

// mark records that the location l may hold the product s.
func (a *Analysis) mark(l ast.Expr, s Source) {
	if !isFloat(a.info.TypeOf(l)) {
		return
	}
	k, ok := a.path(l)
	if !ok {
		return
	}
	if _, done := a.paths[k]; !done {
		a.paths[k] = s
		a.changed = true
	}
}

// path names the location e denotes, if it is one that is tracked.
func (a *Analysis) path(e ast.Expr) (pathKey, bool) {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if e.Name == "_" {
			return pathKey{}, false
		}
		v, ok := a.info.Uses[e].(*types.Var)
		if !ok {
			v, ok = a.info.Defs[e].(*types.Var)
		}
		if !ok || v == nil {
			return pathKey{}, false
		}
		return pathKey{root: v}, true
	case *ast.SelectorExpr:
		sel, ok := a.info.Selections[e]
		if !ok || sel.Kind() != types.FieldVal {
			return pathKey{}, false
		}
		k, ok := a.path(e.X)
		if !ok {
			return pathKey{}, false
		}
		k.path += "." + e.Sel.Name
		return k, true
	case *ast.IndexExpr:
		k, ok := a.path(e.X)
		if !ok {
			return pathKey{}, false
		}
		if tv, ok := a.info.Types[e.Index]; ok && tv.Value != nil {
			k.path += "[" + tv.Value.ExactString() + "]"
			return k, true
		}
		if id, ok := ast.Unparen(e.Index).(*ast.Ident); ok {
			if v, ok := a.info.Uses[id].(*types.Var); ok {
				k.path += "[" + v.Name() + "@" + strconv.Itoa(int(v.Pos())) + "]"
				return k, true
			}
		}
		return pathKey{}, false
	case *ast.StarExpr:
		k, ok := a.path(e.X)
		if !ok {
			return pathKey{}, false
		}
		k.path += ".*"
		return k, true
	}
	return pathKey{}, false
}

// product says whether e may be an unrounded floating-point product.
func (a *Analysis) product(e ast.Expr) (Source, bool) {
	e = ast.Unparen(e)
	tv, ok := a.info.Types[e]
	if !ok || tv.Value != nil || !isFloat(tv.Type) {
		return Source{}, false
	}
	switch e := e.(type) {
	case *ast.BinaryExpr:
		if e.Op == token.MUL {
			return Source{Pos: e.Pos(), Expr: short(e)}, true
		}
		return Source{}, false
	case *ast.UnaryExpr:
		if e.Op == token.SUB || e.Op == token.ADD {
			return a.product(e.X)
		}
		return Source{}, false
	case *ast.CallExpr:
		if ftv, ok := a.info.Types[e.Fun]; ok && ftv.IsType() {
			return Source{}, false // a conversion rounds
		}
		fn, _ := a.staticCallee(e.Fun)
		if fn == nil {
			return Source{}, false
		}
		if fn.Pkg() == a.pkg {
			s, ok := a.funcs[fn]
			return s, ok
		}
		if a.ext != nil {
			return a.ext(fn)
		}
		return Source{}, false
	}
	if k, ok := a.path(e); ok {
		s, ok := a.paths[k]
		return s, ok
	}
	return Source{}, false
}

// direct returns the product operand of e as written (perhaps negated or
// in parentheses), or nil.
func direct(e ast.Expr) ast.Expr {
	switch u := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		if u.Op == token.MUL {
			return u
		}
	case *ast.UnaryExpr:
		if u.Op == token.SUB || u.Op == token.ADD {
			return direct(u.X)
		}
	}
	return nil
}

// Sites returns the fusable additions and subtractions in body, without
// those of the function literals inside it.
func (a *Analysis) Sites(body ast.Node) []Site {
	var out []Site
	ast.Inspect(body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok {
			return lit == body
		}
		if s, ok := a.SiteAt(n); ok {
			out = append(out, s)
		}
		return true
	})
	return out
}

// SiteAt says whether n is an addition or subtraction that may be fused
// with a product (not looking inside it).
func (a *Analysis) SiteAt(n ast.Node) (Site, bool) {
	switch n := n.(type) {
	case *ast.BinaryExpr:
		if n.Op != token.ADD && n.Op != token.SUB {
			break
		}
		tv, ok := a.info.Types[n]
		if !ok || tv.Value != nil || !isFloat(tv.Type) {
			break
		}
		for _, op := range []ast.Expr{n.X, n.Y} {
			if s, ok := a.product(op); ok {
				return a.site(n, short(n), op, s), true
			}
		}
	case *ast.AssignStmt:
		if (n.Tok != token.ADD_ASSIGN && n.Tok != token.SUB_ASSIGN) || len(n.Lhs) != 1 || len(n.Rhs) != 1 {
			break
		}
		if !isFloat(a.info.TypeOf(n.Lhs[0])) {
			break
		}
		if s, ok := a.product(n.Rhs[0]); ok {
			return a.site(n, short(n), n.Rhs[0], s), true
		}
	}
	return Site{}, false
}

func (a *Analysis) site(n ast.Node, text string, op ast.Expr, s Source) Site {
	st := Site{Node: n, Text: text, Product: s, Type: a.info.TypeOf(op)}
	if d := direct(op); d != nil {
		st.Direct, st.Operand = true, d
		if t := a.info.TypeOf(d); t != nil {
			st.Type = t
		}
		return st
	}
	st.Via = short(ast.Unparen(op))
	return st
}

// isFloat says whether t is a floating-point type, or a type parameter
// that may be one.
func isFloat(t types.Type) bool {
	return floatish(t, 0)
}

func floatish(t types.Type, depth int) bool {
	if t == nil || depth > 8 {
		return false
	}
	if tp, ok := t.(*types.TypeParam); ok {
		return floatish(tp.Constraint(), depth+1)
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return u.Info()&types.IsFloat != 0
	case *types.Interface:
		for i := range u.NumEmbeddeds() {
			if floatish(u.EmbeddedType(i), depth+1) {
				return true
			}
		}
	case *types.Union:
		for i := range u.Len() {
			if floatish(u.Term(i).Type(), depth+1) {
				return true
			}
		}
	}
	return false
}

// short renders an expression or statement, at most 60 bytes of it.
func short(n ast.Node) string {
	var s string
	switch n := n.(type) {
	case ast.Expr:
		s = types.ExprString(n)
	case *ast.AssignStmt:
		if len(n.Lhs) == 1 && len(n.Rhs) == 1 {
			s = types.ExprString(n.Lhs[0]) + " " + n.Tok.String() + " " + types.ExprString(n.Rhs[0])
		}
	}
	if len(s) > 60 {
		s = strings.ToValidUTF8(s[:57], "") + "..."
	}
	return s
}
