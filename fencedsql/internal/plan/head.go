package plan

import "strings"

// On a pool with guarded tables, some statements are refused whatever they name:
// transaction control sent as text (the wrapper's own transaction around a DELETE would
// commit the caller's) and dynamic SQL (the SQL it runs is built at run time). Their
// head keyword is found without tokenizing, so that the pre-filter can still pass every
// other statement that names no guarded table untouched.

// controlHeads are the head keywords that need a full analysis even when the text names
// no guarded table.
var controlHeads = map[string]bool{
	"BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true, "END": true, "ABORT": true,
	"XA": true, "SET": true, "EXECUTE": true, "EXEC": true, "PREPARE": true, "DO": true,
	"CALL": true, "LOCK": true, "SAVEPOINT": true, "RELEASE": true,
}

// protectHeads start the DDL that can remove or disable the guards without naming
// them (DROP SCHEMA … CASCADE, DROP OWNED, ALTER TABLE … DISABLE TRIGGER, …) or name
// them in a body written with escapes (CREATE FUNCTION … AS E'…'), and the statements
// that reach guard objects by privilege, system database or server code (GRANT …
// ON ALL TABLES IN SCHEMA, USE mysql, INSTALL SONAME, LOAD 'lib'): protect judges them.
var protectHeads = map[string]bool{"DROP": true, "ALTER": true, "REASSIGN": true, "CREATE": true,
	"GRANT": true, "REVOKE": true, "USE": true, "INSTALL": true, "UNINSTALL": true, "LOAD": true}

// reachHeads start the statements that can write a guarded table without naming it
// (TRUNCATE … CASCADE, COPY … PROGRAM, BINLOG, EXPLAIN ANALYZE EXECUTE): control judges
// them.
var reachHeads = map[string]bool{"TRUNCATE": true, "COPY": true, "BINLOG": true, "EXPLAIN": true, "ANALYZE": true}

// controlHead reports whether sql, on a pool with guarded tables, starts with one of
// controlHeads, protectHeads or reachHeads (on MySQL/MariaDB, commitHeads too:
// implicitcommit.go), with a word that is no statement keyword
// (knownHeads: a pgx prepared-statement name, protectHead) or with anything but a word
// (both on PostgreSQL only), or with a comment. The scan reads only whitespace and
// parentheses before the head: where a comment ends (a -- comment at \r on PostgreSQL,
// nesting, executable comments on MySQL/MariaDB, a -- that is not a comment) is the
// lexer's question, so a text that starts with a comment gets the full analysis.
func (rw *Planner) controlHead(sql string) bool {
	if len(rw.names) == 0 {
		return false
	}
	if strings.IndexByte(sql, ';') >= 0 {
		return true // a multi-statement string: each statement's head counts
	}
	i := 0
	for i < len(sql) {
		switch c := sql[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '(':
			i++
		case strings.HasPrefix(sql[i:], "--") || strings.HasPrefix(sql[i:], "/*") || c == '#' && rw.syn.HashComments:
			return true
		default:
			j := i
			for j < len(sql) && (sql[j]|0x20 >= 'a' && sql[j]|0x20 <= 'z' || sql[j] == '_' ||
				j > i && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '$')) {
				j++
			}
			if j == i {
				return rw.syn.DollarQuotes // no word first: protectHead judges it (PostgreSQL)
			}
			h := strings.ToUpper(sql[i:j])
			return controlHeads[h] || protectHeads[h] || reachHeads[h] || rw.syn.ExecComments && commitHeads[h] ||
				rw.syn.DollarQuotes && !knownHeads[h]
		}
	}
	return false
}
