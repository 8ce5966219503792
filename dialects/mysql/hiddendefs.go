package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// hiddenDefinitions reports, for schema.Check only (SideDoors, not the lazy check),
// the stored routines and views whose definition information_schema hides from the
// checking account (red-team rt60b F3). MariaDB shows a routine's ROUTINE_DEFINITION
// only to its definer and to accounts that may read every routine (SELECT on
// mysql.proc, global privileges; 11.3+ SHOW CREATE ROUTINE), MySQL only with
// SHOW_ROUTINE or CREATE/ALTER ROUTINE rights; a view's VIEW_DEFINITION needs SHOW
// VIEW and SELECT on it or its definership. The finders that read those definitions —
// the fence function compared whole (fenceFunction), the routines that write the
// table or the guards' tables (routines), those that set the library's session
// variables (markVariableDoors), the updatable views (views) — pass a definition they
// cannot read: an account with ALL PRIVILEGES on the database, the migration account,
// loses sight of a routine exactly when another account (the routines' owner, with
// CREATE ROUTINE) re-creates it and becomes its definer. So Check says what it could
// not judge, with the definer, rather than OK:
//
//   - the table's own fence function (its name and this version's COMMENT in the
//     table's database; the one-statement DELETE relies on it alone): "cannot judge",
//     Fix the statements that re-create it as the account applying them
//     (fenceFuncDDL), after which that account reads it. A pool of an account that
//     cannot read it sends the table's DELETEs as two statements (DeleteFenceQuery
//     requires a readable body), so the hidden function is never trusted;
//   - every other routine and view so hidden, outside the system schemas: no Fix (it
//     is the user's): run schema.Check as an account that reads it, or drop it.
//
// One catalog query, in schema.Check only. The lazy check (TriggerDoors) keeps passing
// what an application account of the least-privilege layout cannot read (docs/design.md,
// Known open findings).
func (d dialectImpl) hiddenDefinitions(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	const system = "('mysql', 'sys', 'information_schema', 'performance_schema')"
	rows, err := query(ctx, "SELECT ROUTINE_TYPE, ROUTINE_SCHEMA, ROUTINE_NAME, DEFINER, ROUTINE_COMMENT, ROUTINE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND "+exactDatabase("ROUTINE_SCHEMA", t.Table.Schema)+
		" FROM information_schema.ROUTINES WHERE COALESCE(ROUTINE_DEFINITION, '') = '' AND ROUTINE_SCHEMA NOT IN "+system+
		" UNION ALL SELECT 'VIEW', TABLE_SCHEMA, TABLE_NAME, DEFINER, '', 0 FROM information_schema.VIEWS WHERE COALESCE(VIEW_DEFINITION, '') = '' AND TABLE_SCHEMA NOT IN "+system+
		" ORDER BY 2, 3, 1", t.Table.Schema)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		kind := strings.ToLower(r[0])
		obj := dialect.TableName{Schema: r[1], Name: r[2]}
		if kind == "function" && dialect.CatalogBool(r[5]) && r[2] == fenceFunc(t.Table.Name) && r[4] == oneStepMarker {
			sd := dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "function " + obj.String(),
				Problem: "cannot judge the fence function " + obj.String() + " of " + t.Table.String() + "'s one-statement DELETE: its body is hidden from this account (definer " + r[3] + "), and the DELETE relies on it alone to refuse a row with a newer token or below the floor; " +
					"run schema.Check as its definer (or as an account that reads every routine) or re-create it with the Fix (fencedsql-schema -apply); meanwhile a pool of an account that cannot read it sends the table's DELETEs as two statements"}
			if t.TokenColumn != "" {
				sd.Fix = d.fenceFuncDDL(t.Table, t.TokenColumn)
			}
			doors = append(doors, sd)
			continue
		}
		what := "the " + kind + " " + obj.String()
		reads := "whether it writes " + t.Table.String() + " or the tables its guards read, or sets the library's session variables, is not known"
		doorKind := dialect.SideDoorRoutine
		if kind == "view" {
			reads = "whether a write through it reaches " + t.Table.String() + " unfenced is not known"
			doorKind = dialect.SideDoorView
		}
		doors = append(doors, dialect.SideDoor{Kind: doorKind, Object: kind + " " + obj.String(),
			Problem: "cannot judge " + what + ": its definition is hidden from this account (definer " + r[3] + "), so " + reads +
				"; run schema.Check as its definer or as an account that reads every definition (MariaDB: SELECT on mysql.proc and SHOW VIEW; MySQL: SHOW_ROUTINE and SHOW VIEW), or drop it"})
	}
	return doors, nil
}
