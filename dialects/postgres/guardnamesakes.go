package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardNamesakes finds the functions in t's schema that carry the name of a function
// the guard installs there but not its signature (red-team rt57b F1, F2): the guard's
// trigger function fencedsql_guard_<t>(), the one-statement DELETE's fence functions
// fencedsql_fence_<t>(bigint, bigint) and fencedsql_fenced_<t>(bigint, bigint), and the
// per-schema trigger functions (the floor's sync function, the views' refusal), none of
// which takes arguments. Anyone with CREATE on the schema can add such a function.
// The guard calls its own functions so that none can take a call — triggers by oid, the
// fence's calls schema-qualified with every argument cast to bigint (fenceCall), the
// slow fence on its bigint parameters — but an overload whose extra parameters have
// defaults makes an exactly typed call ambiguous (42725), and a function of a
// guard's name that the guard does not use only hides in the catalog. So each is
// reported, with a Fix that drops every function of those names and schema whose
// signature is not the guard's. (The tombstone function's and the absence recorder's
// namesakes in their schema are guardObjects': it judges every function of those
// names.)
//
// schema.Check only (SideDoors): the lazy check does not refuse the table's writes for
// them — with the calls exact they cannot open the fence, and DeleteFenceQuery sends
// the two-statement DELETE while one is there — so that a role allowed to create
// functions in the schema cannot stop the guarded writes with one.
func (d dialectImpl) guardNamesakes(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	table := fold(t.Table)
	rows, err := query(ctx, `SELECT n.nspname::text, p.oid::pg_catalog.regprocedure::text
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE p.pronamespace = (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1))
  AND `+namesakeCondition("p", "$2", "$3", "$4", "$5", "$6")+`
ORDER BY 2`, regclass(t.Table), guardFunc(table.Name), floorSyncTrigger, refuseFunction, fenceFunc(table.Name), fencedFunc(table.Name))
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 2 {
			continue
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "function " + r[1],
			Problem: "the function " + r[1] + " carries the name of a function the guard of " + t.Table.String() + " installs but another signature: " +
				"a call of the guard's function may be taken for it or become ambiguous (anyone with CREATE on the schema can add one); drop it (fencedsql-schema -apply)",
			Fix: []string{d.dropNamesakes(r[0], table.Name)}})
	}
	return doors, nil
}

// namesakeCondition is the condition, on the pg_proc row alias p, that p carries one
// of the guard's function names but not its signature: guard, sync and refuse are (SQL
// expressions of) the names of the functions without arguments, fence and fenced the
// two fence functions' names, whose signature is (bigint, bigint).
func namesakeCondition(p, guard, sync, refuse, fence, fenced string) string {
	return `(` + p + `.proname OPERATOR(pg_catalog.=) ANY (ARRAY[` + guard + `, ` + sync + `, ` + refuse + `]::pg_catalog.name[]) AND ` + p + `.pronargs OPERATOR(pg_catalog.<>) 0
    OR ` + p + `.proname OPERATOR(pg_catalog.=) ANY (ARRAY[` + fence + `, ` + fenced + `]::pg_catalog.name[]) AND ` + p + `.proargtypes OPERATOR(pg_catalog.<>) '20 20'::pg_catalog.oidvector)`
}

// dropNamesakes is the statement that drops every function in schema that carries the
// name of one of the guard's functions for table name (folded) but not its signature
// (guardNamesakes).
func (d dialectImpl) dropNamesakes(schema, name string) string {
	body := `
DECLARE
  f pg_catalog.regprocedure;
BEGIN
  FOR f IN SELECT p.oid::pg_catalog.regprocedure FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
      WHERE n.nspname OPERATOR(pg_catalog.=) ` + pgLiteral(schema) + `
        AND ` + namesakeCondition("p", pgLiteral(guardFunc(name)), pgLiteral(floorSyncTrigger), pgLiteral(refuseFunction), pgLiteral(fenceFunc(name)), pgLiteral(fencedFunc(name))) + `
  LOOP
    EXECUTE 'DROP FUNCTION ' OPERATOR(pg_catalog.||) f::text;
  END LOOP;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}
