package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a tree with a rollback file over the limit, a library
// function over the limit, a Session with too many fields and methods and
// a rollback that exports too many names is reported for each; the same
// tree within the limits is not.
func TestCheck(t *testing.T) {
	write := func(root, rel, src string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree := func(fileLines, funcLines, fields, methods, exports int) string {
		root := t.TempDir()
		var s strings.Builder
		s.WriteString("package rollback\n\ntype Session struct {\n")
		for i := range fields {
			s.WriteString("\tf" + strings.Repeat("x", i+1) + " int\n")
		}
		s.WriteString("}\n")
		for i := range exports - 3 { // Session, F and E are the other 3
			s.WriteString("const C" + strings.Repeat("x", i+1) + ", c" + strings.Repeat("x", i+1) + " = 1, 2\n")
		}
		s.WriteString("type e int\nconst (\n\tE e = iota\n\te1\n)\nfunc F() {}\nfunc (s *Session) Exported() {}\n")
		for i := range methods - 1 {
			s.WriteString("func (s *Session) m" + strings.Repeat("x", i+1) + "() {}\n")
		}
		for strings.Count(s.String(), "\n") < fileLines {
			s.WriteString("// filler\n")
		}
		write(root, "rollback/session.go", s.String())
		body := "package sound\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", funcLines-2) + "}\n"
		write(root, "sound/sound.go", body)
		return root
	}
	problems, _, err := check(tree(MaxFileLines, MaxFuncLines, MaxFields, MaxMethods, MaxExports))
	if err != nil || len(problems) != 0 {
		t.Fatalf("within the limits: %v %v", problems, err)
	}
	problems, _, err = check(tree(MaxFileLines+1, MaxFuncLines+1, MaxFields+1, MaxMethods+1, MaxExports+1))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	if len(problems) != 5 || !strings.Contains(all, "rollback/session.go: 501 lines") ||
		!strings.Contains(all, "long is 81 lines") || !strings.Contains(all, "26 fields") || !strings.Contains(all, "61 methods") ||
		!strings.Contains(all, "exports 71 names") {
		t.Errorf("problems %q", problems)
	}
}

// TestCheckDoc: a document quoting other counts than the measured ones is
// reported; the right ones, or none found in the report, are not.
func TestCheckDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	report := "shapecheck: rollback.Session 32 fields (limit 25), 162 methods (limit 60); ..."
	for _, tc := range []struct {
		doc  string
		fail bool
	}{
		{"a facade (32 fields and 162 methods in November)", false},
		{"a facade (26 fields and 162 methods)", true},
		{"a facade (32 fields and 61 methods)", true},
		{"a facade", true},
	} {
		if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := checkDoc(path, report)
		if err != nil || (len(p) > 0) != tc.fail {
			t.Errorf("%q: problems %q, err %v; want failure %v", tc.doc, p, err, tc.fail)
		}
	}
}
