package fencedsql

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// checkAssignments refuses SET lists (sig[from:to]) that assign the fence or version
// column: `col = …`, `t.col = …` or `(a, col) = …` at top level.
func (p *parser) checkAssignments(g *guard, from, to int) error {
	depth := 0
	target := true // at the start of an assignment
	for i := from; i < to; i++ {
		t := p.sig[i]
		if t.Kind == sqllex.KindPunct {
			switch p.text(t) {
			case "(":
				depth++
				continue
			case ")":
				depth--
				continue
			case ",":
				if depth == 0 {
					target = true
				}
				continue
			case "=":
				if depth == 0 {
					target = false
				}
				continue
			}
		}
		if target && p.isIdent(i) {
			if n, ok := p.ident(i); ok && g.isFenceColumn(n) {
				return reserved(g, n)
			}
		}
	}
	return nil
}
