package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// A dialect may offer its one-statement DELETE's fence as a condition of the DELETE
// (PlannerConfig.DeleteFenceCond) rather than a RETURNING list: the database then
// evaluates the fence beside the caller's condition, cheapest part first by declared
// cost, which is exact — the fence judges only rows the DELETE deletes — when every
// part of the caller's condition reads only the table's row and is evaluated before
// the fence. That holds for a plain condition and no other: a subquery can become a
// semi-join below which PostgreSQL pushes the table's own conditions (the fence would
// then judge every row of the table), and a function other than a built-in scalar one
// may be declared more expensive than the fence, or hide a subquery. Every other
// DELETE takes the RETURNING form.

// plainCondition reports whether sig[from:to], a DELETE's condition, is plain: no
// subquery or window (oneQueryWords, EXISTS) and no call but of an operator keyword, a
// type modifier or a built-in scalar function (scalarCall).
func (p *parser) plainCondition(from, to int) bool {
	for k := from; k < to; k++ {
		if !p.isIdent(k) {
			continue
		}
		name := p.foldedAt(k)
		if name == "" {
			return false
		}
		quoted := p.sig[k].Kind != sqllex.KindWord
		switch {
		case !quoted && (oneQueryWords[name] || name == "exists"):
			return false
		case p.punct(k+1, "(") && (quoted || !p.scalarCall(k, name)):
			return false
		}
	}
	return true
}
