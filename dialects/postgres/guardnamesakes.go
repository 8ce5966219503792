package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardNamesakes finds the routines in t's schema that carry the name of a function
// the guard or the tombstone guard installs there but are not that function — another
// signature, or a routine of another kind (a procedure, an aggregate, a window
// function) — (red-team rt57b F1, F2; rt58a F1, F2): the guard's trigger function
// fencedsql_guard_<t>(), the one-statement DELETE's fence functions
// fencedsql_fence_<t>(bigint, bigint) and fencedsql_fenced_<t>(bigint, bigint), the
// per-schema trigger functions (the floor's sync function, the views' refusal), the
// tombstone function fencedsql_tombstone_<t>() — none of which but the fences takes
// arguments — and the absence recorder fencedsql_tombclaim_<t>(<the primary key's
// types>, bigint, boolean). Anyone with CREATE on the schema can add such a routine.
// The guard calls its own functions so that none can take a call — triggers by oid,
// the fence's calls schema-qualified with every argument cast to bigint (fenceCall),
// the slow fence on its bigint parameters, the recorder with every argument cast to
// its parameter's type (AbsenceCall) — but an overload whose extra parameters have
// defaults makes an exactly typed call ambiguous (42725), and a routine of a guard's
// name that the guard does not use only hides in the catalog. So each is reported,
// with a Fix (dropNamesakes) that drops every routine of those names and schema that
// is not the guard's, each by DROP ROUTINE (DROP FUNCTION refuses a procedure or an
// aggregate: rt58a F1). guardObjects and guardFunctions judge the guard's own
// signatures only.
//
// schema.Check only (SideDoors): the lazy check does not refuse the table's writes for
// them — with the calls exact they cannot open the fence, DeleteFenceQuery sends the
// two-statement DELETE while an ambiguous one is there, and AbsenceRecorderQuery
// refuses a claim of an absent key (ErrUnsupported) while one makes the recorder's
// call ambiguous — so that a role allowed to create routines in the schema cannot
// stop the guarded writes with one.
func (d dialectImpl) guardNamesakes(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	table := fold(t.Table)
	rows, err := query(ctx, `SELECT n.nspname::text, p.oid::pg_catalog.regprocedure::text, p.prokind::text
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE p.pronamespace = (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1))
  AND `+namesakeCondition("p", "pg_catalog.to_regclass($1)", guardNames("$2", "$3", "$4", "$5", "$6", "$7", "$8"))+`
ORDER BY 2`, regclass(t.Table), guardFunc(table.Name), floorSyncTrigger, refuseFunction, tombFuncName(table).Name, fenceFunc(table.Name), fencedFunc(table.Name), absenceFuncName(table).Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 3 {
			continue
		}
		what := routineKind(r[2]) + " " + r[1]
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: what,
			Problem: "the " + what + " carries the name of a function the guard of " + t.Table.String() + " installs but is not that function (another signature or kind): " +
				"a call of the guard's function may become ambiguous (anyone with CREATE on the schema can add one); drop it (fencedsql-schema -apply)",
			Fix: []string{d.dropNamesakes(r[0], t.Table)}})
	}
	return doors, nil
}

// routineKind names a pg_proc.prokind.
func routineKind(kind string) string {
	switch kind {
	case "p":
		return "procedure"
	case "a":
		return "aggregate"
	case "w":
		return "window function"
	}
	return "function"
}

// guardRoutineNames are (SQL expressions of) the names of the functions the guard
// and the tombstone guard install in a table's schema, by signature: none (the guard's
// trigger function, the floor's sync function, the views' refusal, the tombstone
// function), (bigint, bigint) (the two fence functions), and the recorder's.
type guardRoutineNames struct {
	noArgs   []string
	fences   []string
	recorder string
}

func guardNames(guard, sync, refuse, tomb, fence, fenced, recorder string) guardRoutineNames {
	return guardRoutineNames{noArgs: []string{guard, sync, refuse, tomb}, fences: []string{fence, fenced}, recorder: recorder}
}

// recorderArgs is the SQL expression of the absence recorder's signature
// (pg_proc.proargtypes) for the table whose oid the SQL expression tbl yields: its
// primary key's types, then bigint and boolean; NULL without a primary key.
func recorderArgs(tbl string) string {
	return `(SELECT pg_catalog.string_agg(a.atttypid::pg_catalog.text, ' ' ORDER BY k.ord) OPERATOR(pg_catalog.||) ' 20 16'
      FROM pg_catalog.pg_index i CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid AND a.attnum OPERATOR(pg_catalog.=) k.attnum
      WHERE i.indrelid OPERATOR(pg_catalog.=) ` + tbl + ` AND i.indisprimary AND k.ord OPERATOR(pg_catalog.<=) i.indnkeyatts)::pg_catalog.oidvector`
}

// namesakeCondition is the condition, on the pg_proc row alias p, that p carries one
// of the guard's function names (of the table whose oid the SQL expression tbl
// yields) but is not the guard's function: of another signature, or not a plain
// function (prokind 'f'). A routine of the recorder's name is not the recorder when
// the table has no primary key.
func namesakeCondition(p, tbl string, n guardRoutineNames) string {
	arr := func(names ...string) string { return "ARRAY[" + strings.Join(names, ", ") + "]::pg_catalog.name[]" }
	all := append(append(append([]string{}, n.noArgs...), n.fences...), n.recorder)
	return `(` + p + `.proname OPERATOR(pg_catalog.=) ANY (` + arr(all...) + `)
    AND NOT (` + p + `.prokind OPERATOR(pg_catalog.=) 'f' AND COALESCE(
      ` + p + `.proname OPERATOR(pg_catalog.=) ANY (` + arr(n.noArgs...) + `) AND ` + p + `.pronargs OPERATOR(pg_catalog.=) 0
      OR ` + p + `.proname OPERATOR(pg_catalog.=) ANY (` + arr(n.fences...) + `) AND ` + p + `.proargtypes OPERATOR(pg_catalog.=) '20 20'::pg_catalog.oidvector
      OR ` + p + `.proname OPERATOR(pg_catalog.=) ` + n.recorder + ` AND ` + p + `.proargtypes OPERATOR(pg_catalog.=) ` + recorderArgs(tbl) + `, false)))`
}

// dropNamesakes is the statement that drops every routine in schema that carries the
// name of one of the guard's functions for table but is not that function
// (guardNamesakes), by DROP ROUTINE, whatever its kind.
func (d dialectImpl) dropNamesakes(schema string, table dialect.TableName) string {
	t := fold(table)
	cond := namesakeCondition("p", "pg_catalog.to_regclass("+pgLiteral(regclass(table))+")",
		guardNames(pgLiteral(guardFunc(t.Name)), pgLiteral(floorSyncTrigger), pgLiteral(refuseFunction), pgLiteral(tombFuncName(t).Name),
			pgLiteral(fenceFunc(t.Name)), pgLiteral(fencedFunc(t.Name)), pgLiteral(absenceFuncName(t).Name)))
	return dropRoutines(`n.nspname OPERATOR(pg_catalog.=) ` + pgLiteral(schema) + `
        AND ` + cond)
}

// dropRoutines is the statement that drops every routine (function, procedure,
// aggregate, window function) whose pg_proc row p, joined to its namespace n,
// satisfies cond: by DROP ROUTINE, which takes every kind (DROP FUNCTION refuses a
// procedure or an aggregate with 42809: red-team rt58a F1). One function for the
// namesakes' Fix and the recorder's drop (dropAbsence).
func dropRoutines(cond string) string {
	body := `
DECLARE
  f pg_catalog.regprocedure;
BEGIN
  FOR f IN SELECT p.oid::pg_catalog.regprocedure FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
      WHERE ` + cond + `
  LOOP
    EXECUTE 'DROP ROUTINE ' OPERATOR(pg_catalog.||) f::text;
  END LOOP;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}
