package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/dialect/sidechannel"
)

// The side-channel calls of stored code (red-team rt65a F2, F3): a call of a function
// that sends SQL text to a server on a connection of its own (dblink_exec and its kin,
// sidechannel.SQLTextSenders) runs that text as EXECUTE would, so the body that holds it
// is judged by EXECUTE's rule (dynamicSQLWrites, namesOrEscapes: it names the table
// anywhere, or holds an escape literal); a call of one of pg_surgery's functions
// (sidechannel.RowSurgeryFuncs) kills or freezes row versions of whatever regclass it is
// given, past the triggers, and counts for every guarded table. Bodies are read by
// their words here (sideChannel); stored expressions — views, rules, column defaults,
// CHECK constraints, policies, trigger WHEN clauses, routines' argument defaults — by
// their catalog dependencies (sideChannelDoors).

// sideChannel reports whether the lexed body toks calls a function that sends SQL
// text (a word or quoted identifier spelling one of sidechannel.SQLTextSenders, or a U&"…"
// identifier, which may spell one) and whether it calls one of pg_surgery's
// (sidechannel.RowSurgeryFuncs). A schema-qualified call is found by its last name; an
// alias under another name (a C function over dblink's symbol, an operator, a cast,
// an aggregate) is not found by this word test (docs/design.md, "Known open
// findings").
func sideChannel(toks []dialect.DDLToken) (sender, surgery bool) {
	for _, t := range toks {
		if t.Kind != dialect.DDLWord && t.Kind != dialect.DDLQuoted {
			continue
		}
		if t.Kind == dialect.DDLQuoted && len(t.Text) > 2 && (t.Text[0] == 'u' || t.Text[0] == 'U') && t.Text[1] == '&' {
			sender = true
			continue
		}
		n, ok := t.Name()
		if !ok {
			continue
		}
		sender = sender || sidechannel.IsSQLTextSender(n)
		surgery = surgery || sidechannel.IsRowSurgeryFunc(n)
	}
	return sender, surgery
}

// mentionsDynamicSQL reports whether src holds, anywhere in its text
// (dialect.Mentions), the word EXECUTE or the name of a function that sends SQL text.
func mentionsDynamicSQL(src string) bool {
	if dialect.Mentions(src, "execute") {
		return true
	}
	for _, f := range sidechannel.SQLTextSenders() {
		if dialect.Mentions(src, f) {
			return true
		}
	}
	return false
}

// mentionsSurgery reports whether src holds, anywhere in its text, the name of one of
// pg_surgery's functions.
func mentionsSurgery(src string) bool {
	for _, f := range sidechannel.RowSurgeryFuncs() {
		if dialect.Mentions(src, f) {
			return true
		}
	}
	return false
}

// strposAny is the SQL condition: the lower-cased text lower (an SQL expression)
// holds one of names (constant, lower-case, quote-free names of the lists above).
func strposAny(lower string, names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = `pg_catalog.strpos(` + lower + `, ` + pgLiteral(n) + `) > 0`
	}
	return `(` + strings.Join(parts, ` OR `) + `)`
}
