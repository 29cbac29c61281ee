// Package doccheck compiles the Go blocks of Markdown files, so that the
// samples of README.md and docs/ keep up with the API (TestDocs runs it on
// them in make test). Compiling here means type-checking with go/types
// against the packages' export data (internal/typecheck): every error the
// compiler reports but "declared and not used" in a fragment.
//
// A ```go block is one of:
//
//   - a whole file (it has a package clause): checked as it is;
//   - declarations: checked at the top level of a file of its own;
//   - statements: checked as the body of a function.
//
// A fragment (the last two) may start with import declarations; the
// packages it uses without importing them are imported for it, as
// goimports would: the package of this repository or of the standard
// library whose name it uses (where two share a name, math/rand and
// crypto/rand, the fragment imports the one it means). The variables, types and functions a fragment
// assumes (a game, a transport, a match id) are declared in an HTML
// comment just before its fence, which Markdown does not render:
//
//	<!-- compiled with: var seed uint64; var peerAddr netip.AddrPort -->
//
// A block that cannot be compiled says why in its place instead:
//
//	<!-- not compiled: pseudo-code of the send loop -->
package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// The comments that may stand just before a block's fence.
const (
	contextMark = "compiled with:"
	skipMark    = "not compiled:"
)

// A Block is one ```go fenced block of a Markdown file.
type Block struct {
	// File is the Markdown file's name as given to Blocks; Line is the
	// line of the opening fence, from 1.
	File string
	Line int
	// Code is the block's text.
	Code string
	// Context is the Go declarations of a "compiled with:" comment.
	Context string
	// Skip is the reason of a "not compiled:" comment; such a block is
	// not compiled.
	Skip string
}

// Blocks returns the ```go blocks of Markdown text md, read from file.
func Blocks(file string, md string) ([]Block, error) {
	lines := strings.Split(md, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		fence, info, ok := cutFence(lines[i])
		if !ok {
			continue
		}
		start := i
		var code []string
		for i++; i < len(lines); i++ {
			if f, rest, ok := cutFence(lines[i]); ok && f == fence && rest == "" {
				break
			}
			code = append(code, strings.TrimPrefix(lines[i], indent(lines[start])))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: the block is not closed", file, start+1)
		}
		if info != "go" {
			continue
		}
		b := Block{File: file, Line: start + 1, Code: strings.Join(code, "\n") + "\n"}
		if comment, ok := commentBefore(lines[:start]); ok {
			if rest, ok := strings.CutPrefix(comment, contextMark); ok {
				b.Context = strings.TrimSpace(rest)
			} else if rest, ok := strings.CutPrefix(comment, skipMark); ok {
				if b.Skip = strings.TrimSpace(rest); b.Skip == "" {
					return nil, fmt.Errorf("%s:%d: %q without a reason", file, start+1, skipMark)
				}
			}
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// cutFence reports whether line opens or closes a fenced block, and returns
// the fence (its backquotes) and the info string after it.
func cutFence(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	n := len(t) - len(strings.TrimLeft(t, "`"))
	if n < 3 {
		return "", "", false
	}
	return t[:n], strings.TrimSpace(t[n:]), true
}

func indent(line string) string { return line[:len(line)-len(strings.TrimLeft(line, " \t"))] }

// commentBefore returns the text of the HTML comment that ends on the last
// non-blank line of lines, if one does.
func commentBefore(lines []string) (string, bool) {
	end := len(lines) - 1
	for end >= 0 && strings.TrimSpace(lines[end]) == "" {
		end--
	}
	if end < 0 || !strings.HasSuffix(strings.TrimSpace(lines[end]), "-->") {
		return "", false
	}
	for start := end; start >= 0; start-- {
		text := strings.Join(lines[start:end+1], "\n")
		if i := strings.Index(text, "<!--"); i >= 0 {
			text = strings.TrimSpace(text[i+len("<!--"):])
			return strings.TrimSpace(strings.TrimSuffix(text, "-->")), true
		}
	}
	return "", false
}

// A file is the Go source a block is checked as.
type file struct {
	b        Block
	whole    bool     // a whole file: checked as is
	imports  []string // a fragment's own import declarations
	rest     string   // a fragment's code after them (its lines kept)
	decls    bool     // rest is declarations, not statements
	codeLine int      // the line of src where the block's code starts
}

func parse(b Block) (*file, error) {
	fset := token.NewFileSet()
	f := &file{b: b}
	if _, err := parser.ParseFile(fset, "", b.Code, parser.PackageClauseOnly); err == nil {
		f.whole = true
		return f, nil
	}
	// Imports first: ImportsOnly stops before the first statement.
	head, err := parser.ParseFile(fset, "", "package doc;"+b.Code, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	end := 0
	for _, d := range head.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			end = fset.Position(g.End()).Offset - len("package doc;")
		}
	}
	f.imports = []string{b.Code[:end]}
	f.rest = strings.Repeat("\n", strings.Count(b.Code[:end], "\n")) + b.Code[end:]
	_, err = parser.ParseFile(fset, "", "package doc\n"+f.rest, parser.SkipObjectResolution)
	f.decls = err == nil
	return f, nil
}

// source returns the Go file for f with the packages of paths imported
// too.
func (f *file) source(paths []string) string {
	if f.whole {
		f.codeLine = 1
		return f.b.Code
	}
	var s strings.Builder
	s.WriteString("package doc\n\n")
	s.WriteString(strings.Join(f.imports, "\n") + "\n")
	for _, p := range paths {
		fmt.Fprintf(&s, "import %q\n", p)
	}
	s.WriteString(f.b.Context + "\n")
	if !f.decls {
		s.WriteString("func _() {\n")
	}
	f.codeLine = strings.Count(s.String(), "\n") + 1
	s.WriteString(f.rest)
	if !f.decls {
		s.WriteString("}\n")
	}
	return s.String()
}

// Needs returns the import paths b imports and the names X of the X.Sel
// selectors in a fragment and its context: the packages it may use
// without importing them.
func Needs(b Block) (imports, selectors []string, err error) {
	f, err := parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s:%d: %v", b.File, b.Line, err)
	}
	src := f.source(nil)
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, f.position(fset, err)
	}
	for _, spec := range af.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, nil, f.position(fset, err)
		}
		imports = append(imports, path)
	}
	if f.whole {
		return imports, nil, nil
	}
	ast.Inspect(af, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && !slices.Contains(selectors, id.Name) {
				selectors = append(selectors, id.Name)
			}
		}
		return true
	})
	return imports, selectors, nil
}

// Check compiles b with imp and returns its errors, each positioned in
// the Markdown file. names maps a package name to the import path a
// fragment that uses it without importing it gets.
func Check(b Block, fset *token.FileSet, imp types.Importer, names map[string]string) []error {
	f, err := parse(b)
	if err != nil {
		return []error{fmt.Errorf("%s:%d: %v", b.File, b.Line, err)}
	}
	var added []string
	for {
		src := f.source(added)
		af, err := parser.ParseFile(fset, b.File, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return []error{f.position(fset, err)}
		}
		var errs []types.Error
		conf := types.Config{Importer: imp, Error: func(err error) { errs = append(errs, err.(types.Error)) }}
		conf.Check(af.Name.Name, fset, []*ast.File{af}, nil) // its errors are in errs
		var missing []string
		for _, e := range errs {
			name, ok := strings.CutPrefix(e.Msg, "undefined: ")
			if path := names[name]; ok && path != "" && !slices.Contains(added, path) && !slices.Contains(missing, path) {
				missing = append(missing, path)
			}
		}
		if len(missing) > 0 && !f.whole {
			added = append(added, missing...)
			continue
		}
		var out []error
		for _, e := range errs {
			if !f.whole && strings.HasPrefix(e.Msg, "declared and not used: ") {
				continue // a fragment declares what the reader goes on to use
			}
			out = append(out, f.position(fset, e))
		}
		return out
	}
}

// position rewrites err's position in the generated source as the
// Markdown file's line.
func (f *file) position(fset *token.FileSet, err error) error {
	var pos token.Position
	var msg string
	switch e := err.(type) {
	case types.Error:
		pos, msg = e.Fset.Position(e.Pos), e.Msg
	case scanner.ErrorList:
		if len(e) == 0 {
			return err
		}
		pos, msg = e[0].Pos, e[0].Msg
	default:
		return fmt.Errorf("%s:%d: %v", f.b.File, f.b.Line, err)
	}
	if pos.Line < f.codeLine {
		return fmt.Errorf("%s:%d: in the %q comment or the imports added: %s", f.b.File, f.b.Line, contextMark, msg)
	}
	return fmt.Errorf("%s:%d:%d: %s", f.b.File, f.b.Line+1+pos.Line-f.codeLine, pos.Column, msg)
}
