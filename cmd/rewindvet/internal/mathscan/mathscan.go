// Package mathscan derives, from a Go installation's source, which
// functions of package math may return different bits on different
// platforms, and writes the list as Go source for the analyzer.
//
// For every GOARCH that `go tool dist list` names, it selects the files of
// $GOROOT/src/math that the architecture builds (go/build's MatchFile: the
// //go:build lines and the _GOARCH file suffixes, so *_asm.go, *_noasm.go,
// stubs.go and the per-architecture files), type-checks them, and follows
// the calls from each exported function, taking the constant haveArchX
// guards of that architecture into account (if haveArchExp { return
// archExp(x) } reaches only archExp where haveArchExp is true, and only the
// code after it where it is false). A function reaches assembly on an
// architecture when it reaches a function declared without a body there.
// It reaches fusable Go code on an architecture whose compiler fuses
// multiply-adds (an SSA rules file of cmd/compile calling useFMA) when it
// reaches an expression that package fusion reports. Functions built on
// others count: Log2 reaches Log's assembly.
//
// Functions whose result IEEE 754 specifies exactly ([Exact]: Floor, Max,
// Mod, Sqrt, FMA, …) are left out and not followed: every correct
// implementation of them, assembly, intrinsic or Go, returns the same
// bits. Compiler intrinsics are not seen, and need not be: the compiler
// replaces only such exact functions (and math/bits) with instructions.
package mathscan

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/rewindgg/rewind/cmd/rewindvet/internal/fusion"
)

// Func is one exported function of package math whose result may depend
// on the platform.
type Func struct {
	Name string
	Asm  []string // the GOARCHes on which it reaches assembly
	FMA  []string // the GOARCHes on which it reaches Go code the compiler may fuse
}

// Table is what Scan derives.
type Table struct {
	// FMAArches are the GOARCHes whose compiler fuses multiply-adds, with
	// a condition where the rules have one ("amd64 (GOAMD64=v3 and up)").
	FMAArches []string
	Funcs     []Func
}

// Scan derives the table from the Go installation at goroot.
func Scan(goroot string) (*Table, error) {
	arches, err := distArches(goroot)
	if err != nil {
		return nil, err
	}
	fmaArches, fmaNotes, err := fusingArches(goroot, arches)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(goroot, "src", "math")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	parsed := make(map[string]*ast.File)
	imp := importer.ForCompiler(fset, "source", nil)
	asm := make(map[string][]string)
	fma := make(map[string][]string)
	for _, arch := range arches {
		ctx := build.Default
		ctx.GOROOT, ctx.GOARCH, ctx.GOOS, ctx.CgoEnabled = goroot, arch.goarch, arch.goos, false
		ctx.ToolTags = nil
		var files []*ast.File
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			ok, err := ctx.MatchFile(dir, name)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			f := parsed[name]
			if f == nil {
				f, err = parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
				if err != nil {
					return nil, err
				}
				parsed[name] = f
			}
			files = append(files, f)
		}
		a, err := scanArch(fset, imp, files, slices.Contains(fmaArches, arch.goarch))
		if err != nil {
			return nil, fmt.Errorf("math for %s/%s: %v", arch.goos, arch.goarch, err)
		}
		for name, r := range a {
			if r.asm {
				asm[name] = append(asm[name], arch.goarch)
			}
			if r.fma {
				fma[name] = append(fma[name], arch.goarch)
			}
		}
	}
	t := &Table{}
	for _, a := range fmaArches {
		if n := fmaNotes[a]; n != "" {
			a += " (" + n + ")"
		}
		t.FMAArches = append(t.FMAArches, a)
	}
	names := make(map[string]bool)
	for n := range asm {
		names[n] = true
	}
	for n := range fma {
		names[n] = true
	}
	for n := range names {
		t.Funcs = append(t.Funcs, Func{Name: n, Asm: asm[n], FMA: fma[n]})
	}
	sort.Slice(t.Funcs, func(i, j int) bool { return t.Funcs[i].Name < t.Funcs[j].Name })
	return t, nil
}

type arch struct{ goos, goarch string }

// distArches lists each GOARCH of `go tool dist list` once, with one of its
// GOOSes (linux where it has it).
func distArches(goroot string) ([]arch, error) {
	cmd := exec.Command(filepath.Join(goroot, "bin", "go"), "tool", "dist", "list")
	cmd.Env = append(os.Environ(), "GOROOT="+goroot)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool dist list: %v", err)
	}
	goos := make(map[string]string)
	for _, line := range strings.Fields(string(out)) {
		o, a, ok := strings.Cut(line, "/")
		if !ok {
			continue
		}
		if cur, seen := goos[a]; !seen || (o == "linux" && cur != "linux") {
			goos[a] = o
		}
	}
	var list []arch
	for a, o := range goos {
		list = append(list, arch{goos: o, goarch: a})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].goarch < list[j].goarch })
	if len(list) == 0 {
		return nil, fmt.Errorf("go tool dist list: no ports")
	}
	return list, nil
}

var goamd64Rx = regexp.MustCompile(`GOAMD64\s*>=\s*(\d)`)

// fusingArches reads cmd/compile's SSA rules: an architecture fuses when
// its rules file (ARM64.rules; PPC64.rules for ppc64 and ppc64le) has a
// rule calling useFMA. A GOAMD64 condition on such a rule becomes a note.
func fusingArches(goroot string, arches []arch) ([]string, map[string]string, error) {
	dir := filepath.Join(goroot, "src", "cmd", "compile", "internal", "ssa", "_gen")
	rules, err := filepath.Glob(filepath.Join(dir, "*.rules"))
	if err != nil || len(rules) == 0 {
		return nil, nil, fmt.Errorf("no SSA rules in %s", dir)
	}
	var list []string
	notes := make(map[string]string)
	for _, r := range rules {
		data, err := os.ReadFile(r)
		if err != nil {
			return nil, nil, err
		}
		var note string
		found := false
		for line := range strings.SplitSeq(string(data), "\n") {
			if !strings.Contains(line, "useFMA") || strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			found = true
			if m := goamd64Rx.FindStringSubmatch(line); m != nil {
				note = "GOAMD64=v" + m[1] + " and up"
			}
		}
		if !found {
			continue
		}
		base := strings.ToLower(strings.TrimSuffix(filepath.Base(r), ".rules"))
		for _, a := range arches {
			if a.goarch == base || a.goarch == base+"le" {
				list = append(list, a.goarch)
				if note != "" {
					notes[a.goarch] = note
				}
			}
		}
	}
	sort.Strings(list)
	list = slices.Compact(list)
	return list, notes, nil
}

// Exact are the exported functions of package math whose result IEEE 754
// specifies exactly: the exact value, or the exact value correctly
// rounded (Sqrt, FMA). Every correct implementation returns the same bits,
// so reaching one neither makes a function platform-dependent nor lists
// it, even where it is assembly (Floor) or Go code with a multiply-add
// that cannot change its result (FMA's special cases). This is a fact
// about the functions, not something the source shows: it is kept by
// hand, and TestExactAreMathFunctions checks the names.
var Exact = map[string]bool{
	"Abs": true, "Ceil": true, "Copysign": true, "Dim": true, "FMA": true,
	"Floor": true, "Frexp": true, "Ldexp": true, "Max": true, "Min": true,
	"Mod": true, "Modf": true, "Nextafter": true, "Nextafter32": true,
	"Remainder": true, "Round": true, "RoundToEven": true, "Signbit": true,
	"Sqrt": true, "Trunc": true,
}

type result struct{ asm, fma bool }

// scanArch type-checks one architecture's files of package math and
// follows each exported function's calls.
func scanArch(fset *token.FileSet, imp types.Importer, files []*ast.File, fuses bool) (map[string]result, error) {
	info := &types.Info{
		Types:      make(map[ast.Expr]types.TypeAndValue),
		Defs:       make(map[*ast.Ident]types.Object),
		Uses:       make(map[*ast.Ident]types.Object),
		Selections: make(map[*ast.SelectorExpr]*types.Selection),
	}
	var errs []error
	conf := types.Config{Importer: imp, Error: func(err error) { errs = append(errs, err) }}
	pkg, _ := conf.Check("math", fset, files, info)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	decls := make(map[*types.Func]*ast.FuncDecl)
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					decls[fn] = fd
				}
			}
		}
	}
	var fa *fusion.Analysis
	if fuses {
		fa = fusion.Analyze(pkg, info, files, nil)
	}
	memo := make(map[*types.Func]result)
	onStack := make(map[*types.Func]bool)
	var reach func(fn *types.Func) result
	reach = func(fn *types.Func) result {
		if r, ok := memo[fn]; ok {
			return r
		}
		fd := decls[fn]
		if fd == nil || onStack[fn] || Exact[fn.Name()] {
			return result{}
		}
		onStack[fn] = true
		r, callees := walkLive(info, pkg, fa, fd)
		for _, callee := range callees {
			c := reach(callee)
			r.asm = r.asm || c.asm
			r.fma = r.fma || c.fma
		}
		onStack[fn] = false
		memo[fn] = r
		return r
	}
	out := make(map[string]result)
	for fn, fd := range decls {
		if fd.Recv != nil || !fn.Exported() {
			continue
		}
		if r := reach(fn); r.asm || r.fma {
			out[fn.Name()] = r
		}
	}
	return out, nil
}

// walkLive follows the statements of fd that run, leaving out the
// branches that a constant haveArchX guard makes dead: it returns whether
// they are assembly (fd has no body) or hold a fusable expression (fa not
// nil), and the package's functions they refer to.
func walkLive(info *types.Info, pkg *types.Package, fa *fusion.Analysis, fd *ast.FuncDecl) (result, []*types.Func) {
	if fd.Body == nil {
		return result{asm: true}, nil
	}
	var r result
	var out []*types.Func
	seen := make(map[*types.Func]bool)
	var stmts func(list []ast.Stmt)
	var node func(n ast.Node)
	node = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if fa != nil {
				if _, ok := fa.SiteAt(n); ok {
					r.fma = true
				}
			}
			switch n := n.(type) {
			case *ast.BlockStmt:
				stmts(n.List)
				return false
			case *ast.CaseClause:
				for _, e := range n.List {
					node(e)
				}
				stmts(n.Body)
				return false
			case *ast.CommClause:
				if n.Comm != nil {
					node(n.Comm)
				}
				stmts(n.Body)
				return false
			case *ast.Ident:
				if fn, ok := info.Uses[n].(*types.Func); ok && fn.Pkg() == pkg && !seen[fn] {
					seen[fn] = true
					out = append(out, fn)
				}
			}
			return true
		})
	}
	stmts = func(list []ast.Stmt) {
		for _, s := range list {
			if is, ok := s.(*ast.IfStmt); ok && is.Init == nil {
				if v, ok := guard(info, is.Cond); ok {
					if v {
						node(is.Body)
						if returns(is.Body) {
							return // the rest of the block is dead
						}
					} else if is.Else != nil {
						node(is.Else)
					}
					continue
				}
			}
			node(s)
		}
	}
	stmts(fd.Body.List)
	return r, out
}

// guard reports the value of a haveArchX constant used as a condition.
func guard(info *types.Info, cond ast.Expr) (bool, bool) {
	id, ok := ast.Unparen(cond).(*ast.Ident)
	if !ok || !strings.HasPrefix(id.Name, "haveArch") {
		return false, false
	}
	tv, ok := info.Types[id]
	if !ok || tv.Value == nil {
		return false, false
	}
	return tv.Value.String() == "true", true
}

func returns(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	_, ok := b.List[len(b.List)-1].(*ast.ReturnStmt)
	return ok
}

// Source renders the table as the Go file the analyzer compiles, in
// package pkg.
func (t *Table) Source(pkg string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by mkmathlist from $GOROOT/src/math and cmd/compile's SSA rules; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	b.WriteString("// fmaArches are the GOARCHes whose compiler fuses x*y + z into one\n// fused multiply-add (their SSA rules call useFMA).\n")
	fmt.Fprintf(&b, "const fmaArches = %q\n\n", strings.Join(t.FMAArches, ", "))
	b.WriteString("// mathFuncs are the exported functions of package math whose result may\n" +
		"// depend on the platform: asm lists the GOARCHes on which they reach\n" +
		"// assembly, fma those on which they reach Go code with multiply-adds\n" +
		"// the compiler may fuse.\n")
	b.WriteString("var mathFuncs = map[string]mathFunc{\n")
	for _, f := range t.Funcs {
		fmt.Fprintf(&b, "\t%q: {asm: %q, fma: %q},\n", f.Name, strings.Join(f.Asm, ", "), strings.Join(f.FMA, ", "))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
