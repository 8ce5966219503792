package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// routineBody is a routine's text: prosrc, or the definition of an SQL-standard body
// (BEGIN ATOMIC … END, RETURN …), whose prosrc is empty.
const routineBody = `COALESCE(NULLIF(p.prosrc, ''), pg_catalog.pg_get_functiondef(p.oid))`

// routines finds the user functions and procedures whose body writes the table
// (dialect.SideDoorRoutine, red-team rt34c F1): dialect.WritesTable over the body of
// every function and procedure (prokind 'f' or 'p'; not an aggregate or window
// function, whose support functions are judged themselves) of a schema other than
// pg_catalog and information_schema, in any language but internal and C (whose prosrc
// is a symbol's name), that is no trigger or event trigger function (those run only as
// triggers: otherTriggers and ownTriggers judge them). A procedure counts although the
// wrapper refuses CALL unless WithDynamicSQL: a function, a trigger function or
// another procedure may CALL it, and a statement reaches that one with no CALL in its
// text (red-team rt36b F1). Bodies are judged by bodyWrites (bodydoor.go), the
// judgement every door check applies to a routine body, for the table's name and the
// names of its partitions and inheritance children (red-team rt44d F2): the SQL and
// PL/pgSQL bodies are read by the words test the trigger doors use, and by dynamicSQLWrites (a body with EXECUTE that names the table
// anywhere, or holds a literal whose escapes the test does not decode: red-team rt36b
// F2); a body in another language (PL/Python, PL/Perl, …), which the lexer does not
// read, counts when it names the table at all (dialect.Mentions). A statement reaches
// such a function without CALL and without naming the table — SELECT f(), f() in
// VALUES, FROM, WHERE or an UPDATE of another table, attribute notation (SELECT t.f
// FROM t), a cast to a domain whose CHECK calls it, a user operator, a view, a column
// DEFAULT or CHECK of another table — so the wrapper sends it as written, and its
// write is unfenced; the guard lets an UPDATE that advances the version and an INSERT
// through. A function whose body only reads the table and writes another (INSERT INTO
// t SELECT … FROM table) counts too: a word test, not a parse. So does a body that
// may create, rename, move or drop a relation of the table's name or a partition's or
// child's (bodyShadows: CREATE TEMP TABLE accounts, CREATE TABLE pg_temp.accounts, a
// TEMP VIEW, ALTER … RENAME TO accounts, an SQL body's SELECT … INTO TEMP accounts;
// red-team rt47c F1): called through the pool, it makes the name resolve to that
// relation for the session, which the pool's verdict for the table then covers.
// fencedsql's own
// functions write no guarded table (the fence functions raise, the guard and tombstone
// functions are trigger functions) and are judged like the rest, but for another
// table's absence recorder exactly as installed, which writes that table's tombstone
// table only and is judged by that (stockRecorderBody, red-team rt56a F1: its words
// named a guarded table called t or set). Not seen: a function
// that builds the table's name at run time from pieces none of which is the name
// ('acc' || 'ounts', chr()), in a body without an escape literal. The door carries no
// Fix: the routine is the user's (drop it, or do its work through the wrapper). One
// catalog query, its rows pre-filtered to bodies holding the table's name (or a
// partition's or child's), a U& escape, or EXECUTE and a backslash (an E'…' string's escape), the cheap conditions on
// pg_proc's own columns first (a few ms over a catalog of 3000 functions; the body of
// every pg_catalog function lower-cased took 40 ms).
func (d dialectImpl) routines(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE `+familySQL(1)+`
SELECT pn.nspname::text, p.proname::text, pg_catalog.pg_get_function_identity_arguments(p.oid), l.lanname::text,
  CASE WHEN COALESCE(p.prosrc, '') = '' THEN 1 ELSE 0 END, `+routineBody+`, p.prokind::text, `+familyNamesSQL+`
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.prokind IN ('f', 'p') AND p.prolang NOT IN (SELECT x.oid FROM pg_catalog.pg_language x WHERE x.lanname IN ('internal', 'c'))
  AND p.pronamespace NOT IN ('pg_catalog'::pg_catalog.regnamespace, 'information_schema'::pg_catalog.regnamespace)
  AND p.prorettype NOT IN ('pg_catalog.trigger'::pg_catalog.regtype, 'pg_catalog.event_trigger'::pg_catalog.regtype)
  AND (pg_catalog.strpos(pg_catalog.lower(`+routineBody+`), pg_catalog.lower($2)) > 0 OR pg_catalog.strpos(pg_catalog.lower(`+routineBody+`), 'u&') > 0
    OR `+dynamicSQLSQL(routineBody)+` OR `+familyNamedSQL(`pg_catalog.lower(`+routineBody+`)`)+`)
ORDER BY 1, 2, 3, 7`, regclass(t.Table), t.Table.Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 8 {
			continue
		}
		src := r[5]
		if r[4] == "1" {
			src = standardBody(src)
		}
		names := familyNames(t, r[7])
		_, writes := bodyWrites(src, r[3], names)
		stock := false
		if writes {
			// Another table's own absence recorder, as installed: it writes that table's
			// tombstone table and nothing else (stockbodies.go).
			wrote, ok, err := d.stockRecorderBody(ctx, query, dialect.CatalogName(r[0], r[1]), r[3], src)
			if err != nil {
				return nil, err
			}
			if ok {
				stock = true
				_, writes = stockWrites(wrote, names)
			}
		}
		shadowed, shadows := "", false
		if !writes && !stock {
			shadowed, shadows = bodyShadows(src, r[3], names)
		}
		if !writes && !shadows {
			continue
		}
		fn := dialect.CatalogName(r[0], r[1])
		kind, reached := "function", "SELECT "+fn.String()+"(…), or a view, a column default or check, a domain, an operator or attribute notation that calls it"
		if r[6] == "p" {
			kind, reached = "procedure", "a function, trigger or procedure that CALLs it (SELECT f(), a view, a default, a trigger of another table)"
		}
		what := "the " + kind + " " + fn.String() + "(" + r[2] + ")"
		problem := dialect.RoutineDoorProblem(what, t.Table.String(), reached, "an UPDATE that advances the version and an INSERT")
		if shadows {
			problem = shadowProblem(what, t, shadowed, reached)
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorRoutine, Object: kind + " " + fn.String() + "(" + r[2] + ")", Problem: problem})
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

// dynamicSQLWrites reports whether the SQL or PL/pgSQL body src may write the table
// name through dynamic SQL that dialect.WritesTable's per-statement test misses
// (red-team rt36b F2): the body runs SQL text — it holds the word EXECUTE, or calls a
// function that sends SQL text to a server (sidechannel.SQLTextSenders, dblink_exec and
// its kin, whose text runs in a session of their own: red-team rt65a F2; sideChannel)
// — and either names the table anywhere (dialect.Mentions: in any string, identifier
// or comment, in any statement: DECLARE q text := 'UPDATE name …'; BEGIN EXECUTE q),
// or holds a literal whose escapes this does not decode (namesOrEscapes). A body that
// calls one of pg_surgery's functions (sidechannel.RowSurgeryFuncs) counts whatever it
// names: they kill or freeze row versions past the triggers, and their regclass may
// be spelled by an OID (red-team rt65a F3). Fail closed: a body with EXECUTE that
// only reads the table, or whose escapes spell something else, counts too. Not seen:
// a name built at run time from pieces, a plain '…' string's backslash escapes under
// standard_conforming_strings = off, and a text given as a parameter. A body the lexer
// cannot read counts when it runs SQL text and names the table, or mentions a
// surgery function.
func dynamicSQLWrites(src, name string) bool {
	toks, err := dialect.LexDDL(src, dialect.PostgresSyntax)
	if err != nil {
		return mentionsSurgery(src) || (mentionsDynamicSQL(src) && dialect.Mentions(src, name))
	}
	sender, surgery := sideChannel(toks)
	if surgery {
		return true
	}
	execute := sender
	for _, t := range toks {
		if execute {
			break
		}
		execute = t.Is("EXECUTE")
	}
	return execute && namesOrEscapes(toks, src, name)
}

// namesOrEscapes is dynamicSQLWrites' judgement of a text that runs SQL text (the
// one rule for EXECUTE and for a side-channel call, in a body or in a stored
// expression): src names the table anywhere (dialect.Mentions), or one of its tokens
// toks is an E'…' string with a backslash, a U&'…' string or a U&"…" identifier
// (E'\x61ccounts', U&'\0061ccounts' may spell the name).
func namesOrEscapes(toks []dialect.DDLToken, src, name string) bool {
	if dialect.Mentions(src, name) {
		return true
	}
	for _, t := range toks {
		if t.Kind != dialect.DDLString && t.Kind != dialect.DDLQuoted {
			continue
		}
		switch {
		case len(t.Text) > 1 && (t.Text[0] == 'e' || t.Text[0] == 'E') && strings.Contains(t.Text, `\`):
			return true
		case len(t.Text) > 2 && (t.Text[0] == 'u' || t.Text[0] == 'U') && t.Text[1] == '&':
			return true
		}
	}
	return false
}
