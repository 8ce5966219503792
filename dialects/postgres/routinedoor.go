package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// routineBody is a routine's text: prosrc, or the definition of an SQL-standard body
// (BEGIN ATOMIC … END, RETURN …), whose prosrc is empty.
const routineBody = `COALESCE(NULLIF(p.prosrc, ''), pg_catalog.pg_get_functiondef(p.oid))`

// routines finds the user functions whose body writes the table (dialect.SideDoorRoutine,
// red-team rt34c F1): dialect.WritesTable over the body of every function (prokind 'f':
// not a procedure, which only CALL runs, refused unless WithDynamicSQL; not an
// aggregate or window function, whose support functions are judged themselves) of a
// schema other than pg_catalog and information_schema, in any language but internal
// and C (whose prosrc is a symbol's name), that is no trigger or event trigger
// function (those run only as triggers: otherTriggers and ownTriggers judge them). The
// SQL and PL/pgSQL bodies are read by the words test the trigger doors use; a body in
// another language (PL/Python, PL/Perl, …), which the lexer does not read, counts when
// it names the table at all (dialect.Mentions). A statement reaches such a function
// without CALL and without naming the table — SELECT f(), f() in VALUES, FROM, WHERE or
// an UPDATE of another table, attribute notation (SELECT t.f FROM t), a cast to a domain
// whose CHECK calls it, a user operator, a view, a column DEFAULT or CHECK of another
// table — so the wrapper sends it as written, and its write is unfenced; the guard lets
// an UPDATE that advances the version and an INSERT through. A function whose body
// only reads the table and writes another (INSERT INTO t SELECT … FROM table) counts
// too: a word test, not a parse. fencedsql's own functions write no guarded table (the
// fence functions raise, the guard and tombstone functions are trigger functions) and
// are judged like the rest. Not seen: a function that builds the table's name at run
// time, or that calls another routine that writes it (that routine is a door itself
// when its body names the table). The door carries no Fix: the routine is the user's
// (drop it, or do its work through the wrapper). One catalog query, its rows
// pre-filtered to bodies holding the table's name (or a U& escape), the cheap
// conditions on pg_proc's own columns first (a few ms over a catalog of 3000
// functions; the body of every pg_catalog function lower-cased took 40 ms).
func (d dialectImpl) routines(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `SELECT pn.nspname::text, p.proname::text, pg_catalog.pg_get_function_identity_arguments(p.oid), l.lanname::text,
  CASE WHEN COALESCE(p.prosrc, '') = '' THEN 1 ELSE 0 END, `+routineBody+`
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.prokind = 'f' AND p.prolang NOT IN (SELECT x.oid FROM pg_catalog.pg_language x WHERE x.lanname IN ('internal', 'c'))
  AND p.pronamespace NOT IN ('pg_catalog'::pg_catalog.regnamespace, 'information_schema'::pg_catalog.regnamespace)
  AND p.prorettype NOT IN ('pg_catalog.trigger'::pg_catalog.regtype, 'pg_catalog.event_trigger'::pg_catalog.regtype)
  AND (pg_catalog.strpos(pg_catalog.lower(`+routineBody+`), pg_catalog.lower($1)) > 0 OR pg_catalog.strpos(pg_catalog.lower(`+routineBody+`), 'u&') > 0)
ORDER BY 1, 2, 3`, t.Table.Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		src := r[5]
		if r[4] == "1" {
			src = standardBody(src)
		}
		writes := false
		switch r[3] {
		case "sql", "plpgsql":
			writes = dialect.WritesTable(src, dialect.PostgresSyntax, t.Table.Name)
		default:
			writes = dialect.Mentions(src, t.Table.Name)
		}
		if !writes {
			continue
		}
		fn := dialect.TableName{Schema: r[0], Name: r[1]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorRoutine, Object: "function " + fn.String() + "(" + r[2] + ")",
			Problem: dialect.RoutineDoorProblem("the function "+fn.String()+"("+r[2]+")", t.Table.String(),
				"SELECT "+fn.String()+"(…), or a view, a column default or check, a domain, an operator or attribute notation that calls it",
				"an UPDATE that advances the version and an INSERT")})
	}
	return doors, nil
}

// standardBody is the body of pg_get_functiondef's text of a function with an
// SQL-standard body: the text from the first line that is not indented (BEGIN ATOMIC,
// RETURN; the header's option lines are), so that the header's words (CREATE OR
// REPLACE, an argument of the table's row type) are not read as the body's. A text
// without such a line is returned whole.
func standardBody(def string) string {
	for i := 0; i+1 < len(def); i++ {
		if def[i] == '\n' && def[i+1] != ' ' {
			return def[i+1:]
		}
	}
	return def
}
