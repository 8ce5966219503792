package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Statement text bound as an argument (red-team rt55b F2).
//
// The string checks judge the statement text a dynamic statement carries as a
// literal: EXECUTE IMMEDIATE '<text>', PREPARE s FROM '<text>', a DO body, a routine
// body (deepGuard, protect). The same text can be the value of a placeholder in that
// position — EXECUTE IMMEDIATE ?, PREPARE s FROM ?, DO $1 — which go-sql-driver/mysql
// (interpolateParams=true) and pgx (simple protocol) substitute into the text as a
// quoted literal before the server reads it: the server then runs exactly the literal
// form the planner refuses. A plan carries such placeholders as TextArgs; the wrapper,
// which holds the values when the statement runs (each execution of a prepared one
// too), puts each in as the literal it becomes (QuoteLiteral) and plans that text:
// a refusal of it refuses the statement, which is then sent as written.
//
// Which placeholders: every placeholder of a statement that runs dynamic SQL (Plan.
// Dynamic) or is DDL, except the values an execution of a prepared statement binds
// (EXECUTE … USING …, PostgreSQL's EXECUTE name(…)): those are data, never read as
// SQL. A value taken as text that is data (CALL p(?)) is judged as its literal form
// would be. A text built at run time in the server (a user variable set earlier,
// SET @q = ? and then EXECUTE IMMEDIATE @q in another statement) is not seen: the
// known-open door of dynamic SQL (docs/design.md).

// TextArg is a placeholder of a statement whose bound value the server may read as
// SQL text: its byte range in the statement and the argument it takes (1-based: its
// ordinal for ?, n for $n).
type TextArg struct {
	Start, End, Arg int
}

// markBoundText returns pl with TextClass set when the statement runs dynamic SQL or
// is DDL, and TextArgs set when it also holds placeholders that are not a prepared
// statement's execution values; pl unchanged otherwise. Shared plans are copied, never
// changed.
func (p *parser) markBoundText(pl *Plan) *Plan {
	if pl == nil || pl.Kind != KindPass || !(p.runsDynamic || p.isDDL()) {
		return pl
	}
	cp := *pl
	cp.TextClass = true
	pl = &cp
	var at []TextArg
	ord := 0
	for i, t := range p.sig {
		if t.Kind != sqllex.KindParam {
			continue
		}
		ord++
		if p.executionValue(i) {
			continue
		}
		arg := ord
		if t.Num > 0 {
			arg = t.Num
		}
		at = append(at, TextArg{Start: t.Start, End: t.End, Arg: arg})
	}
	pl.TextArgs = at
	return pl
}

// executionValue reports whether the placeholder at sig[i] is a value bound by the
// execution of a prepared statement (EXECUTE s USING ?, EXECUTE IMMEDIATE '…' USING ?,
// PostgreSQL's EXECUTE s(?)): within its statement, a USING, or an EXECUTE that is not
// EXECUTE IMMEDIATE, comes before it before any IMMEDIATE does.
func (p *parser) executionValue(i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch {
		case p.punct(j, ";"):
			return false
		case p.kw(j, "USING"):
			return true
		case p.kw(j, "IMMEDIATE") && p.kw(j-1, "EXECUTE"):
			return false
		case p.kw(j, "EXECUTE"):
			return true
		}
	}
	return false
}

// QuoteLiteral quotes s as a string literal of the planner's syntax, which the string
// checks read back as s (stringBody): how a bound text argument is judged.
func (rw *Planner) QuoteLiteral(s string) string {
	if rw.syn.BackslashEscapes {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
