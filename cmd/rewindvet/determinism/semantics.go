package determinism

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"
)

// This file holds the checks of arithmetic whose result the language
// leaves to the platform: float-to-integer conversions, the bits of a
// NaN, integers narrowed through int, fmt's %p, and -nofloat.

// conversion checks a call expression that is a conversion.
func (c *checker) conversion(n *node, call *ast.CallExpr) {
	info := c.pass.TypesInfo
	tv, ok := info.Types[call.Fun]
	if !ok || !tv.IsType() || len(call.Args) != 1 {
		return
	}
	arg := call.Args[0]
	at, ok := info.Types[arg]
	if !ok || at.Value != nil { // a constant converts at compile time
		return
	}
	to, _ := tv.Type.Underlying().(*types.Basic)
	from, _ := at.Type.Underlying().(*types.Basic)
	if to == nil || from == nil || to.Info()&types.IsInteger == 0 {
		return
	}
	text := c.text(call, types.ExprString(call))
	switch {
	case from.Info()&types.IsFloat != 0:
		// A conversion whose operand the function compares with bounds,
		// after ruling NaN out, is the same everywhere (fixed.FromFloat).
		expr := types.ExprString(ast.Unparen(arg))
		bounded := c.compared(n, expr)
		if bounded && c.nanChecked(n, "") {
			return
		}
		h := hazard{pos: call.Pos(), kind: kFloatInt,
			noun: "float-to-integer conversion " + text,
			verb: "converts a float to an integer (" + text + ")"}
		if bounded {
			h.why = kFloatInt.why + "; " + expr + " is compared with bounds, but a NaN fails every comparison and is not ruled out"
			h.inst = "rule NaN out too (if " + expr + " != " + expr + "), or use fixed point"
		}
		c.add(n, h)
	case from.Info()&types.IsInteger != 0 && narrows(from, to) && !fits32(info, arg, to):
		c.add(n, hazard{pos: call.Pos(), kind: kNarrow,
			noun: "conversion " + text + " of " + article(from.Name()) + " to " + to.Name(),
			verb: "narrows " + article(from.Name()) + " through " + to.Name() + " (" + text + ")"})
	}
}

// article prefixes a type name with "a" or "an" (an int, a uint).
func article(name string) string {
	if name != "" && strings.IndexByte("aeio", name[0]) >= 0 {
		return "an " + name
	}
	return "a " + name
}

// narrows says whether converting from to the platform-sized to (int,
// uint, uintptr) keeps every value on 64-bit platforms but not on 32-bit
// ones. A platform-sized source (uint to int) is not: its value already
// has the platform's width.
func narrows(from, to *types.Basic) bool {
	switch to.Kind() {
	case types.Int:
		switch from.Kind() {
		case types.Int64, types.Uint64, types.Uint32:
			return true
		}
	case types.Uint, types.Uintptr:
		switch from.Kind() {
		case types.Int64, types.Uint64:
			return true
		}
	}
	return false
}

// fits32 says whether e's value visibly fits in the 32-bit version of
// to: a remainder or a mask by a small constant or by a length, or a
// shift right by enough bits.
func fits32(info *types.Info, e ast.Expr, to *types.Basic) bool {
	bits := int64(31) // int: 31 bits and a sign
	if to.Kind() != types.Int {
		bits = 32
	}
	limit := constant.MakeInt64(1 << bits)
	small := func(x ast.Expr) bool {
		x = ast.Unparen(x)
		if tv, ok := info.Types[x]; ok && tv.Value != nil {
			v := constant.ToInt(tv.Value)
			return v.Kind() == constant.Int && constant.Compare(v, token.LEQ, limit) && constant.Sign(v) >= 0
		}
		// uint64(len(s)): a length is an int, so it fits everywhere.
		if call, ok := x.(*ast.CallExpr); ok && len(call.Args) == 1 {
			if tv, ok := info.Types[call.Fun]; ok && tv.IsType() {
				return isLen(info, call.Args[0])
			}
		}
		return isLen(info, x)
	}
	signedToInt := !unsigned(info, e) && to.Kind() == types.Int
	switch x := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		switch x.Op {
		case token.REM: // |x % n| < n, and not negative when x is unsigned
			return small(x.Y) && (unsigned(info, x.X) || signedToInt)
		case token.AND:
			return small(x.Y) || small(x.X)
		case token.SHR:
			tv, ok := info.Types[x.Y]
			if !ok || tv.Value == nil {
				return false
			}
			v, ok := constant.Int64Val(constant.ToInt(tv.Value))
			if !ok {
				return false
			}
			if signedToInt {
				return v >= 32 // a 64-bit signed value shifted by 32 fits in 32 bits with its sign
			}
			return unsigned(info, x.X) && v >= 64-bits
		}
	}
	return false
}

// isLen says whether e is a call of the builtin len or cap.
func isLen(info *types.Info, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	b, ok := info.Uses[id].(*types.Builtin)
	return ok && (b.Name() == "len" || b.Name() == "cap")
}

// unsigned says whether e has an unsigned integer type.
func unsigned(info *types.Info, e ast.Expr) bool {
	b, ok := typeOf(info, e).(*types.Basic)
	return ok && b.Info()&types.IsUnsigned != 0
}

// nanBits checks math.Float64bits and math.Float32bits: the bits of a
// NaN differ between platforms. A constant argument, one converted from
// an integer, and one that the function tests with math.IsNaN (or x !=
// x) are not reported.
func (c *checker) nanBits(n *node, call *ast.CallExpr, fn *types.Func) {
	if fn.Pkg() == nil || fn.Pkg().Path() != "math" || (fn.Name() != "Float64bits" && fn.Name() != "Float32bits") || len(call.Args) != 1 {
		return
	}
	info := c.pass.TypesInfo
	arg := ast.Unparen(call.Args[0])
	if tv, ok := info.Types[arg]; ok && tv.Value != nil {
		return
	}
	if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 {
		if tv, ok := info.Types[conv.Fun]; ok && tv.IsType() {
			if b, ok := typeOf(info, conv.Args[0]).(*types.Basic); ok && b.Info()&types.IsInteger != 0 {
				return
			}
		}
	}
	if c.nanChecked(n, types.ExprString(arg)) {
		return
	}
	text := c.text(call, types.ExprString(call))
	c.add(n, hazard{pos: call.Pos(), kind: kNaNBits,
		noun: text + " of a value that may be NaN",
		verb: "reads the bits of a value that may be NaN (" + text + ")"})
}

// nanChecked says whether n's body tests expr for NaN: math.IsNaN(expr)
// or expr != expr; with expr "", any expression.
func (c *checker) nanChecked(n *node, expr string) bool {
	found := false
	is := func(e ast.Expr) bool { return expr == "" || types.ExprString(ast.Unparen(e)) == expr }
	for _, r := range n.syntax() {
		ast.Inspect(r, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.CallExpr:
				if len(x.Args) == 1 && is(x.Args[0]) {
					if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "IsNaN" {
						found = true
					}
				}
			case *ast.BinaryExpr:
				if x.Op == token.NEQ && is(x.X) && types.ExprString(ast.Unparen(x.X)) == types.ExprString(ast.Unparen(x.Y)) {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// compared says whether n's body compares expr with something (<, <=,
// >, >=): a range check.
func (c *checker) compared(n *node, expr string) bool {
	found := false
	for _, r := range n.syntax() {
		ast.Inspect(r, func(x ast.Node) bool {
			if b, ok := x.(*ast.BinaryExpr); ok {
				switch b.Op {
				case token.LSS, token.LEQ, token.GTR, token.GEQ:
					if types.ExprString(ast.Unparen(b.X)) == expr || types.ExprString(ast.Unparen(b.Y)) == expr {
						found = true
					}
				}
			}
			return !found
		})
	}
	return found
}

// printfPointer checks the calls of package fmt's printing functions:
// the verb %p, and an argument that fmt prints as an address (a pointer
// to anything but a struct, an array, a slice or a map, a channel, a
// function, an unsafe.Pointer).
func (c *checker) printfPointer(n *node, call *ast.CallExpr, fn *types.Func) {
	if fn.Pkg() == nil || fn.Pkg().Path() != "fmt" {
		return
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || !sig.Variadic() || sig.Recv() != nil {
		return
	}
	info := c.pass.TypesInfo
	first := sig.Params().Len() - 1 // the ...any
	if strings.HasSuffix(fn.Name(), "f") {
		i := first - 1 // the format precedes it
		if i >= 0 && i < len(call.Args) {
			if tv, ok := info.Types[call.Args[i]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String && hasVerb(constant.StringVal(tv.Value), 'p') {
				c.add(n, hazard{pos: call.Pos(), kind: kAddress, noun: "fmt." + fn.Name() + " with %p",
					verb: "formats an address with %p (fmt." + fn.Name() + ")"})
				return
			}
		}
	}
	if call.Ellipsis.IsValid() {
		return
	}
	for i := first; i >= 0 && i < len(call.Args); i++ {
		t := info.TypeOf(call.Args[i])
		if t == nil || !printsAddress(t) {
			continue
		}
		text := c.text(call.Args[i], types.ExprString(call.Args[i]))
		c.add(n, hazard{pos: call.Args[i].Pos(), kind: kAddress,
			noun: "fmt." + fn.Name() + " of " + text + " (" + types.TypeString(t, types.RelativeTo(c.pass.Pkg)) + "), which prints an address",
			verb: "formats an address (fmt." + fn.Name() + " of " + text + ")"})
	}
}

// printsAddress says whether fmt prints a value of type t as an address.
func printsAddress(t types.Type) bool {
	for _, m := range []string{"String", "Error", "Format", "GoString"} {
		if obj, _, _ := types.LookupFieldOrMethod(t, true, nil, m); obj != nil {
			if _, ok := obj.(*types.Func); ok {
				return false // fmt calls the method
			}
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Chan, *types.Signature:
		return true
	case *types.Basic:
		return u.Kind() == types.UnsafePointer
	case *types.Pointer:
		switch u.Elem().Underlying().(type) {
		case *types.Struct, *types.Array, *types.Slice, *types.Map:
			return false // printed as &{...}, &[...], &map[...]
		}
		return true
	}
	return false
}

// hasVerb says whether a format string has the verb v (not %%).
func hasVerb(format string, v byte) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		// Flags, width, precision and argument indexes.
		for i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] == v {
			return true
		}
	}
	return false
}

// floatUse checks, under -nofloat, an expression of a floating-point or
// complex type.
func (c *checker) floatUse(n *node, e ast.Expr) {
	info := c.pass.TypesInfo
	tv, ok := info.Types[e]
	if !ok || tv.IsType() || tv.Value != nil || tv.Type == nil {
		return
	}
	b, ok := tv.Type.Underlying().(*types.Basic)
	if !ok || b.Info()&(types.IsFloat|types.IsComplex) == 0 {
		return
	}
	c.add(n, hazard{pos: e.Pos(), kind: kFloat, noun: "floating point (" + b.Name() + ")",
		verb: "computes in floating point (" + b.Name() + ")"})
}

// freshRand says whether the method of a *rand.Rand that id names is
// called on a local variable of n that is only ever set to rand.New(…):
// a generator made in this call from its seed (whose hazards are checked
// where it is computed) and dropped at its end is deterministic.
func (c *checker) freshRand(n *node, id *ast.Ident, stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	sel, ok := stack[len(stack)-1].(*ast.SelectorExpr)
	if !ok || sel.Sel != id {
		return false
	}
	info := c.pass.TypesInfo
	recv, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := info.Uses[recv].(*types.Var)
	if !ok || isPackageVar(v) || v.IsField() {
		return false
	}
	fresh, other := 0, 0
	isNew := func(e ast.Expr) bool {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return false
		}
		fn := calledFunc(info, call)
		return fn != nil && fn.Pkg() != nil && (fn.Pkg().Path() == "math/rand" || fn.Pkg().Path() == "math/rand/v2") && fn.Name() == "New"
	}
	for _, r := range n.syntax() {
		ast.Inspect(r, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.AssignStmt:
				for i, l := range x.Lhs {
					if identVar(info, l) != v {
						continue
					}
					if len(x.Lhs) == len(x.Rhs) && isNew(x.Rhs[i]) {
						fresh++
					} else {
						other++
					}
				}
			case *ast.ValueSpec:
				for i, name := range x.Names {
					if identVar(info, name) != v {
						continue
					}
					if len(x.Names) == len(x.Values) && isNew(x.Values[i]) {
						fresh++
					} else {
						other++
					}
				}
			case *ast.UnaryExpr:
				if x.Op == token.AND && identVar(info, x.X) == v {
					other++
				}
			case *ast.FuncLit:
				return false // a closure could keep it
			}
			return true
		})
	}
	return fresh > 0 && other == 0
}
