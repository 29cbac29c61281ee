package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewindgg/rewind/internal/typecheck"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestDocs compiles every ```go block of README.md and docs/*.md. The
// blocks that use rtc and pion are compiled in the workspace, which holds
// the rtc module.
func TestDocs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var blocks []Block
	for _, path := range files {
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		bs, err := Blocks(filepath.ToSlash(rel), string(md))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	names := packageNames(t)
	errs, compiled := check(t, blocks, names)
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("%d of %d Go blocks compiled", compiled, len(blocks))
	if compiled == 0 {
		t.Error("no Go block compiled")
	}
}

// check loads what blocks import or may use and compiles each.
func check(t *testing.T, blocks []Block, names map[string]string) (errs []error, compiled int) {
	paths := []string{"fmt"} // at least one pattern
	for _, b := range blocks {
		if b.Skip != "" {
			continue
		}
		imports, selectors, err := Needs(b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range selectors {
			if p := names[s]; p != "" {
				imports = append(imports, p)
			}
		}
		for _, p := range imports {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	loaded, err := typecheck.Load(root, paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if b.Skip != "" {
			t.Logf("%s:%d not compiled: %s", b.File, b.Line, b.Skip)
			continue
		}
		errs = append(errs, Check(b, loaded.Fset, loaded.Importer(), names)...)
		compiled++
	}
	return errs, compiled
}

// packageNames maps a package's name to its import path, for the packages
// a fragment may use without importing them: the standard library's (but
// where two share a name) and the public ones of this repository and its
// examples.
func packageNames(t *testing.T) map[string]string {
	pkgs, err := typecheck.List(root, "std", "./...", "./rtc/...")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	ambiguous := map[string]bool{}
	for _, p := range pkgs {
		if strings.Contains(p.ImportPath, "internal") || strings.Contains(p.ImportPath, "vendor/") ||
			strings.Contains(p.ImportPath, "/cmd/") || p.Name == "main" {
			continue
		}
		if old, ok := names[p.Name]; ok && old != p.ImportPath {
			ambiguous[p.Name] = true
		}
		names[p.Name] = p.ImportPath
	}
	for name := range ambiguous {
		delete(names, name)
	}
	return names
}
