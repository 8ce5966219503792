package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The readings of a stored body (red-team rt47a F1, its MySQL/MariaDB side). MySQL and
// MariaDB parse a trigger's, routine's or event's body under the sql_mode it was
// created with (TRIGGERS.SQL_MODE, ROUTINES.SQL_MODE, EVENTS.SQL_MODE), which any
// creator chooses: under NO_BACKSLASH_ESCAPES a backslash is an ordinary character in
// '…' and "…" strings ('\' is a whole string), under ANSI_QUOTES "…" is an identifier
// without escapes ("\" is a whole name), while dialect.MySQLSyntax — the default mode,
// the only one the session check accepts for fenced statements — takes the quote after
// the backslash for an escaped one: a statement after it (DELETE FROM
// fencedsql_tomb_accounts; -- ') stands in what the default reading takes for a string.
//
// Every door check that reads a stored body with the words test (routines,
// tombRoutine, eventDoor, otherTriggers, guardTables' triggers) judges it under each of
// bodyReadings' lexical rules and keeps the worse verdict, whatever mode the catalog
// says it was stored with (a body without a backslash reads the same under every
// combination but for "…", which is a string or a name: both are read). ownTriggers'
// NamesColumn needs no readings: its name test is textual (dialect.Mentions over the
// whole body). Modes that change the grammar but not where a literal ends
// (PIPES_AS_CONCAT, MariaDB's ORACLE beyond its ANSI_QUOTES) do not change a words
// test's reading.

// bodyReadings returns the lexical rules the readers judge the stored body src under:
// dialect.MySQLSyntax; when src holds a backslash, also without backslash escapes
// (NO_BACKSLASH_ESCAPES); when it holds a double quote, also with "…" an identifier
// (ANSI_QUOTES); and both changes together when it holds both.
func bodyReadings(src string) []dialect.Syntax {
	out := []dialect.Syntax{dialect.MySQLSyntax}
	bs, dq := strings.Contains(src, `\`), strings.Contains(src, `"`)
	if bs {
		s := dialect.MySQLSyntax
		s.BackslashEscapes = false
		out = append(out, s)
	}
	if dq {
		s := dialect.MySQLSyntax
		s.DoubleQuoteStrings = false
		out = append(out, s)
	}
	if bs && dq {
		s := dialect.MySQLSyntax
		s.BackslashEscapes, s.DoubleQuoteStrings = false, false
		out = append(out, s)
	}
	return out
}

// writesUnderEveryReading is dialect.WritesTable of the stored body src and name under
// each of bodyReadings' rules: true when any reading writes.
func writesUnderEveryReading(src, name string) bool {
	for _, syn := range bodyReadings(src) {
		if dialect.WritesTable(src, syn, name) {
			return true
		}
	}
	return false
}
