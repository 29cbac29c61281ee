package apilist

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewindgg/rewind/internal/typecheck"
)

var update = flag.Bool("update", false, "rewrite api/*.txt from the code (make api)")

// root is the repository's root, from this package's directory.
const root = "../.."

// listing is a module whose API is checked in, in api/<file>.
type listing struct{ file, dir string }

// TestAPI compares api/rewind.txt with the exported declarations of the
// library's packages a game imports: every package of the root module but
// those under internal/, cmd/ and examples/.
func TestAPI(t *testing.T) { checkAPI(t, listing{"rewind.txt", "."}) }

// TestAPIRTC is TestAPI for the WebRTC transport's module (api/rtc.txt).
// Loading it compiles pion: make tools-test runs it, not make test.
func TestAPIRTC(t *testing.T) { checkAPI(t, listing{"rtc.txt", "rtc"}) }

// checkAPI compares l's listing with its module's exported API, or with
// -update writes it.
func checkAPI(t *testing.T, l listing) {
	repo := modulePath(t, filepath.Join(root, "go.mod")) + "/"
	patterns := []string{"./" + filepath.ToSlash(filepath.Join(l.dir, "..."))} // "./..." stops at a nested module
	all, err := typecheck.List(root, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	var public []string
	for _, p := range all {
		if isPublic(strings.TrimPrefix(p.ImportPath, repo)) {
			public = append(public, p.ImportPath)
		}
	}
	loaded, err := typecheck.Load(root, public...)
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSuffix(repo+filepath.ToSlash(l.dir), "/.")
	var header, body []string
	for _, p := range loaded.Packages {
		if !p.Root || p.Module != module {
			continue
		}
		pkg, err := loaded.Import(p.ImportPath)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, repo)
		n := Exported(pkg)
		header = append(header, fmt.Sprintf("# %s: %d exported top-level names", rel, n))
		if rel == "rollback" {
			t.Logf("package rollback exports %d top-level names (issue 45's target: at most 70)", n)
		}
		body = append(body, Lines(pkg, repo)...)
	}
	if len(body) == 0 {
		t.Fatalf("module %s: no public package found", module)
	}
	slices.Sort(header)
	slices.Sort(body)
	text := "# The exported API of module " + module + " (its packages outside internal/, cmd/ and\n" +
		"# examples/), one declaration a line as in Go's api/*.txt, written by internal/apilist.\n" +
		"# TestAPI fails when it differs from the code; after a deliberate change, run make api\n" +
		"# and name the change in CHANGELOG.md.\n" +
		strings.Join(header, "\n") + "\n" + strings.Join(body, "\n") + "\n"
	path := filepath.Join(root, "api", l.file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with make api)", err)
	}
	if added, removed := diff(string(old), text); len(added)+len(removed) > 0 {
		t.Errorf("api/%s differs from the exported API of %s:\n%s%s"+
			"If the change is meant, run make api (go test ./internal/apilist -run '^TestAPI(RTC)?$' -update) and add it to CHANGELOG.md.",
			l.file, module, prefix("+ ", added), prefix("- ", removed))
	}
}

// isPublic tells whether a package, by its path in the repository, is one
// a game imports.
func isPublic(rel string) bool {
	for _, elem := range strings.Split(rel, "/") {
		if elem == "internal" || elem == "testdata" {
			return false
		}
	}
	return !strings.HasPrefix(rel, "cmd/") && !strings.HasPrefix(rel, "examples/")
}

// modulePath reads the module path of a go.mod file.
func modulePath(t *testing.T, gomod string) string {
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(path)
		}
	}
	t.Fatalf("%s: no module line", gomod)
	return ""
}

// diff returns the lines of new that old lacks and those of old that new
// lacks, each in its text's order.
func diff(old, new string) (added, removed []string) {
	o, n := strings.Split(old, "\n"), strings.Split(new, "\n")
	for _, line := range n {
		if !slices.Contains(o, line) {
			added = append(added, line)
		}
	}
	for _, line := range o {
		if !slices.Contains(n, line) {
			removed = append(removed, line)
		}
	}
	return added, removed
}

func prefix(p string, lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(p + l + "\n")
	}
	return b.String()
}
