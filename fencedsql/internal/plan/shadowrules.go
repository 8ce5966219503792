package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// shadowWords are the words whose presence in a statement's text makes ShadowsNames
// look closer: the heads of the DDL that creates, renames, moves or drops a relation
// (and PostgreSQL's SELECT … INTO, which is CREATE TABLE AS).
var shadowWords = []string{"create", "alter", "rename", "drop", "import", "into"}

// ShadowsNames reports whether a statement sent as written may create, rename, move or
// drop a relation that a guarded table's name resolves to, so that the lazy checks of
// that name no longer describe what the name reaches (docs/design.md G13, red-team
// rt37b): a same-named table earlier on PostgreSQL's search_path ("$user"), a
// temporary table (pg_temp, SQLite's temp, a MySQL/MariaDB TEMPORARY table, each of
// which shadows the base table for its session), a table renamed onto the name, the
// shadow dropped again.
//
// pool: every connection of the pool may now resolve the name otherwise — the pool's
// cached verdicts are dropped (conn.forgetNames), so the next guarded write on any
// connection checks the name again as it then resolves. session: the relation may be
// one only this session sees (the statement says TEMP, TEMPORARY or pg_temp, or
// renames a relation, which may be a temporary one) — the connection's name checks are
// re-armed as after SET search_path (Plan.ResetsNames), since no other connection's
// check could see it.
//
// The rule is textual and errs on the side of flagging: a statement flags when it
// mentions a guarded name as a word (mentionsName; or, on PostgreSQL, the word SCHEMA or EXTENSION: IMPORT
// FOREIGN SCHEMA, CREATE EXTENSION and ALTER … SET SCHEMA may bring in a relation
// without naming it) and one of its statements starts (after opening parentheses)
// with CREATE, ALTER, RENAME, DROP, IMPORT or EXPLAIN (which may run a statement that
// does), or, on PostgreSQL, with SELECT or WITH and holds INTO; text that does not lex, and a MySQL executable comment, flag both.
// Plans are cached by text, so the rule runs once per distinct statement; flagged
// statements are DDL, whose cost (one check per guarded table and pool, or per
// connection) is paid only after them.
func (rw *Planner) ShadowsNames(sql string) (pool, session bool) {
	if len(rw.names) == 0 {
		return false, false
	}
	pg := rw.syn == sqllex.Postgres
	if !rw.mentionsName(sql) && !(pg && (ContainsWord(sql, "schema") || ContainsWord(sql, "extension"))) {
		return false, false
	}
	exec := rw.syn.ExecComments && strings.Contains(sql, "/*")
	found := exec
	for _, w := range shadowWords {
		if found {
			break
		}
		found = ContainsWord(sql, w)
	}
	if !found {
		return false, false
	}
	toks, err := sqllex.Lex(sql, rw.syn)
	if err != nil {
		return true, true
	}
	sig := significant(sql, toks)
	head, ddl := true, false
	for _, t := range sig {
		switch {
		case t.Kind == sqllex.KindExecComment:
			return true, true
		case t.Kind == sqllex.KindPunct && t.Text(sql) == ";":
			head = true
			continue
		case !head, t.Kind == sqllex.KindPunct && t.Text(sql) == "(":
			continue
		}
		head = false
		if t.Kind != sqllex.KindWord {
			continue
		}
		switch strings.ToUpper(t.Text(sql)) {
		case "CREATE", "ALTER", "RENAME", "DROP", "IMPORT":
			ddl = true
		case "EXPLAIN":
			// PostgreSQL's EXPLAIN ANALYZE runs the statement it explains (EXPLAIN
			// ANALYZE CREATE TEMP TABLE accounts AS …, … SELECT … INTO TEMP accounts:
			// red-team rt39a F1); the text already holds a shadow word.
			ddl = true
		case "SELECT", "WITH":
			ddl = ddl || pg && ContainsWord(sql, "into")
		}
	}
	if !ddl {
		return false, false
	}
	session = ContainsWord(sql, "temp") || ContainsWord(sql, "temporary") || ContainsWord(sql, "pg_temp") || ContainsWord(sql, "rename")
	return true, session
}

// mentionsName reports whether sql holds a guarded table's name as a whole word, in
// any ASCII case (tmp_accounts does not name accounts). Where a name could be spelled
// otherwise — a guarded name with non-ASCII letters, PostgreSQL's U&"…" escapes — it
// is the substring pre-filter (mayMention).
func (rw *Planner) mentionsName(sql string) bool {
	if rw.nonASCII || rw.syn.EStrings && (strings.Contains(sql, `U&"`) || strings.Contains(sql, `u&"`)) {
		return rw.mayMention(sql)
	}
	for _, n := range rw.names {
		if ContainsWord(sql, strings.ToLower(n)) {
			return true
		}
	}
	return false
}
