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
// tombRoutine, eventDoor, otherTriggers, guardTables' triggers) judges it by
// writesAsStored: under the default reading, as before, and under the reading of the
// sql_mode the catalog lists for it, and keeps the worse verdict; a row without the
// mode (unknown) is read under every combination of the two flags. The default reading
// is kept so that no verdict is weaker than before; the stored mode's adds the
// server's own. ownTriggers' NamesColumn needs no readings: its name test is textual
// (dialect.Mentions over the whole body). MariaDB's MSSQL mode also reads [name] as a
// quoted identifier (]] for a ]), in which a quote, a #, a -- or a /* opens nothing:
// its reading has brackets (red-team rt51e F2: UPDATE ledger AS [#] JOIN accounts …
// was a comment over the table's name to the other readings). The lexer helpers the
// words test uses on a body (openExecComments, dynamicTexts) read it by the same rules.
// Modes that change the grammar but not where a literal, a name or a comment ends
// (PIPES_AS_CONCAT, IGNORE_SPACE, the rest of MariaDB's ORACLE) do not change a words
// test's reading.

// unknownMode is writesAsStored's mode for a body whose sql_mode is not known.
const unknownMode = "\x00unknown"

// storedSyntax returns the lexical rules of a body stored with the sql_mode list mode:
// no backslash escapes under NO_BACKSLASH_ESCAPES, "…" an identifier under ANSI_QUOTES
// or a combination mode that implies it (ANSI, ORACLE, MSSQL, DB2, POSTGRESQL, MAXDB,
// listed in case the catalog shows the combination without its parts), and [name] an
// identifier under MSSQL (withBrackets).
func storedSyntax(mode string) dialect.Syntax {
	s := dialect.MySQLSyntax
	for _, m := range strings.Split(mode, ",") {
		switch strings.ToUpper(strings.TrimSpace(m)) {
		case "NO_BACKSLASH_ESCAPES":
			s.BackslashEscapes = false
		case "MSSQL":
			s = withBrackets(s)
		case "ANSI_QUOTES", "ANSI", "ORACLE", "DB2", "POSTGRESQL", "MAXDB":
			s.DoubleQuoteStrings = false
		}
	}
	return s
}

// withBrackets returns s with MariaDB's MSSQL mode's reading: [name] a quoted
// identifier with ]] for a ], and "…" an identifier (the server always sets
// ANSI_QUOTES with MSSQL).
func withBrackets(s dialect.Syntax) dialect.Syntax {
	s.Brackets, s.BracketDoubling, s.DoubleQuoteStrings = true, true, false
	return s
}

// bodyReadings returns the lexical rules writesAsStored judges the body src stored
// with the sql_mode mode under: the default mode's, and the stored mode's when it
// differs; for unknownMode every combination of NO_BACKSLASH_ESCAPES, ANSI_QUOTES and
// MSSQL that can read src otherwise (a backslash, a double quote, a bracket).
func bodyReadings(src, mode string) []dialect.Syntax {
	out := []dialect.Syntax{dialect.MySQLSyntax}
	if mode != unknownMode {
		if s := storedSyntax(mode); s != dialect.MySQLSyntax {
			out = append(out, s)
		}
		return out
	}
	for _, bs := range []bool{true, false} {
		for _, dq := range []bool{true, false} {
			if !bs && !strings.Contains(src, `\`) {
				continue
			}
			s := dialect.MySQLSyntax
			s.BackslashEscapes, s.DoubleQuoteStrings = bs, dq
			if (!bs || !dq) && (dq || strings.Contains(src, `"`)) {
				out = append(out, s)
			}
			if !dq && strings.Contains(src, "[") {
				out = append(out, withBrackets(s))
			}
		}
	}
	return out
}

// writesAsStored is bodyWrites of the stored body src and name (guard: name is a
// guard table) under each of bodyReadings' rules for the sql_mode mode: true when any
// reading writes.
func writesAsStored(src, mode, name string, guard bool) bool {
	for _, syn := range bodyReadings(src, mode) {
		if bodyWrites(src, syn, name, guard) {
			return true
		}
	}
	return false
}

// storedMode returns the sql_mode column i of a catalog row, or unknownMode when the
// row has no such column.
func storedMode(r []string, i int) string {
	if i < len(r) {
		return r[i]
	}
	return unknownMode
}
