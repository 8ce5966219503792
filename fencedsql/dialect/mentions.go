package dialect

import "strings"

// Mentions reports whether the SQL text s holds name as a word, in any case, bare or
// inside quotes of any kind (double, back, square brackets, single; comments too): a conservative test for
// text the catalog stores (view and trigger definitions, routine bodies), where a name
// may be written in any of a database's forms. A name glued to other identifier
// characters (accounts_archive, fencedsql_tomb_accounts) is not a mention; a `$` is no
// such character here, although PostgreSQL and MySQL take it inside names: a dollar
// quote's tag glued to the name (`$q$DELETE FROM accounts$q$`, PL/pgSQL's usual
// dynamic SQL) must count (red-team rt30a F8), and a name holding a `$` counting as
// its parts errs on the side of yes.
func Mentions(s, name string) bool {
	if name == "" {
		return false
	}
	ls, ln := strings.ToLower(s), strings.ToLower(name)
	ident := func(b byte) bool {
		return b == '_' || b >= 0x80 || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z')
	}
	for i := 0; ; {
		j := strings.Index(ls[i:], ln)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(ln)
		if (j == 0 || !ident(ls[j-1])) && (end == len(ls) || !ident(ls[end])) {
			return true
		}
		i = j + 1
	}
}

// writeWords start, or mark, a statement that may write a table: the data-changing
// statements, and the dynamic SQL of routine bodies (PL/pgSQL EXECUTE, whose text is
// a string that may name the table).
var writeWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "MERGE": true, "UPSERT": true,
	"TRUNCATE": true, "COPY": true, "EXECUTE": true, "EXEC": true,
}

// WritesTable reports whether the routine or trigger body src, read by syn's lexical
// rules, may write the table name: one of its statements (the text between two
// semicolons) holds a word that writes (INSERT, UPDATE, DELETE, REPLACE, MERGE,
// TRUNCATE, COPY, EXECUTE) and names the table — as an identifier in any case (on
// SQLite, ASCII case: SQLite folds no other letter) and quoting, or as a word inside a string literal (a name SQLite accepts as a string,
// dynamic SQL). It is a word test, not a parse, and it errs on the side of yes: a
// statement that writes another table and only reads this one (INSERT … SELECT …
// FROM name, a locking read SELECT … FOR UPDATE) counts, and a body the lexer cannot
// read counts when Mentions finds the name anywhere in it. It cannot see a name built
// at run time ('acc' || 'ounts') nor the body of a routine the body calls.
func WritesTable(src string, syn Syntax, name string) bool {
	return WritesTableWords(src, syn, name, nil)
}

// WritesTableWords is WritesTable with more words that count as writing (upper case),
// for a dialect whose bodies may change a table by other statements too: PostgreSQL's
// routine bodies may hold DDL (ALTER TABLE … RENAME, DROP TABLE, CREATE TABLE … LIKE),
// which empties or swaps a table no less than a DELETE. extra nil is WritesTable.
func WritesTableWords(src string, syn Syntax, name string, extra map[string]bool) bool {
	toks, err := LexDDL(src, syn)
	if err != nil {
		return Mentions(src, name)
	}
	// Names compare as SQLite compares them there (ASCII letters only: "É" is not
	// "é"), in any case elsewhere (errs on the side of yes).
	same := strings.EqualFold
	if syn == SQLiteSyntax {
		same = EqualFoldASCII
	}
	writes, names := false, false
	for _, t := range toks {
		switch {
		case t.Kind == DDLPunct && t.Text == ";":
			writes, names = false, false
			continue
		case t.Kind == DDLWord && (writeWords[strings.ToUpper(t.Text)] || extra[strings.ToUpper(t.Text)]):
			writes = true
		case t.Kind == DDLString:
			names = names || Mentions(t.Text, name)
		case t.Kind == DDLWord || t.Kind == DDLQuoted:
			n, ok := t.Name()
			// A quoted name this cannot decode (PostgreSQL's U&"\0061cc") may be the
			// table: it counts (a red-team pass hid a trigger's write that way).
			if ok && same(n, name) || !ok && t.Kind == DDLQuoted {
				names = true
			}
		}
		if writes && names {
			return true
		}
	}
	return false
}

// guardDDLWords are the statements that change a guard table (a tombstone table, the
// token floor, a copy of either) other than by writing rows: renamed away, dropped and
// re-created empty (RENAME TABLE t TO old; CREATE TABLE t LIKE old), re-engined
// (ALTER TABLE t ENGINE=MEMORY loses every tombstone on restart), rebuilt, granted to
// other accounts. PostgreSQL's (red-team rt29a F5) and MySQL/MariaDB's (rt47b F2) in
// one set: a word of the other database's counts only in a statement that also names
// the guard table, which errs on the side of yes.
var guardDDLWords = map[string]bool{
	"ALTER": true, "DROP": true, "CREATE": true, "RENAME": true, "CLUSTER": true, "REINDEX": true, "VACUUM": true,
	"GRANT": true, "REVOKE": true, "COMMENT": true, "SECURITY": true, "IMPORT": true, "REFRESH": true,
	"OPTIMIZE": true, "REPAIR": true, "LOAD": true,
}

// WritesGuardTable reports whether the routine, trigger or rule body src, read by syn's
// lexical rules, may change the guard table name (a tombstone table, the token floor):
// WritesTableWords with the data-changing words and the DDL words guardDDLWords lists.
// The one test of a body against the guards' tables, for every dialect whose bodies
// may hold DDL (PostgreSQL routines, MySQL/MariaDB procedures and events).
func WritesGuardTable(src string, syn Syntax, name string) bool {
	return WritesTableWords(src, syn, name, guardDDLWords)
}

// NamesColumn reports whether the trigger or routine text src, read by syn's lexical
// rules, may name one of cols (the token and version columns, for the table's own
// BEFORE row triggers, TriggerDoorFinder): Mentions finds one as a word anywhere in it
// (identifiers in any quoting and case, strings, comments), or the lexer finds a quoted
// identifier it cannot decode (PostgreSQL's U&"…", which may spell one). A word test,
// not a parse: it errs on the side of yes (a trigger that only reads NEW.version
// counts), and it cannot see a name built at run time.
func NamesColumn(src string, syn Syntax, cols ...string) bool {
	for _, c := range cols {
		if Mentions(src, c) {
			return true
		}
	}
	toks, err := LexDDL(src, syn)
	if err != nil {
		return false
	}
	for _, t := range toks {
		if _, ok := t.Name(); !ok && t.Kind == DDLQuoted {
			return true
		}
	}
	return false
}
