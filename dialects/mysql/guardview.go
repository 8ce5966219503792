package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardViewDoor is the door of an updatable view over one of the guards' own tables
// of table — its tombstone table or the token floor of its database (guard, the guard
// table's name) — directly or through other updatable views, in any database, which
// views finds beside the views over the table itself (red-team rt40a F2): a write
// through such a view (DELETE FROM v, UPDATE v SET floor = 0, REPLACE INTO v) changes
// the guard table under a name the pool's guard-prefix rule does not see, and with
// MariaDB's default SQL SECURITY DEFINER it runs with the view's definer's rights, so
// an account that may write the view only erases tombstones or lowers the floor, and
// a stale holder writes again. It is a door of the guard tables
// (dialect.SideDoorGuardTable), as PostgreSQL's views over them are (rt29a F4):
// schema.Check reports it and the lazy check refuses the table's guarded writes while
// it exists; the pool itself refuses writes through it and DDL naming it
// (CatalogViewsQuery lists it). A view is matched by its definition naming
// `db`.`fencedsql_tomb_<table>` or `db`.`fencedsql_floor` (the server stores every
// table of a view qualified and backquoted); without SHOW VIEW the definition is
// hidden and the view is not seen by views (the pool's list still holds an updatable
// view whose definition it cannot read). Fix: the view re-created with
// ALGORITHM=TEMPTABLE, which is never updated through, keeping its definer and SQL
// SECURITY (reads of it go on working); none when the definition is hidden (drop the
// view, or revoke INSERT, UPDATE, DELETE on it from every writer).
func (d dialectImpl) guardViewDoor(table, view dialect.TableName, guard, def, definer, security string) dialect.SideDoor {
	what := "the tombstone table " + guard
	if strings.EqualFold(guard, dialect.FloorTable) {
		what = "the token floor " + guard
	}
	sd := dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: view.String(),
		Problem: "the updatable view " + view.String() + " reaches " + what + ", which the guards of " + table.String() +
			" read: a write through it (DELETE, UPDATE … SET floor = 0, REPLACE) changes the guard table under a name the pool's guard-prefix rule does not see, with the rights of the view's definer, and a tombstone deleted or a floor lowered lets a stale holder write again;" +
			" the fix re-creates it with ALGORITHM=TEMPTABLE, which is not updatable (or drop it: the guard tables are the library's own, read them, if at all, directly); tombstones or a floor written meanwhile may be low: afterwards raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)"}
	if fix := temptableFix(d, view, def, definer, security); fix != "" {
		sd.Fix = []string{fix}
	} else {
		sd.Problem += "; the view's definition is not visible to this account (SHOW VIEW), so no statement is proposed"
	}
	return sd
}

// temptableFix is the statement that makes view not updatable — ALTER ALGORITHM =
// TEMPTABLE with its definition def, its DEFINER and its SQL SECURITY as
// information_schema.VIEWS shows them — or "" when def is hidden (no SHOW VIEW).
func temptableFix(d dialectImpl, view dialect.TableName, def, definer, security string) string {
	def = strings.TrimSpace(def)
	if def == "" {
		return ""
	}
	by := ""
	if user, host, ok := cutLast(definer, "@"); ok {
		by = " DEFINER = " + literal(user) + "@" + literal(host)
	}
	sec := ""
	if security == "DEFINER" || security == "INVOKER" {
		sec = " SQL SECURITY " + security
	}
	return "ALTER ALGORITHM = TEMPTABLE" + by + sec + " VIEW " + view.Quote(d.QuoteIdent) + " AS " + def
}
