package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The readings of an SQL or PL/pgSQL routine body (red-team rt47a F1). PostgreSQL
// lexes a body under standard_conforming_strings as it is when the body is parsed:
// the function's own SET (pg_proc.proconfig) if it has one, else the setting of the
// session that parses it — at every call for an SQL function, and once per session for
// PL/pgSQL, which compiles a function on its first call in each session — a setting no
// check can know ahead (a role's or database's default, or a SET, in any session that
// may fire a trigger or call a function). With it off, a backslash inside a plain '…'
// (or N'…') literal escapes the next byte: '\'' is a one-quote string there, while
// with it on the literal is '\' and the next quote opens another one, so that whole
// statements stand in what one reading takes for a string and the other runs.
//
// Every door check that reads a body (keepsRow's BEFORE-trigger reading, bodyWrites'
// "writes the table", guardWrites' "writes a guard object", the fencing-column and
// schema-name tests of namesUnderEveryReading) therefore judges it under each of
// bodyReadings' lexical rules and keeps the worse verdict (a door under either reading
// is a door). A body without a backslash reads the same under both (the two lexers
// differ only inside a literal holding one), so it gets one reading and keeps its
// verdict: the library's own function bodies hold none. backslash_quote changes no
// reading (it only decides whether \' is accepted or an error), and other settings
// (escape_string_warning) only warn, so a function's proconfig needs no reading of its
// own: both readings are judged whatever it sets.
//
// Dynamic SQL is read at run time, under the setting of the session that runs it: an
// EXECUTE'd text built from a literal whose escapes the setting decides
// ('\x61ccounts' is accounts with the setting off), or from an escape hidden inside a
// dollar-quoted text (U&"\0061ccounts"), may name the table without the name in the
// body. escapeDynamicSQL fails closed on those, as dynamicSQLWrites does on E'…'
// escapes.

// bodyReadings returns the lexical rules the readers judge the body src under:
// PostgreSQL's with standard_conforming_strings on, and, when src holds a backslash,
// with it off too (scsOffSyntax).
func bodyReadings(src string) []dialect.Syntax {
	if !strings.Contains(src, `\`) {
		return []dialect.Syntax{dialect.PostgresSyntax}
	}
	return []dialect.Syntax{dialect.PostgresSyntax, scsOffSyntax()}
}

// scsOffSyntax is PostgreSQL's lexical rules with standard_conforming_strings off: a
// plain '…' literal (and its continuation over a newline, and N'…') takes backslash
// escapes as E'…' does.
func scsOffSyntax() dialect.Syntax {
	s := dialect.PostgresSyntax
	s.BackslashEscapes = true
	return s
}

// writesUnderEveryReading is dialect.WritesTable of the body src and name (for a
// guard table, guard true, dialect.WritesGuardTable: the DDL words too) under each of
// bodyReadings' rules: true when any reading writes.
func writesUnderEveryReading(src, name string, guard bool) bool {
	for _, syn := range bodyReadings(src) {
		if guard && dialect.WritesGuardTable(src, syn, name) || !guard && dialect.WritesTable(src, syn, name) {
			return true
		}
	}
	return false
}

// namesUnderEveryReading is dialect.NamesColumn of the body src and cols under each of
// bodyReadings' rules: true when any reading names one (a U&"…" identifier may stand
// in what only one reading takes for a string).
func namesUnderEveryReading(src string, cols ...string) bool {
	for _, syn := range bodyReadings(src) {
		if dialect.NamesColumn(src, syn, cols...) {
			return true
		}
	}
	return false
}

// escapeDynamicSQL reports whether the SQL or PL/pgSQL body src runs SQL text (the
// word EXECUTE, or the name of a function that sends SQL text: mentionsDynamicSQL,
// in any reading: anywhere in its text) and, anywhere in its text, a backslash or a
// U& escape: an EXECUTE'd text may spell a name through escapes that
// standard_conforming_strings decides, or that stand inside a dollar-quoted text the
// body's own lexer does not look into. Fail closed: a body with EXECUTE whose
// backslashes only match a regular expression counts too (write the text without
// EXECUTE, or move it to a function that does not EXECUTE).
func escapeDynamicSQL(src string) bool {
	return mentionsDynamicSQL(src) && (strings.Contains(src, `\`) || strings.Contains(strings.ToLower(src), "u&"))
}
