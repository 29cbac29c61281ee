// Package apilist writes the exported API of packages one declaration a
// line, in the format of Go's own api/*.txt files:
//
//	pkg rollback, func NewSession(Config) (*Session, error)
//	pkg rollback, method (*Session) Advance() (Result, error)
//	pkg rollback, type Config struct, Players int
//	pkg rollback, const MaxPlayers = 8
//	pkg rollback, const MaxPlayers untyped int
//
// Parameter names are left out (renaming one changes no caller); a type's
// methods are its method sets', promoted ones included; an interface lists
// its methods on its own line and one line each. TestAPI compares the
// listings checked in under api/ with the code, so that no change to an
// exported name goes unnoticed; `make api` rewrites them.
package apilist

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// Lines returns the sorted listing of pkg, each line starting with
// "pkg name, " where name is pkg's path less trim (the repository's module
// path and a slash).
func Lines(pkg *types.Package, trim string) []string {
	w := &writer{pkg: pkg, name: strings.TrimPrefix(pkg.Path(), trim)}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		if !token.IsExported(name) {
			continue
		}
		switch obj := scope.Lookup(name).(type) {
		case *types.Const:
			w.emit("const %s %s", name, w.typ(obj.Type()))
			w.emit("const %s = %s", name, obj.Val().ExactString())
		case *types.Var:
			w.emit("var %s %s", name, w.typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			w.emit("func %s%s%s", name, w.typeParams(sig.TypeParams()), w.signature(sig))
		case *types.TypeName:
			w.typeName(obj)
		}
	}
	slices.Sort(w.lines)
	return slices.Compact(w.lines)
}

// Exported counts pkg's exported top-level names: constants, variables,
// functions and types.
func Exported(pkg *types.Package) int {
	n := 0
	for _, name := range pkg.Scope().Names() {
		if token.IsExported(name) {
			n++
		}
	}
	return n
}

type writer struct {
	pkg   *types.Package
	name  string
	lines []string
}

func (w *writer) emit(format string, args ...any) {
	w.lines = append(w.lines, "pkg "+w.name+", "+fmt.Sprintf(format, args...))
}

func (w *writer) typeName(obj *types.TypeName) {
	name := obj.Name()
	if alias, ok := obj.Type().(*types.Alias); ok {
		w.emit("type %s%s = %s", name, w.typeParams(alias.TypeParams()), w.typ(alias.Rhs()))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok { // a basic type: only in package unsafe
		w.emit("type %s %s", name, w.typ(obj.Type()))
		return
	}
	decl := name + w.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit("type %s struct", decl)
		for f := range u.Fields() {
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				w.emit("type %s struct, embedded %s", decl, w.typ(f.Type()))
			} else {
				w.emit("type %s struct, %s %s", decl, f.Name(), w.typ(f.Type()))
			}
		}
	case *types.Interface:
		if !u.IsMethodSet() { // a constraint: its type set is its API
			w.emit("type %s %s", decl, w.typ(u))
		}
		var names []string
		unexported := false
		for m := range u.Methods() {
			if !m.Exported() {
				unexported = true
				continue
			}
			names = append(names, m.Name())
			w.emit("type %s interface, %s%s", decl, m.Name(), w.signature(m.Type().(*types.Signature)))
		}
		if unexported {
			names = append(names, "unexported methods")
		}
		if u.IsMethodSet() {
			w.emit("type %s interface { %s }", decl, strings.Join(names, ", "))
		}
		return // an interface's method set is its methods
	default:
		w.emit("type %s %s", decl, w.typ(u))
	}
	// The methods callable on a T and on a *T, promoted ones included.
	recvName := name
	if tps := named.TypeParams(); tps.Len() > 0 {
		params := make([]string, tps.Len())
		for i := range tps.Len() {
			params[i] = tps.At(i).Obj().Name()
		}
		recvName += "[" + strings.Join(params, ", ") + "]"
	}
	seen := map[string]bool{}
	for _, recv := range []types.Type{named, types.NewPointer(named)} {
		ms := types.NewMethodSet(recv)
		for sel := range ms.Methods() {
			m := sel.Obj()
			if !m.Exported() || seen[m.Name()] {
				continue
			}
			seen[m.Name()] = true
			r := recvName
			if _, ptr := recv.(*types.Pointer); ptr {
				r = "*" + name
			}
			w.emit("method (%s) %s%s", r, m.Name(), w.signature(m.Type().(*types.Signature)))
		}
	}
}

// qualifier names a type of another package by that package's name, as Go's
// listings do.
func (w *writer) qualifier(p *types.Package) string {
	if p == nil || p == w.pkg { // nil: the universe's error and comparable
		return ""
	}
	return p.Name()
}

func (w *writer) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range tps.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		tp := tps.At(i)
		b.WriteString(tp.Obj().Name() + " " + w.typ(tp.Constraint()))
	}
	b.WriteByte(']')
	return b.String()
}

// signature writes sig without its receiver and its parameters' names:
// "(int, ...string) (T, error)".
func (w *writer) signature(sig *types.Signature) string {
	var b strings.Builder
	b.WriteString(w.tuple(sig.Params(), sig.Variadic()))
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + w.typ(res.At(0).Type()))
	default:
		b.WriteString(" " + w.tuple(res, false))
	}
	return b.String()
}

func (w *writer) tuple(t *types.Tuple, variadic bool) string {
	parts := make([]string, t.Len())
	for i := range t.Len() {
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			parts[i] = "..." + w.typ(typ.(*types.Slice).Elem())
		} else {
			parts[i] = w.typ(typ)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// typ writes t as types.TypeString would, but with no parameter names in
// function types.
func (w *writer) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Pointer:
		return "*" + w.typ(t.Elem())
	case *types.Slice:
		return "[]" + w.typ(t.Elem())
	case *types.Array:
		return "[" + strconv.FormatInt(t.Len(), 10) + "]" + w.typ(t.Elem())
	case *types.Map:
		return "map[" + w.typ(t.Key()) + "]" + w.typ(t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendOnly:
			return "chan<- " + w.typ(t.Elem())
		case types.RecvOnly:
			return "<-chan " + w.typ(t.Elem())
		}
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			return "chan (" + w.typ(t.Elem()) + ")"
		}
		return "chan " + w.typ(t.Elem())
	case *types.Signature:
		return "func" + w.signature(t)
	case *types.Named:
		s := t.Obj().Name()
		if q := w.qualifier(t.Obj().Pkg()); q != "" {
			s = q + "." + s
		}
		if args := t.TypeArgs(); args.Len() > 0 {
			parts := make([]string, args.Len())
			for i := range args.Len() {
				parts[i] = w.typ(args.At(i))
			}
			s += "[" + strings.Join(parts, ", ") + "]"
		}
		return s
	case *types.Struct:
		if t.NumFields() == 0 {
			return "struct{}"
		}
		parts := make([]string, 0, t.NumFields())
		for f := range t.Fields() {
			if f.Embedded() {
				parts = append(parts, w.typ(f.Type()))
			} else {
				parts = append(parts, f.Name()+" "+w.typ(f.Type()))
			}
		}
		return "struct{ " + strings.Join(parts, "; ") + " }"
	case *types.Interface:
		if t.NumExplicitMethods()+t.NumEmbeddeds() == 0 {
			return "interface{}"
		}
		var parts []string
		for i := range t.NumEmbeddeds() {
			parts = append(parts, w.typ(t.EmbeddedType(i)))
		}
		for m := range t.ExplicitMethods() {
			parts = append(parts, m.Name()+w.signature(m.Type().(*types.Signature)))
		}
		return "interface{ " + strings.Join(parts, "; ") + " }"
	case *types.Union:
		parts := make([]string, t.Len())
		for i := range t.Len() {
			parts[i] = w.typ(t.Term(i).Type())
			if t.Term(i).Tilde() {
				parts[i] = "~" + parts[i]
			}
		}
		return strings.Join(parts, " | ")
	}
	return types.TypeString(t, w.qualifier)
}
