package plan

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// DDL that changes a column the guards read (docs/design.md, G9 and "DDL that changes
// a column the guards read"; red-team rt42a F1, F2). The guards and the tombstones
// read a guarded table's fencing columns (token, version) and its primary key by name
// (MySQL/MariaDB and SQLite triggers, PostgreSQL's guard and tombstone functions), or
// by column number (PostgreSQL's DELETE trigger's WHEN clause). An ALTER TABLE that
// renames or drops such a column and adds another of its name replaces it without the
// row triggers: every row's token is the new column's default (0), and the guards
// judge the new column as they judged the old one, so a holder with any token
// overwrites rows a newer holder wrote; a key column renamed away leaves the
// tombstones reading a new, empty column of the key's name, and a deleted key comes
// back under an older token. The lazy check re-reads the table after such DDL and
// finds a fit column of the configured name. So, on a pool with guarded tables,
// whatever WithDDL allows, an ALTER TABLE of a guarded table (a name the pool
// guards, relatives included) is refused, before anything is sent, when one of its
// actions:
//
//   - renames a column (RENAME [COLUMN] x TO y; MySQL/MariaDB CHANGE is refused with
//     MODIFY, rowmove.go): x or y may be a fencing or key column, and the planner,
//     which knows the fencing columns but not the primary key, refuses every column
//     rename of a guarded table;
//   - drops a column (DROP [COLUMN] [IF EXISTS] x), for the same reason: a key column
//     dropped and added again, or a fencing column dropped (CASCADE on PostgreSQL,
//     which drops the guard's DELETE trigger with it) and added again;
//   - converts the table's character columns (MySQL/MariaDB CONVERT TO CHARACTER SET
//     | CHARSET …): a key column's collation changes under the tombstone table's (F2:
//     'alicE' becomes the key 'Alice' that was deleted), every row rewritten like
//     MODIFY.
//
// ADD COLUMN passes under WithDDL, a fencing column's name included: it is how a
// table gets the fencing columns it lacks (the lazy check's Fix), and with renames and
// drops refused the pool cannot make room for a replacement (a replacement prepared on
// a plain connection is the migration role's; on PostgreSQL the guard's DELETE trigger
// then reads the old column, which schema.Check and the lazy check report:
// dialects/postgres/guardcolumn.go). ALTER COLUMN … SET/DROP DEFAULT, constraints,
// indexes and DEFAULT CHARACTER SET (new columns only) pass under WithDDL too; RENAME
// TO and SET SCHEMA of the table itself are refused by tablemove.go (red-team rt43c
// F2: renamed away, a guarded table's columns were replaced under an unguarded name).
// Each action is found by alterActionStarts (alteraction.go): after MariaDB's WAIT n
// or NOWAIT too (rt43c F1), and an action start it does not recognise is refused.
// Column renames and drops of a guarded table belong on a plain connection (the
// migration role), followed by schema.Check's Fix.

// alterChangesGuardColumn returns the clause (upper-cased, e.g. "ALTER TABLE …
// RENAME COLUMN") by which the ALTER statement sig[first:to] changes a column the
// guards of a guarded table read (see above), or "" when it has none, is not an
// ALTER TABLE or alters a table the pool does not guard. It is the one test of "this
// ALTER changes a guard-relevant column" for every dialect.
//
// unread is the sig index of an action start of a guarded table's ALTER TABLE that
// the planner does not recognise (alterActionStarts), or -1: the caller refuses the
// statement then (fail closed: the actions may start elsewhere than it reads them).
func (p *parser) alterChangesGuardColumn(first, to int) (what string, unread int) {
	tbl := p.alterTableAt(first, to)
	if tbl < 0 || !p.alteredGuard(tbl+1, to) {
		return "", -1
	}
	mysql := p.rw.syn == sqllex.MySQL
	starts, unread := p.alterActionStarts(tbl+1, to)
	for _, i := range p.topLevel(tbl+1, to) {
		if !starts[i] {
			continue
		}
		switch {
		case p.kw(i, "RENAME"):
			switch {
			case p.kw(i+1, "COLUMN"):
				return "ALTER TABLE … RENAME COLUMN", -1
			case p.kwIn(i+1, "TO", "AS", "CONSTRAINT", "INDEX", "KEY"):
				// the table itself (names.go), a constraint or an index
			case !mysql && p.isIdent(i+1):
				// PostgreSQL and SQLite: RENAME x TO y renames a column; MySQL/MariaDB's
				// RENAME new_name (TO is optional there) renames the table.
				return "ALTER TABLE … RENAME COLUMN", -1
			}
		case p.kw(i, "DROP"):
			notColumn := []string{"CONSTRAINT"} // PostgreSQL, SQLite: DROP CONSTRAINT, else a column
			if mysql {
				notColumn = mysqlDropNotColumn
			}
			if p.kw(i+1, "COLUMN") || p.kwIn(i+1, "IF") || p.isIdent(i+1) && !p.kwIn(i+1, notColumn...) {
				return "ALTER TABLE … DROP COLUMN", -1
			}
		case mysql && p.kw(i, "CONVERT") && p.kw(i+1, "TO"):
			return "ALTER TABLE … CONVERT TO CHARACTER SET", -1
		}
	}
	return "", unread
}

// mysqlDropNotColumn are the words after a MySQL/MariaDB ALTER TABLE action's DROP
// that drop something other than a column.
var mysqlDropNotColumn = []string{"CONSTRAINT", "INDEX", "KEY", "PRIMARY", "FOREIGN", "CHECK", "PARTITION", "SYSTEM", "PERIOD", "UNIQUE", "FULLTEXT", "SPATIAL"}

// alteredGuard reports whether the table an ALTER TABLE names at sig[i] (after TABLE:
// [IF EXISTS] [ONLY] name) is guarded (a name the pool guards, relatives included). A
// name that cannot be read counts as guarded when the statement names a guarded table
// anywhere (fail closed).
func (p *parser) alteredGuard(i, to int) bool {
	if p.kw(i, "IF") && p.kw(i+1, "EXISTS") {
		i += 2
	}
	if p.kw(i, "ONLY") {
		i++
	}
	r, ok := p.parseName(i)
	if !ok {
		return p.mentionsGuardIn(i, to)
	}
	return p.rw.Lookup(r.parts) != nil
}

// guardColumns refuses, whatever WithDDL allows, the statement at sig[first] (head its
// head keyword, upper-cased) when it is an ALTER TABLE that changes a column the guards
// of a guarded table read (alterChangesGuardColumn). Any other statement is left to
// the DDL rule.
func (p *parser) guardColumns(head string, first int) error {
	if head != "ALTER" {
		return nil
	}
	to := first
	for to < len(p.sig) && !p.punct(to, ";") {
		to++
	}
	what, unread := p.alterChangesGuardColumn(first, to)
	if what == "" && unread >= 0 {
		return unsupported(p.firstGuard(), "an ALTER TABLE of a guarded table whose action at %q the planner does not recognise, on a pool with guarded tables, whatever WithDDL allows: "+
			"it judges each action by its first words, and a clause it cannot place may hide one that renames, drops or rewrites a column the guards read; "+
			"write the actions as ALTER TABLE name [WAIT n | NOWAIT] action [, action]…, or run it on a plain connection (the migration role)", p.text(p.sig[unread]))
	}
	if what == "" {
		return nil
	}
	return unsupported(p.firstGuard(), "%s of a guarded table on a pool with guarded tables, whatever WithDDL allows: it renames, drops or replaces a column the guards read "+
		"(a fencing column, or the primary key the tombstones are keyed by) without the row triggers, and a stale token would then overwrite rows or re-insert a deleted key; "+
		"run it on a plain connection (the migration role), then schema.Check's Fix (fencedsql-schema -apply)", what)
}
