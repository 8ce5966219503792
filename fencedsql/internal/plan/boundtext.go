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
// where the grammar shows them to be data (executionValue: EXECUTE IMMEDIATE '<text>'
// USING …, PostgreSQL's EXECUTE name(…)): those are never read as SQL. A value taken
// as text that is data (CALL p(?)) is judged as its literal form would be. A text built at run time in the server (a user variable set earlier,
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

// executionValue reports whether the placeholder at sig[i] is a value the execution of
// a prepared statement binds as data, decided by where the grammar puts it (red-team
// rt56d F2: any USING or EXECUTE word before it counted, CONVERT(… USING cs) and a
// join's USING (col) among them, and the statement text bound after it ran unjudged).
// Only two positions are data:
//
//   - the USING list of EXECUTE IMMEDIATE '<text>' (MySQL/MariaDB): the USING at the
//     placeholder's own nesting level or an enclosing one, directly after the one
//     string literal that follows EXECUTE IMMEDIATE, with no ';' or statement word
//     between it and the placeholder — and only when that text reads none of its own
//     placeholders as statement text (immediateData): the text can be a compound
//     statement that runs EXECUTE IMMEDIATE ? itself;
//   - the argument list of PostgreSQL's EXECUTE name(…), whose prepared statement is
//     one plannable statement (never SQL text to run).
//
// Everything else is text, judged as its literal would be (fail closed): PREPARE s
// FROM <expr>, EXECUTE IMMEDIATE <expr>, a compound statement's SET q = …, and also
// the USING values of EXECUTE name USING … (MariaDB), whose prepared text the
// statement does not show and may be a compound statement that runs them.
func (p *parser) executionValue(i int) bool {
	depth := 0 // the ')' seen walking back that no '(' matched yet
	for j := i - 1; j >= 0; j-- {
		switch {
		case p.punct(j, ")"):
			depth++
			continue
		case p.punct(j, "("):
			if depth > 0 {
				depth--
				continue
			}
			// an enclosing '(': PostgreSQL's EXECUTE name( … )
			if p.rw.syn.DollarParams && p.kw(j-2, "EXECUTE") && p.isIdent(j-1) &&
				!p.kwIn(j-1, "IMMEDIATE", "FUNCTION", "PROCEDURE") {
				return true
			}
			continue
		}
		if depth > 0 {
			continue // inside a group closed before the placeholder
		}
		switch {
		case p.punct(j, ";"):
			return false
		case p.kw(j, "USING"):
			return p.kw(j-3, "EXECUTE") && p.kw(j-2, "IMMEDIATE") &&
				p.sig[j-1].Kind == sqllex.KindString && p.immediateData(j-1)
		case p.kwIn(j, "EXECUTE", "IMMEDIATE", "PREPARE", "SET", "DECLARE", "DO", "BEGIN", "END",
			"THEN", "ELSE", "ELSEIF", "LOOP", "REPEAT", "RETURN"):
			return false // a statement word between: not a USING list (CASE … THEN ? too: text)
		}
	}
	return false
}

// immediateData reports whether the USING values of EXECUTE IMMEDIATE with the string
// literal sig[lit] as its text are data: the text, planned alone, lists none of its
// placeholders as statement text (a compound statement running EXECUTE IMMEDIATE ?
// would run the bound value), holds no executable comment, and plans.
func (p *parser) immediateData(lit int) bool {
	body := stringBody(p.literalText(lit))
	toks, err := sqllex.Lex(body, p.rw.syn)
	if err != nil {
		return false
	}
	for _, t := range toks {
		if t.Kind == sqllex.KindExecComment {
			return false
		}
	}
	pl, err := p.rw.Rewrite(body, false)
	return err == nil && pl.Kind == KindPass && len(pl.TextArgs) == 0
}

// QuoteLiteral quotes s as a string literal of the planner's syntax, which the string
// checks read back as s (stringBody): how a bound text argument is judged.
func (rw *Planner) QuoteLiteral(s string) string {
	if rw.syn.BackslashEscapes {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
