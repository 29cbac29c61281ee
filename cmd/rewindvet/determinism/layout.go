package determinism

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"
)

// savestatePath is the import path of the package whose Alloc places a
// game's state in the arena.
const savestatePath = "github.com/rewindgg/rewind/savestate"

// layoutArchs are the platforms a game's players may run, with Go's
// layouts: the 32-bit ones (int, uint and uintptr of 4 bytes, int64 and
// float64 aligned on 4 on 386) and the 64-bit ones.
var layoutArchs = []string{"386", "arm", "amd64", "arm64", "wasm"}

// checkLayouts reports every savestate.Alloc[T] in the package whose T
// is laid out differently on some of layoutArchs: the arena's bytes are
// the state the machines checksum and the snapshots a late joiner is
// sent, so a field at another offset, or of another size, on one
// player's machine is a desync at the first checksum.
func (c *checker) checkLayouts() {
	for _, f := range c.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			t, ok := c.allocType(call)
			if !ok {
				return true
			}
			if msg := layoutDiff(t); msg != "" && !c.allowed(call.Pos()) {
				c.diag(call.Pos(), "layout", msg, nil)
			}
			return true
		})
	}
}

// allocType is T of a call savestate.Alloc[T](...).
func (c *checker) allocType(call *ast.CallExpr) (types.Type, bool) {
	fun := ast.Unparen(call.Fun)
	switch x := fun.(type) {
	case *ast.IndexExpr:
		fun = x.X
	case *ast.IndexListExpr:
		fun = x.X
	}
	var id *ast.Ident
	switch x := fun.(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return nil, false
	}
	fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func)
	if !ok || fn.Name() != "Alloc" || fn.Pkg() == nil || fn.Pkg().Path() != savestatePath {
		return nil, false
	}
	inst, ok := c.pass.TypesInfo.Instances[id]
	if !ok || inst.TypeArgs.Len() != 1 {
		return nil, false
	}
	return inst.TypeArgs.At(0), true
}

// leaf is one field of a flattened layout: its path from the type, its
// offset from the start and its size.
type leaf struct {
	path       string
	off, bytes int64
}

// leaves flattens t's layout under sizes: every field of a basic (or
// pointer-shaped) type, with arrays by their first element.
func leaves(sizes types.Sizes, t types.Type, path string, off int64, out []leaf) []leaf {
	switch u := t.Underlying().(type) {
	case *types.Struct:
		fields := make([]*types.Var, u.NumFields())
		for i := range fields {
			fields[i] = u.Field(i)
		}
		offs := sizes.Offsetsof(fields)
		for i, f := range fields {
			out = leaves(sizes, f.Type(), path+"."+f.Name(), off+offs[i], out)
		}
		return out
	case *types.Array:
		if u.Len() > 0 {
			out = leaves(sizes, u.Elem(), path+"[0]", off, out)
		}
		return out
	}
	return append(out, leaf{path, off, sizes.Sizeof(t)})
}

// layoutDiff says how t's layout differs between layoutArchs, or ""
// when it is the same on all of them: the first field, in memory order,
// whose offset or size differs, or else the size of the whole.
func layoutDiff(t types.Type) string {
	name := types.TypeString(t, func(p *types.Package) string { return p.Name() })
	layouts := make([][]leaf, len(layoutArchs))
	totals := make([]int64, len(layoutArchs))
	for i, arch := range layoutArchs {
		sizes := types.SizesFor("gc", arch)
		layouts[i] = leaves(sizes, t, name, 0, nil)
		totals[i] = sizes.Sizeof(t)
	}
	for j := range layouts[0] {
		describe := func(i int) string {
			l := layouts[i][j]
			return fmt.Sprintf("at byte %d (%d bytes)", l.off, l.bytes)
		}
		if groups := groupArchs(describe); len(groups) > 1 {
			return fmt.Sprintf("%s is laid out differently across platforms: %s is %s; "+
				"machines on these platforms desync at the first checksum: use sized types (int64, int32, uint64) instead of int, uint and uintptr, "+
				"and order or pad the fields so that every offset is the same (64-bit fields first, or explicit padding)",
				name, layouts[0][j].path, strings.Join(groups, ", but "))
		}
	}
	describe := func(i int) string { return fmt.Sprintf("%d bytes", totals[i]) }
	if groups := groupArchs(describe); len(groups) > 1 {
		return fmt.Sprintf("%s's size differs across platforms: %s; machines on these platforms desync at the first checksum: pad its end so that its size is the same",
			name, strings.Join(groups, ", but "))
	}
	return ""
}

// groupArchs groups layoutArchs by what describe says of each, in their
// order: "at byte 4 (4 bytes) on 386 and arm".
func groupArchs(describe func(i int) string) []string {
	var order []string
	on := map[string][]string{}
	for i, arch := range layoutArchs {
		d := describe(i)
		if on[d] == nil {
			order = append(order, d)
		}
		on[d] = append(on[d], arch)
	}
	groups := make([]string, len(order))
	for k, d := range order {
		archs := on[d]
		list := archs[0]
		if n := len(archs); n > 1 {
			list = strings.Join(archs[:n-1], ", ") + " and " + archs[n-1]
		}
		groups[k] = d + " on " + list
	}
	return groups
}
