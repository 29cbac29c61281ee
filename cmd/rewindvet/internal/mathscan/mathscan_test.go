package mathscan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func goroot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestExactAreMathFunctions checks that every name in Exact is an
// exported function of the installed package math.
func TestExactAreMathFunctions(t *testing.T) {
	dir := filepath.Join(goroot(t), "src", "math")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	funcs := make(map[string]bool)
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() {
				funcs[fd.Name.Name] = true
			}
		}
	}
	for name := range Exact {
		if !funcs[name] {
			t.Errorf("Exact lists %s, which package math does not have", name)
		}
	}
}

// TestScan checks a few facts of the derivation that hold for every Go
// release that has them: Exp is assembly on amd64, Hypot on 386, Log2 is
// built on Log's assembly, and the compiler fuses on arm64.
func TestScan(t *testing.T) {
	tab, err := Scan(goroot(t))
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]Func)
	for _, f := range tab.Funcs {
		byName[f.Name] = f
	}
	has := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ fn, arch string }{{"Exp", "amd64"}, {"Hypot", "386"}, {"Log2", "amd64"}} {
		if !has(byName[c.fn].Asm, c.arch) {
			t.Errorf("%s: asm %v, want %s in it", c.fn, byName[c.fn].Asm, c.arch)
		}
	}
	if !has(byName["Sin"].FMA, "arm64") {
		t.Errorf("Sin: fma %v, want arm64 in it", byName["Sin"].FMA)
	}
	if _, ok := byName["Floor"]; ok {
		t.Errorf("Floor is exact but listed")
	}
	if !strings.Contains(strings.Join(tab.FMAArches, ","), "arm64") {
		t.Errorf("FMAArches %v, want arm64", tab.FMAArches)
	}
}
