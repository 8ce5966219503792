package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// quietHeads are the session and transaction statements that change no row (their
// text may still hold a write: a PREPARE … AS UPDATE, a SET from a data-modifying
// subquery, which hasWriteIn finds).
var quietHeads = map[string]bool{
	"SET": true, "BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true, "END": true,
	"ABORT": true, "LOCK": true, "PREPARE": true, "ANALYZE": true, "EXPLAIN": true, "WITH": true,
}

// MayWriteRows reports whether sql, sent as written, may change rows of any table,
// guarded or not: a statement the wrapper refuses while a table the pool lists does
// not exist yet (fencedsql's missing listed tables: the write may be meant for the
// table a typo in the list left unguarded). It fails closed: a text the lexer cannot
// read, a statement of any head but a read (readHeads, WITH, EXPLAIN), session or
// transaction control (quietHeads) and DDL (ddlHeads, which creates the missing table,
// whatever its body names: a column's ON UPDATE, a trigger's body) may write, and so
// may one of those whose text holds INSERT, UPDATE (not FOR/KEY UPDATE), DELETE,
// MERGE or REPLACE; each statement of a multi-statement string is judged. It
// tokenizes sql: it is asked only while a listed table is missing, not on the
// statement path of a pool whose tables exist.
func (rw *Planner) MayWriteRows(sql string) bool {
	toks, err := sqllex.Lex(sql, rw.syn)
	if err != nil {
		return true
	}
	p := &parser{rw: rw, src: sql, all: toks, sig: significant(sql, toks)}
	from := 0
	for i := 0; i <= len(p.sig); i++ {
		if i < len(p.sig) && !p.punct(i, ";") {
			continue
		}
		if i > from && p.stmtMayWrite(from, i) {
			return true
		}
		from = i + 1
	}
	return false
}

// stmtMayWrite is MayWriteRows for the statement sig[from:to].
func (p *parser) stmtMayWrite(from, to int) bool {
	first := from
	for first < to-1 && p.punct(first, "(") {
		first++
	}
	if p.sig[first].Kind != sqllex.KindWord {
		return true
	}
	head := strings.ToUpper(p.text(p.sig[first]))
	switch {
	case ddlHeads[head]:
		return p.ddlMayWrite(head, first, to)
	case head == "BEGIN" && p.kw(first+1, "NOT"), head == "SET" && p.kw(first+1, "STATEMENT"):
		// MariaDB's compound statement (split at its inner semicolons, so its body is
		// not this statement's) and SET STATEMENT … FOR <statement>, which runs
		// whatever follows FOR (an UPDATE there is not a locking clause): rt36a F4, F7.
		return true
	case readHeads[head] || quietHeads[head]:
		return p.hasWriteIn(first, to)
	}
	return true
}

// ddlMayWrite is stmtMayWrite for DDL: it passes (it may create the missing table)
// unless it changes rows as it runs — an ALTER TABLE that moves, deletes or rewrites
// rows (alterMovesRows, the clauses refused on a guarded table whatever WithDDL says),
// or a CREATE TABLE … AS / SELECT whose query writes (a data-modifying WITH): red-team
// rt36a F2, F3.
func (p *parser) ddlMayWrite(head string, first, to int) bool {
	switch head {
	case "ALTER":
		if tbl := p.alterTableAt(first, to); tbl >= 0 {
			if _, unread := p.alterActionStarts(tbl+1, to); unread >= 0 {
				return true // actions the planner cannot place may rewrite rows (fail closed)
			}
		}
		return p.alterMovesRows(first, to) != ""
	case "CREATE":
		depth := 0
		for i := first + 1; i < to; i++ {
			switch {
			case p.punct(i, "("):
				depth++
			case p.punct(i, ")"):
				depth--
			case depth == 0 && p.kwIn(i, "TRIGGER", "FUNCTION", "PROCEDURE", "EVENT", "RULE", "VIEW"):
				return false // a body or query kept for later, not run now
			case depth == 0 && p.kwIn(i, "AS", "SELECT", "WITH"):
				return p.hasWriteIn(i, to)
			}
		}
	}
	return false
}
