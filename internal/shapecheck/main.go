// Command shapecheck is make lint's guard on the shape of the library
// (issue 45, docs/architecture.md): it fails when a non-test file of
// package rollback exceeds MaxFileLines, when a function of a library
// package (one a game's build compiles: `go list -deps ./rollback/...`
// within this module, tests and the test-support packages left out)
// exceeds MaxFuncLines, when rollback.Session exceeds MaxFields
// fields or MaxMethods methods, or when package rollback exports more than
// MaxExports top-level names (types, functions, constants and variables,
// each constant of an enumeration counted). It prints what it measured either way.
//
// Both of Session's limits are enforced: its state is on its owners
// since November 2026, and its behaviour (58 methods, from 156) too.
//
// With -doc, the counts a document quotes ("(N fields and M methods") must
// be the measured ones.
//
//	go run ./internal/shapecheck [-root DIR] [-doc docs/architecture.md]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The limits.
const (
	MaxFileLines = 500
	MaxFuncLines = 80
	MaxFields    = 25
	MaxMethods   = 60
	// MaxExports is issue 45's limit on rollback's exported top-level
	// names (99 in November 2026): a new one means merging or unexporting
	// another, or a reason to raise it in CHANGELOG.md.
	MaxExports = 70
)

// library is the directories of the packages a game's build compiles
// (rollback and what it imports here), without the test-support ones.
var library = []string{
	"rollback", "rollback/internal/wire", "rollback/udp", "rollback/netsim", "relay",
	"savestate", "desync", "desync/bundle", "advantage", "inputlag", "predict", "netlog", "pacer",
	"fixed", "rng", "replay", "sound", "determinism",
	"internal/memcopy", "internal/inbox", "internal/pqueue", "internal/heap",
}

func main() {
	root := flag.String("root", ".", "the repository's root")
	doc := flag.String("doc", "", "a document (from the root) whose \"(N fields and M methods\" must be Session's counts")
	flag.Parse()
	problems, report, err := check(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shapecheck:", err)
		os.Exit(2)
	}
	if *doc != "" {
		p, err := checkDoc(filepath.Join(*root, *doc), report)
		if err != nil {
			fmt.Fprintln(os.Stderr, "shapecheck:", err)
			os.Exit(2)
		}
		problems = append(problems, p...)
	}
	fmt.Print(report)
	for _, p := range problems {
		fmt.Println("FAIL:", p)
	}
	if len(problems) > 0 {
		fmt.Println("shapecheck: move code to its owner; do not raise the limits (docs/architecture.md)")
		os.Exit(1)
	}
}

// check measures the tree at root: problems break the file, function,
// field and method limits.
func check(root string) (problems []string, report string, err error) {
	fset := token.NewFileSet()
	var fields, methods, exports int
	longest := map[string]int{}
	for _, dir := range library {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return nil, "", err
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			// A game's build: a file its build constraints leave out of it
			// (the adversary's, under rewind_adversary) is not measured.
			if ok, err := build.Default.MatchFile(filepath.Dir(path), filepath.Base(path)); err != nil || !ok {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return nil, "", err
			}
			rel, _ := filepath.Rel(root, path)
			if dir == "rollback" {
				if n := fset.File(f.Pos()).LineCount(); n > MaxFileLines {
					problems = append(problems, fmt.Sprintf("%s: %d lines (at most %d)", rel, n, MaxFileLines))
				}
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
					if n > MaxFuncLines {
						problems = append(problems, fmt.Sprintf("%s:%d: %s is %d lines (at most %d)", rel, fset.Position(d.Pos()).Line, d.Name.Name, n, MaxFuncLines))
					}
					longest[dir] = max(longest[dir], n)
					if dir == "rollback" && receiver(d) == "Session" {
						methods++
					}
					if dir == "rollback" && d.Recv == nil && d.Name.IsExported() {
						exports++
					}
				case *ast.GenDecl:
					if dir == "rollback" {
						fields += sessionFields(d)
						exports += exported(d)
					}
				}
			}
		}
	}
	if fields > MaxFields {
		problems = append(problems, fmt.Sprintf("rollback.Session has %d fields (at most %d)", fields, MaxFields))
	}
	if methods > MaxMethods {
		problems = append(problems, fmt.Sprintf("rollback.Session has %d methods (at most %d)", methods, MaxMethods))
	}
	if exports > MaxExports {
		problems = append(problems, fmt.Sprintf("rollback exports %d names (at most %d)", exports, MaxExports))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "shapecheck: rollback.Session %d fields (limit %d), %d methods (limit %d); rollback exports %d names (limit %d); files of rollback ≤ %d lines; functions ≤ %d lines:", fields, MaxFields, methods, MaxMethods, exports, MaxExports, MaxFileLines, MaxFuncLines)
	dirs := make([]string, 0, len(longest))
	for d := range longest {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fmt.Fprintf(&b, " %s %d", d, longest[d])
	}
	b.WriteString("\n")
	return problems, b.String(), nil
}

// exported counts the exported names d declares.
func exported(d *ast.GenDecl) int {
	n := 0
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if s.Name.IsExported() {
				n++
			}
		case *ast.ValueSpec:
			for _, name := range s.Names {
				if name.IsExported() {
					n++
				}
			}
		}
	}
	return n
}

// quoted finds a document's quote of Session's counts.
var quoted = regexp.MustCompile(`\((\d+) fields and (\d+) methods`)

// measured finds them in check's report.
var measured = regexp.MustCompile(`Session (\d+) fields \(limit \d+\), (\d+) methods`)

// checkDoc reports the document at path when the counts it quotes are not
// the ones report measured.
func checkDoc(path, report string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	q, m := quoted.FindStringSubmatch(string(b)), measured.FindStringSubmatch(report)
	switch {
	case q == nil:
		return []string{fmt.Sprintf("%s quotes no \"(N fields and M methods\" of Session", path)}, nil
	case m == nil:
		return nil, fmt.Errorf("no counts in the report %q", report)
	case q[1] != m[1] || q[2] != m[2]:
		return []string{fmt.Sprintf("%s says Session has %s fields and %s methods; it has %s and %s: update it", path, q[1], q[2], m[1], m[2])}, nil
	}
	return nil, nil
}

// receiver is the type name of d's receiver, or "".
func receiver(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// sessionFields counts the fields of type Session if d declares it.
func sessionFields(d *ast.GenDecl) int {
	n := 0
	for _, sp := range d.Specs {
		ts, ok := sp.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Session" {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			n += max(1, len(f.Names))
		}
	}
	return n
}
