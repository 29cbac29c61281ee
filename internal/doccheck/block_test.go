package doccheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rewindgg/rewind/internal/typecheck"
)

const sample = "# Title\n" +
	"\n" +
	"```go\n" + // 3
	"x := strings.ToUpper(\"a\")\n" +
	"```\n" +
	"\n" +
	"<!-- compiled with: var name string -->\n" +
	"```go\n" + // 8
	"fmt.Println(name)\n" +
	"```\n" +
	"<!-- not compiled:\n" +
	"     pseudo-code -->\n" +
	"```go\n" + // 13
	"loop forever\n" +
	"```\n" +
	"```sh\n" +
	"go test\n" +
	"```\n" +
	"- a list item:\n" +
	"  ```go\n" + // 20
	"  func f() int { return 1 }\n" +
	"  ```\n"

func TestBlocks(t *testing.T) {
	blocks, err := Blocks("x.md", sample)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "x.md", Line: 3, Code: "x := strings.ToUpper(\"a\")\n"},
		{File: "x.md", Line: 8, Code: "fmt.Println(name)\n", Context: "var name string"},
		{File: "x.md", Line: 13, Code: "loop forever\n", Skip: "pseudo-code"},
		{File: "x.md", Line: 20, Code: "func f() int { return 1 }\n"},
	}
	if fmt.Sprint(blocks) != fmt.Sprint(want) {
		t.Errorf("got  %+v\nwant %+v", blocks, want)
	}
	for _, bad := range []string{"```go\nx\n", "<!-- not compiled: -->\n```go\nx\n```\n"} {
		if _, err := Blocks("x.md", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestCheck shows that a block that does not compile fails, with the line
// of the Markdown file, and that imports are found for fragments.
func TestCheck(t *testing.T) {
	loaded, err := typecheck.Load(root, "fmt", "strings")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"fmt": "fmt", "strings": "strings"}
	for _, c := range []struct {
		name, md string
		want     []string // substrings of the errors, in order
	}{
		{"statements", "```go\nx := strings.ToUpper(\"a\")\nfmt.Println(x)\n```\n", nil},
		{"unused", "```go\nx := strings.ToUpper(\"a\")\n```\n", nil},
		{"declarations", "```go\nfunc f() string { return fmt.Sprint(1) }\n```\n", nil},
		{"own imports", "```go\nimport \"fmt\"\n\nfmt.Println()\n```\n", nil},
		{"context", "<!-- compiled with: var name string -->\n```go\nfmt.Println(name)\n```\n", nil},
		{"skipped", "<!-- not compiled: an example -->\n```go\nnot Go\n```\n", nil},
		{"whole file", "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println() }\n```\n", nil},
		{"wrong call", "\n```go\nx := 1\nfmt.Println(strings.ToUpper(x))\n```\n",
			[]string{"x.md:4:", "cannot use x"}},
		{"undefined", "```go\nfmt.Println(seed)\n```\n", []string{"x.md:2:13: undefined: seed"}},
		{"no context in a whole file", "```go\npackage main\n\nfunc main() { fmt.Println() }\n```\n",
			[]string{"x.md:4:", "undefined: fmt"}},
		{"unused in a whole file", "```go\npackage main\n\nfunc main() { x := 1 }\n```\n",
			[]string{"x.md:4:", "declared and not used: x"}},
		{"syntax", "```go\nfmt.Println(\n```\n", []string{"x.md:"}},
	} {
		blocks, err := Blocks("x.md", c.md)
		if err != nil || len(blocks) != 1 {
			t.Fatalf("%s: %v, %d blocks", c.name, err, len(blocks))
		}
		var errs []error
		if blocks[0].Skip == "" {
			errs = Check(blocks[0], loaded.Fset, loaded.Importer(), names)
		}
		if c.want == nil {
			if len(errs) > 0 {
				t.Errorf("%s: %v", c.name, errs)
			}
			continue
		}
		if len(errs) == 0 {
			t.Errorf("%s: compiled; want an error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errs[0].Error(), w) {
				t.Errorf("%s: %v; want %q in the first", c.name, errs, w)
			}
		}
	}
}
