package determinism

import (
	"go/ast"
	"go/types"
)

// This file connects Step to what init functions and the initialisers
// of package-level variables compute: a function that reads a variable
// reaches what defines it.

// initStatements makes a node of each top-level statement of the init
// function d, which calls the statements before it that declare the
// local variables it uses.
func (c *checker) initStatements(d *ast.FuncDecl) {
	info := c.pass.TypesInfo
	name := c.pass.Pkg.Name() + ".init (statement)"
	var nodes []*node
	for _, s := range d.Body.List {
		n := &node{stmt: s, name: name}
		c.nodes = append(c.nodes, n)
		c.stmts = append(c.stmts, n)
		nodes = append(nodes, n)
	}
	for j, s := range d.Body.List {
		ast.Inspect(s, func(x ast.Node) bool {
			id, ok := x.(*ast.Ident)
			if !ok {
				return true
			}
			v, ok := info.Uses[id].(*types.Var)
			if !ok || isPackageVar(v) {
				return true
			}
			for i := 0; i < j; i++ {
				if d.Body.List[i].Pos() <= v.Pos() && v.Pos() < d.Body.List[i].End() {
					nodes[j].calls = append(nodes[j].calls, nodes[i])
				}
			}
			return true
		})
	}
}

// followInit makes every node that reads a package-level variable reach
// what defines it: the variable's initialiser, and each top-level
// statement of an init function that (itself or through what it calls)
// uses it, with the statements before it that declare the local
// variables it uses. A table filled in init with math.Sin is then
// reported when Step reads it, and what the same init does for nothing
// Step reads is not.
func (c *checker) followInit() {
	initOf := make(map[*types.Var][]*node)
	for _, in := range c.stmts {
		seen := map[*node]bool{in: true}
		queue := []*node{in}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, v := range n.reads {
				if l := initOf[v]; len(l) == 0 || l[len(l)-1] != in {
					initOf[v] = append(initOf[v], in)
				}
			}
			for _, callee := range n.calls {
				if !seen[callee] {
					seen[callee] = true
					queue = append(queue, callee)
				}
			}
		}
	}
	for _, n := range c.nodes {
		for _, v := range n.reads {
			if sn := c.specs[v]; sn != nil && sn != n {
				n.calls = append(n.calls, sn)
			}
			for _, in := range initOf[v] {
				if in != n {
					n.calls = append(n.calls, in)
				}
			}
		}
	}
}
