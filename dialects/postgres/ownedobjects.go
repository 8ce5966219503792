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
// nothing is replaced) when an object of a derived name demonstrably belongs to
// another table: no trigger on the table or its inheritance descendants runs the
// group's trigger function (the guard's, the tombstone guard's), and a trigger on
// another relation runs the object or its mark names another table. A table whose
// name spells another table's hashed object name fails closed instead of sharing a
// guard.
//
// The mark is a hint only (red-team rt57b F3): a COMMENT is lost by a dump restored
// with pg_dump --no-comments and overwritten by any COMMENT its owner writes, so
// ownership is decided first by the catalog: the objects of a group whose trigger
// function a trigger on the table (or a descendant) runs are the table's, whatever
// their comments say, and the install re-marks them (a Fix that must restore a lost
// guard trigger converges). An object with neither a foreign mark nor a foreign
// trigger — unmarked, or a comment of other text — is taken over, hashed name or
// not (nothing uses it but this table's name). Only the functions of the guard's own
// signatures are judged and marked (an overload of another signature is no guard
// object: guardNamesakes reports it, dropNamesakes drops it), and every function of
// the recorder's name (absenceDDL drops them all).

// ownedMarker begins the mark of a derived object.
const ownedMarker = "fencedsql: derived from the guarded table "

// derivedObject is one object named for a guarded table.
type derivedObject struct {
	prefix   string // boundedName's prefix
	relation bool   // a table (the tombstone table); else a function
	// args is the function's own signature as pg_proc.proargtypes spells it ("" for
	// none); anyArgs: every function of the name.
	args    string
	anyArgs bool
	// trigger: the group's trigger function, whose triggers show whose the group is.
	trigger bool
}

// ownedMarkText is the mark of the objects derived from table name (folded).
func ownedMarkText(name string) string {
	return ownedMarker + dialect.KeptName(dialect.PostgresSyntax, name)
}

// ownedObjects returns the namespace expression for schema ("" for the session's
// current schema, where an unqualified CREATE puts an object), the conditions on the
// pg_proc row alias p that it is one of objs' functions and that it is one of their
// trigger functions, and the SQL array of the relation names of objs for table name
// (folded).
func ownedObjects(schema, name string, objs []derivedObject) (ns, funcs, triggers, rels string) {
	var f, t, r []string
	for _, o := range objs {
		n := pgLiteral(boundedName(o.prefix, name, maxIdentLen))
		if o.relation {
			r = append(r, n)
			continue
		}
		c := "p.proname OPERATOR(pg_catalog.=) " + n
		if !o.anyArgs {
			c += " AND p.proargtypes OPERATOR(pg_catalog.=) " + pgLiteral(o.args) + "::pg_catalog.oidvector"
		}
		f = append(f, "("+c+")")
		if o.trigger {
			t = append(t, "("+c+")")
		}
	}
	or := func(xs []string) string {
		if len(xs) == 0 {
			return "false"
		}
		return "(" + strings.Join(xs, " OR ") + ")"
	}
	nsExpr := "pg_catalog.current_schema()"
	if schema != "" {
		nsExpr = pgLiteral(schema)
	}
	ns = "(SELECT ns.oid FROM pg_catalog.pg_namespace ns WHERE ns.nspname OPERATOR(pg_catalog.=) " + nsExpr + ")"
	return ns, or(f), or(t), "ARRAY[" + strings.Join(r, ", ") + "]::pg_catalog.name[]"
}

// ownedCheck is the statement an install runs before creating objs for table name
// (folded) in schema: it refuses (duplicate_object) when one of them demonstrably
// belongs to another table (see above), naming the object and what shows it.
func ownedCheck(schema, name string, objs []derivedObject) string {
	ns, funcs, triggers, rels := ownedObjects(schema, name, objs)
	mark := pgLiteral(ownedMarkText(name))
	body := `
DECLARE
  other text;
  ours boolean;
  tree pg_catalog.oid[];
BEGIN
  -- The table and its inheritance descendants (partitions run clones of its triggers).
  SELECT COALESCE(pg_catalog.array_agg(r.oid), '{}') INTO tree FROM (WITH RECURSIVE r(oid) AS (
      SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) ` + ns + ` AND c.relname OPERATOR(pg_catalog.=) ` + pgLiteral(name) + `
      UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN r ON i.inhparent OPERATOR(pg_catalog.=) r.oid)
    SELECT r.oid FROM r) r;
  ours := EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid
    WHERE p.pronamespace OPERATOR(pg_catalog.=) ` + ns + ` AND ` + triggers + ` AND t.tgrelid OPERATOR(pg_catalog.=) ANY (tree));
  SELECT pg_catalog.format('%s (%s)', x.n, CASE WHEN x.u IS NOT NULL THEN 'run by a trigger on ' OPERATOR(pg_catalog.||) x.u
      ELSE 'its comment reads ' OPERATOR(pg_catalog.||) pg_catalog.quote_literal(x.d) OPERATOR(pg_catalog.||) ', and no trigger on ' OPERATOR(pg_catalog.||) ` + pgLiteral(dialect.KeptName(dialect.PostgresSyntax, name)) + ` OPERATOR(pg_catalog.||) ' runs its guard: if it is this table''s, COMMENT ON it IS NULL and apply again' END) INTO other FROM (
    SELECT p.proname AS n, pg_catalog.obj_description(p.oid, 'pg_proc') AS d,
        (SELECT t.tgrelid::pg_catalog.regclass::text FROM pg_catalog.pg_trigger t WHERE t.tgfoid OPERATOR(pg_catalog.=) p.oid
          AND t.tgrelid OPERATOR(pg_catalog.<>) ALL (tree) LIMIT 1) AS u
      FROM pg_catalog.pg_proc p
      WHERE p.pronamespace OPERATOR(pg_catalog.=) ` + ns + ` AND ` + funcs + `
    UNION ALL
    SELECT c.relname, pg_catalog.obj_description(c.oid, 'pg_class'), NULL FROM pg_catalog.pg_class c
      WHERE c.relnamespace OPERATOR(pg_catalog.=) ` + ns + ` AND c.relname OPERATOR(pg_catalog.=) ANY (` + rels + `)
  ) x
  WHERE x.d IS DISTINCT FROM ` + mark + `
    AND NOT ours AND (x.u IS NOT NULL OR pg_catalog.starts_with(x.d, ` + pgLiteral(ownedMarker) + `))
  LIMIT 1;
  IF other IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'duplicate_object',
      MESSAGE = pg_catalog.format('fencedsql: the guard object %s, whose name fencedsql derives from the table %s, belongs to another table: two tables would share it; rename one of the tables (nothing was installed)', other, ` + pgLiteral(dialect.KeptName(dialect.PostgresSyntax, name)) + `);
  END IF;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}

// ownedMark is the statement an install runs after creating objs for table name
// (folded) in schema: it marks each as the table's (COMMENT ON).
func ownedMark(schema, name string, objs []derivedObject) string {
	ns, funcs, _, rels := ownedObjects(schema, name, objs)
	body := `
DECLARE
  r record;
BEGIN
  FOR r IN SELECT 'FUNCTION ' OPERATOR(pg_catalog.||) p.oid::pg_catalog.regprocedure::text AS o FROM pg_catalog.pg_proc p
      WHERE p.pronamespace OPERATOR(pg_catalog.=) ` + ns + ` AND ` + funcs + `
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
var guardObjectsOwned = []derivedObject{{prefix: "fencedsql_guard_", trigger: true}, {prefix: fencePrefix, args: "20 20"}, {prefix: fencedPrefix, args: "20 20"}}

// tombObjectsOwned are the objects TombstoneDDL derives from the table's name, in
// tombSchema.
var tombObjectsOwned = []derivedObject{{prefix: "fencedsql_tombstone_", trigger: true}, {prefix: "fencedsql_tombclaim_", anyArgs: true}, {prefix: dialect.TombstoneTablePrefix, relation: true}}
