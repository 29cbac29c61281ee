package determinism

import (
	"go/ast"
	"go/token"
	"strings"
)

// allowPrefix starts a comment that silences a finding.
const allowPrefix = "rewind:allow"

// fileAllows are one file's //rewind:allow comments with a reason, by the
// lines they silence.
type fileAllows struct {
	lines map[int]bool
}

// scanAllows reads every file's //rewind:allow comments (// rewind:allow
// is accepted too), and reports those without a reason.
func (c *checker) scanAllows() {
	for _, f := range c.pass.Files {
		tf := c.pass.Fset.File(f.Pos())
		if tf == nil {
			continue
		}
		var code map[int]int // line → smallest column where code is
		for _, cg := range f.Comments {
			for _, cm := range cg.List {
				reason, ok := allowReason(cm.Text)
				if !ok {
					continue
				}
				if reason == "" {
					c.diag(cm.Pos(), kAllow.name, "//rewind:allow without a reason: "+kAllow.why+"; "+kAllow.instead, nil)
					continue
				}
				if code == nil {
					code = codeColumns(c.pass.Fset, f)
				}
				fa := c.allows[tf]
				if fa == nil {
					fa = &fileAllows{lines: make(map[int]bool)}
					c.allows[tf] = fa
				}
				p := c.pass.Fset.Position(cm.Pos())
				fa.lines[p.Line] = true
				if col, ok := code[p.Line]; !ok || col > p.Column {
					fa.lines[p.Line+1] = true // alone on its line: the next line too
				}
			}
		}
	}
}

// allowReason parses a //rewind:allow comment.
func allowReason(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "//")
	if !ok {
		return "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	rest, ok = strings.CutPrefix(rest, allowPrefix)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// codeColumns maps each line of f to the first column where a syntax
// node starts or ends on it.
func codeColumns(fset *token.FileSet, f *ast.File) map[int]int {
	code := make(map[int]int)
	note := func(pos token.Pos) {
		if !pos.IsValid() {
			return
		}
		p := fset.Position(pos)
		if col, ok := code[p.Line]; !ok || p.Column < col {
			code[p.Line] = p.Column
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n.(type) {
		case nil, *ast.Comment, *ast.CommentGroup:
			return false
		}
		note(n.Pos())
		note(n.End() - 1)
		return true
	})
	return code
}

// allowed says whether a //rewind:allow comment with a reason silences a
// finding at pos.
func (c *checker) allowed(pos token.Pos) bool {
	tf := c.pass.Fset.File(pos)
	if tf == nil {
		return false
	}
	fa := c.allows[tf]
	return fa != nil && fa.lines[tf.Line(pos)]
}
