package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The objects the dialect derives from a guarded table's name (boundedName) — the
// guard's trigger function and fence functions, the tombstone function, absence
// recorder and tombstone table — are created with CREATE OR REPLACE / IF NOT EXISTS:
// an object of that name already in place is taken over. Two tables must never share
// one (red-team rt56a F5: two long names with the same 32-bit hash shared every one,
// and the second table's install replaced the first's guard function with one
// checking the second's token column, so a stale plain write to the first landed).
// The hash is 64 bits now; and every install marks what it creates with the table it
// is for (a COMMENT naming the table as the server keeps its name, ownedMark), and
// refuses first (ownedCheck, SQLSTATE 42710 duplicate_object: the whole Fix fails,
// nothing is replaced) when an object of a derived name exists and is marked for
// another table, or — for a hashed name, which no release before this one created —
// carries no mark at all: a hash collision, or a table whose name spells another
// table's hashed object name, fails closed instead of sharing a guard. An unhashed
// name is its table's name and prefix, never another table's, so an unmarked object
// of such a name (installed by a release before the marks) is taken over as before.

// ownedMarker begins the mark of a derived object.
const ownedMarker = "fencedsql: derived from the guarded table "

// derivedObject is one object named for a guarded table.
type derivedObject struct {
	prefix   string // boundedName's prefix
	relation bool   // a table (the tombstone table); else every function of the name
}

// ownedMarkText is the mark of the objects derived from table name (folded).
func ownedMarkText(name string) string {
	return ownedMarker + dialect.KeptName(dialect.PostgresSyntax, name)
}

// ownedObjects returns the namespace expression for schema ("" for the session's
// current schema, where an unqualified CREATE puts an object) and the SQL arrays of
// the function names, relation names and hashed names of objs for table name (folded).
func ownedObjects(schema, name string, objs []derivedObject) (ns, funcs, rels, hashed string) {
	var f, r, h []string
	for _, o := range objs {
		n := pgLiteral(boundedName(o.prefix, name, maxIdentLen))
		if o.relation {
			r = append(r, n)
		} else {
			f = append(f, n)
		}
		if hashedName(o.prefix, name) {
			h = append(h, n)
		}
	}
	arr := func(xs []string) string { return "ARRAY[" + strings.Join(xs, ", ") + "]::pg_catalog.name[]" }
	nsExpr := "pg_catalog.current_schema()"
	if schema != "" {
		nsExpr = pgLiteral(schema)
	}
	ns = "(SELECT ns.oid FROM pg_catalog.pg_namespace ns WHERE ns.nspname OPERATOR(pg_catalog.=) " + nsExpr + ")"
	return ns, arr(f), arr(r), arr(h)
}

// ownedCheck is the statement an install runs before creating objs for table name
// (folded) in schema: it refuses (duplicate_object) when one of them exists marked for
// another table, or hashed and unmarked.
func ownedCheck(schema, name string, objs []derivedObject) string {
	ns, funcs, rels, hashed := ownedObjects(schema, name, objs)
	mark := pgLiteral(ownedMarkText(name))
	body := `
DECLARE
  other text;
BEGIN
  SELECT pg_catalog.format('%s (%s)', x.n, COALESCE(x.d, 'not marked as any table''s')) INTO other FROM (
    SELECT p.proname AS n, pg_catalog.obj_description(p.oid, 'pg_proc') AS d FROM pg_catalog.pg_proc p
      WHERE p.pronamespace OPERATOR(pg_catalog.=) ` + ns + ` AND p.proname OPERATOR(pg_catalog.=) ANY (` + funcs + `)
    UNION ALL
    SELECT c.relname, pg_catalog.obj_description(c.oid, 'pg_class') FROM pg_catalog.pg_class c
      WHERE c.relnamespace OPERATOR(pg_catalog.=) ` + ns + ` AND c.relname OPERATOR(pg_catalog.=) ANY (` + rels + `)
  ) x
  WHERE x.d IS DISTINCT FROM ` + mark + `
    AND (x.n OPERATOR(pg_catalog.=) ANY (` + hashed + `) OR pg_catalog.starts_with(x.d, ` + pgLiteral(ownedMarker) + `))
  LIMIT 1;
  IF other IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'duplicate_object',
      MESSAGE = pg_catalog.format('fencedsql: the guard object %s, whose name fencedsql derives from the table %s, already exists for another table: two tables would share it; rename one of the tables (nothing was installed)', other, ` + pgLiteral(dialect.KeptName(dialect.PostgresSyntax, name)) + `);
  END IF;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}

// ownedMark is the statement an install runs after creating objs for table name
// (folded) in schema: it marks each as the table's (COMMENT ON).
func ownedMark(schema, name string, objs []derivedObject) string {
	ns, funcs, rels, _ := ownedObjects(schema, name, objs)
	body := `
DECLARE
  r record;
BEGIN
  FOR r IN SELECT 'FUNCTION ' OPERATOR(pg_catalog.||) p.oid::pg_catalog.regprocedure::text AS o FROM pg_catalog.pg_proc p
      WHERE p.pronamespace OPERATOR(pg_catalog.=) ` + ns + ` AND p.proname OPERATOR(pg_catalog.=) ANY (` + funcs + `)
    UNION ALL
    SELECT 'TABLE ' OPERATOR(pg_catalog.||) c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class c
      WHERE c.relnamespace OPERATOR(pg_catalog.=) ` + ns + ` AND c.relname OPERATOR(pg_catalog.=) ANY (` + rels + `)
  LOOP
    EXECUTE 'COMMENT ON ' OPERATOR(pg_catalog.||) r.o OPERATOR(pg_catalog.||) ' IS ' OPERATOR(pg_catalog.||) ` + pgLiteral(pgLiteral(ownedMarkText(name))) + `;
  END LOOP;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}

// guardObjectsOwned are the objects GuardDDL derives from the table's name, in the
// table's schema (or the current one).
var guardObjectsOwned = []derivedObject{{prefix: "fencedsql_guard_"}, {prefix: fencePrefix}, {prefix: fencedPrefix}}

// tombObjectsOwned are the objects TombstoneDDL derives from the table's name, in
// tombSchema.
var tombObjectsOwned = []derivedObject{{prefix: "fencedsql_tombstone_"}, {prefix: "fencedsql_tombclaim_"}, {prefix: dialect.TombstoneTablePrefix, relation: true}}
