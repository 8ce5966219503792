package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// A claim is counted: its read must return as many rows as its fencing UPDATE stamped
// (fencedsql's exact.go), the check that tells a read that differs from the stamp. A
// select list that collapses the rows it reads — an aggregate without a window
// (COUNT(*), SUM(…): one row for any number), DISTINCT — returns rows that are not the
// rows it locked, so no count can be checked: COUNT(*) over a row the stamp moved out
// of the read (an ON UPDATE column in the condition) answers 0 for a row it stamped,
// in one row, as many as one row stamped (red-team rt19e). GROUP BY and HAVING are
// refused with joins (lockingRead); these are refused here, with a token.

// aggregates are the aggregate functions of the dialects, by name: called without an
// OVER clause they collapse the rows they read into one.
var aggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "group_concat": true,
	"json_arrayagg": true, "json_objectagg": true, "bit_and": true, "bit_or": true, "bit_xor": true,
	"std": true, "stddev": true, "stddev_pop": true, "stddev_samp": true, "var_pop": true,
	"var_samp": true, "variance": true, "array_agg": true, "string_agg": true, "every": true,
	"bool_and": true, "bool_or": true, "json_agg": true, "jsonb_agg": true, "json_object_agg": true,
	"jsonb_object_agg": true, "total": true, "xmlagg": true, "listagg": true,
}

// collapsingSelect explains how the select list sig[from:to] of a locking read
// collapses its rows (a top-level DISTINCT or DISTINCTROW, an aggregate called without
// OVER anywhere but inside a subquery: COALESCE(SUM(x), 0) collapses), or returns "".
func (p *parser) collapsingSelect(from, to int) string {
	var subq []bool // per open '(': whether it opens a subquery
	inSub := 0      // open subqueries
	for i := from; i < to; i++ {
		switch {
		case p.punct(i, "("):
			sq := p.subqueryAt(i + 1)
			subq = append(subq, sq)
			if sq {
				inSub++
			}
		case p.punct(i, ")"):
			if n := len(subq); n > 0 {
				if subq[n-1] {
					inSub--
				}
				subq = subq[:n-1]
			}
		case inSub > 0:
		case len(subq) == 0 && (p.kw(i, "DISTINCT") || p.kw(i, "DISTINCTROW")) && !p.isDistinctFrom(i):
			return "DISTINCT"
		case !p.rw.numbered && p.sig[i].Kind == sqllex.KindWord && p.punct(i+1, "(") && !p.punct(i-1, "."):
			// MySQL/MariaDB's built-in aggregates, by their bare name (a quoted or
			// qualified name is a stored function). PostgreSQL refuses an aggregate in a
			// locking read itself, and a user's function there may be called total().
			n := p.text(p.sig[i])
			if aggregates[strings.ToLower(n)] && !p.windowed(i+1, to) {
				return "an aggregate (" + n + "())"
			}
		}
	}
	return ""
}

// isDistinctFrom reports whether the DISTINCT at sig[i] is that of the comparison
// a IS [NOT] DISTINCT FROM b.
func (p *parser) isDistinctFrom(i int) bool {
	return p.kw(i+1, "FROM") && (p.kw(i-1, "IS") || p.kw(i-1, "NOT") && p.kw(i-2, "IS"))
}

// selectFrom returns the sig index of the FROM of the SELECT at sig[start]: the first
// top-level FROM that is not that of IS [NOT] DISTINCT FROM, or len(sig).
func (p *parser) selectFrom(start int) int {
	from := p.clauseEnd(start+1, "FROM")
	for from < len(p.sig) && p.isDistinctFrom(from-1) {
		from = p.clauseEnd(from+1, "FROM")
	}
	return from
}

// subqueryAt reports whether sig[i] opens a subquery (SELECT, WITH, VALUES, TABLE).
func (p *parser) subqueryAt(i int) bool {
	return p.kw(i, "SELECT") || p.kw(i, "WITH") || p.kw(i, "VALUES") || p.kw(i, "TABLE")
}

// windowed reports whether the call whose '(' is sig[open] is followed, after its ')'
// (and a FILTER (…) clause), by OVER: a window function, which keeps its rows.
func (p *parser) windowed(open, to int) bool {
	depth := 0
	for i := open; i < to; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
			if depth == 0 {
				j := i + 1
				if p.kw(j, "FILTER") && p.punct(j+1, "(") {
					for d := 0; j < to; j++ {
						if p.punct(j, "(") {
							d++
						} else if p.punct(j, ")") {
							if d--; d == 0 {
								break
							}
						}
					}
					j++
				}
				return p.kw(j, "OVER")
			}
		}
	}
	return false
}
