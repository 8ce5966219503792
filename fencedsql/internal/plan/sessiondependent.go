package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// sessionDependent reports whether sql holds a byte whose reading depends on session
// settings the dialects' session checks verify: a backslash (PostgreSQL
// standard_conforming_strings, MySQL NO_BACKSLASH_ESCAPES, the multibyte client
// character sets whose characters can end in 0x5C), a double quote (MySQL ANSI_QUOTES)
// or a byte of 0x80 and above (client encodings; single-byte character sets whose
// no-break space is whitespace to MySQL), and on MySQL/MariaDB an opening bracket
// (MariaDB's sql_mode=MSSQL reads [name] as a quoted identifier, with ]] for a ], so
// that a quote, a # or a /* inside it opens nothing: red-team rt51e F1). These are the
// only bytes a reading setting changes (checked against MariaDB 10.11 in every
// combination mode: ORACLE, DB2, POSTGRESQL, MAXDB and ANSI change "…" only;
// PIPES_AS_CONCAT, IGNORE_SPACE and HIGH_NOT_PRECEDENCE change the grammar, not where a
// literal, a name or a comment ends). A text without them reads the same under every
// such setting. PostgreSQL's [ (array subscripts) depends on no setting, and SQLite
// always reads brackets.
func (rw *Planner) sessionDependent(sql string) bool {
	brackets := rw.syn == sqllex.MySQL
	for i := 0; i < len(sql); i++ {
		if c := sql[i]; c == '\\' || c == '"' || c >= 0x80 || c == '[' && brackets {
			return true
		}
	}
	return false
}
