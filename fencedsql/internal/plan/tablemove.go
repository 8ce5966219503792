package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// DDL that moves a guarded table's name (docs/design.md, G9 "A guarded table's name
// does not move through the pool"; red-team rt43c F2). The refusals of DDL that changes
// a column the guards read (guardcolumn.go) and rewrites rows (rowmove.go) judge the
// table an ALTER TABLE names. Through a fenced_allow=ddl pool, a guarded table renamed
// away (ALTER TABLE ledger RENAME TO ledger_tmp, RENAME TABLE, PostgreSQL's SET
// SCHEMA) was altered under its new, unguarded name — its token column dropped and
// added again DEFAULT 0, or its key column renamed and another of its name added — and
// renamed back: the triggers move with the table and read the columns by name, the
// lazy check finds a fit table again, and a stale token overwrote rows or re-inserted
// a deleted key. So, on a pool with guarded tables, whatever WithDDL allows, DDL that
// renames or moves a relation is refused, before anything is sent, when it names a
// guarded table (relatives included) by an identifier — the relation moved away from
// a guarded name, or onto one:
//
//   - ALTER TABLE (PostgreSQL also ALTER FOREIGN TABLE, VIEW, MATERIALIZED VIEW,
//     SEQUENCE, INDEX, which share the tables' names) … RENAME [TO|AS] new, MySQL/
//     MariaDB's RENAME new (TO is optional there), and PostgreSQL's SET SCHEMA;
//   - MySQL/MariaDB RENAME TABLE|TABLES a TO b [, c TO d]…, a move to another
//     database included.
//
// A rename of a guarded table belongs to a migration on a plain connection (the
// migration role), followed by schema.Check's Fix, which installs the guards under the
// new name and carries the tombstones over ("A renamed or moved table keeps its
// tombstones"). Renames of constraints, indexes and columns are other actions
// (RENAME CONSTRAINT|INDEX|KEY: they pass under WithDDL; RENAME COLUMN: refused by
// guardcolumn.go).

// movesGuardedName refuses, whatever WithDDL allows, the statement at sig[first] (head
// its head keyword, upper-cased) when it renames or moves a relation and names a
// guarded table by an identifier (see above). Any other statement is left to the
// other rules.
func (p *parser) movesGuardedName(head string, first int) error {
	to := first
	for to < len(p.sig) && !p.punct(to, ";") {
		to++
	}
	if !p.mentionsGuardIn(first, to) {
		return nil
	}
	var what string
	switch head {
	case "RENAME":
		if p.kwIn(first+1, "TABLE", "TABLES") {
			what = "RENAME TABLE"
		}
	case "ALTER":
		what = p.alterMovesName(first, to)
	}
	if what == "" {
		return nil
	}
	return unsupported(p.firstGuard(), "%s naming a guarded table on a pool with guarded tables, whatever WithDDL allows: it moves a guarded table away from its name, "+
		"or another relation onto it, and a table renamed away could have a column the guards read replaced under its new name and be renamed back; "+
		"rename guarded tables on a plain connection (the migration role), then run schema.Check's Fix (fencedsql-schema -apply) under the new name", what)
}

// alterMovesName returns the clause ("ALTER TABLE … RENAME TO", "ALTER TABLE … SET
// SCHEMA") by which the ALTER statement sig[first:to] renames or moves a relation (a
// table, foreign table, view, materialized view, sequence or index), or "".
func (p *parser) alterMovesName(first, to int) string {
	obj, from := "TABLE", 0
	var starts map[int]bool
	if tbl := p.alterTableAt(first, to); tbl >= 0 {
		starts, _ = p.alterActionStarts(tbl+1, to) // an unread start of a guarded table: guardColumns
		from = tbl + 1
	} else {
		k := first + 1
		if p.kw(k, "MATERIALIZED") {
			k++
		}
		if !p.kwIn(k, "VIEW", "SEQUENCE", "INDEX") {
			return ""
		}
		obj, from = strings.ToUpper(p.text(p.sig[k])), k+1
	}
	mysql := p.rw.syn == sqllex.MySQL
	for _, i := range p.topLevel(from, to) {
		switch {
		case p.kw(i, "RENAME") && p.kwIn(i+1, "TO", "AS"):
			return "ALTER " + obj + " … RENAME TO"
		case mysql && starts[i] && p.kw(i, "RENAME") && p.isIdent(i+1) && !p.kwIn(i+1, "COLUMN", "INDEX", "KEY", "CONSTRAINT"):
			return "ALTER TABLE … RENAME"
		case p.kw(i, "SET") && p.kw(i+1, "SCHEMA"):
			return "ALTER " + obj + " … SET SCHEMA"
		}
	}
	return ""
}
