package sqllex

// PostgresMaxIdent is the number of bytes of an identifier PostgreSQL keeps
// (NAMEDATALEN-1): a longer name is cut there, never inside a UTF-8 character.
const PostgresMaxIdent = 63

// KeptIdent returns identifier name as a server of syntax syn keeps it: on PostgreSQL
// its first 63 bytes, never cutting a UTF-8 character (the server's own cut,
// pg_mbcliplen); unchanged on MySQL/MariaDB and SQLite, which refuse or keep a long
// name whole. It is the one truncation of the library: the planner's guard keys, the
// schema records' comparisons and the PostgreSQL dialect's derived object names all
// use it, so every spelling of one table is one name to each of them (red-team rt56a
// F3).
func KeptIdent(syn Syntax, name string) string {
	if syn != Postgres {
		return name
	}
	return TruncateIdent(name, PostgresMaxIdent)
}

// TruncateIdent cuts name to at most max bytes (max <= 0: no limit), never inside a
// UTF-8 character.
func TruncateIdent(name string, max int) string {
	if max <= 0 || len(name) <= max {
		return name
	}
	n := max
	for n > 0 && name[n]&0xC0 == 0x80 { // name[n] continues a character: clip before it
		n--
	}
	return name[:n]
}
