package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/dialect/sidechannel"
)

// sideChannelDoors finds the stored expressions that call a side-channel function
// (sidechannel.go; red-team rt65a F2, F3) and so reach the table past the wrapper, as
// doors (dialect.SideDoorRoutine): a view's or rule's query (pg_rewrite), a column
// DEFAULT or generated expression (pg_attrdef), a CHECK constraint of a table or a
// domain (pg_constraint), a domain's DEFAULT (pg_type), a row security policy
// (pg_policy), a trigger's WHEN clause (pg_trigger), and a routine's argument
// defaults or SQL-standard body (pg_proc) — every object the catalog records as
// depending on one. A statement through the pool reaches such an expression without
// naming the table (SELECT * FROM v, an INSERT into another table whose default or
// check runs it), so the wrapper sends it as written, and the text the call sends
// runs in a session of its own, unfenced (dblink_exec('…', 'UPDATE accounts …')), or
// the call kills a guarded row past its triggers (heap_force_kill): the lazy check
// refuses the table while one exists. Judged by EXECUTE's rule (namesOrEscapes: the
// expression names the table, a partition or child anywhere, or holds an escape
// literal); a surgery call counts whatever it names.
//
// The functions are found by the catalog, not by their spelling: by name
// (sidechannel.SQLTextSenders, sidechannel.RowSurgeryFuncs, in any schema), and every C
// function loaded from dblink's or pg_surgery's library (an alias under another
// name); then, through pg_depend, what calls one of those by OID — a quoted,
// schema-qualified or search_path-resolved call alike — and, as further aliases, the
// routines (an SQL-standard body, an aggregate over one) and operators built on
// them. Not seen: a PL/pgSQL or other-language body calling an alias (bodies are read
// by their words: sideChannel), and a text given at run time (a column's value, a
// parameter). One catalog query; none of its work when neither extension is
// installed.
func (d dialectImpl) sideChannelDoors(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE `+familySQL(1)+`,
sc(classid, oid, surgery) AS (
  SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid, p.oid,
    CASE WHEN pg_catalog.lower(p.proname::text) = ANY (pg_catalog.string_to_array($3, ' ')) OR (l.lanname = 'c' AND p.probin LIKE '%pg\_surgery%') THEN 1 ELSE 0 END
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
  WHERE pg_catalog.lower(p.proname::text) = ANY (pg_catalog.string_to_array($2 || ' ' || $3, ' '))
    OR (l.lanname = 'c' AND (p.probin LIKE '%dblink%' OR p.probin LIKE '%pg\_surgery%'))
  UNION
  SELECT dep.classid, dep.objid, sc.surgery FROM sc JOIN pg_catalog.pg_depend dep ON dep.refclassid = sc.classid AND dep.refobjid = sc.oid
  WHERE dep.deptype = 'n' AND dep.classid IN ('pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_operator'::pg_catalog.regclass)),
used(classid, objid, surgery) AS (
  SELECT dep.classid, dep.objid, pg_catalog.max(sc.surgery) FROM sc JOIN pg_catalog.pg_depend dep ON dep.refclassid = sc.classid AND dep.refobjid = sc.oid
  WHERE dep.deptype = 'n' AND dep.classid IN ('pg_catalog.pg_rewrite'::pg_catalog.regclass, 'pg_catalog.pg_attrdef'::pg_catalog.regclass,
    'pg_catalog.pg_constraint'::pg_catalog.regclass, 'pg_catalog.pg_type'::pg_catalog.regclass, 'pg_catalog.pg_policy'::pg_catalog.regclass,
    'pg_catalog.pg_trigger'::pg_catalog.regclass, 'pg_catalog.pg_proc'::pg_catalog.regclass)
  GROUP BY 1, 2)
SELECT pg_catalog.pg_describe_object(u.classid, u.objid, 0), u.surgery::text,
  COALESCE(CASE u.classid
    WHEN 'pg_catalog.pg_rewrite'::pg_catalog.regclass THEN pg_catalog.pg_get_ruledef(u.objid)
    WHEN 'pg_catalog.pg_attrdef'::pg_catalog.regclass THEN (SELECT pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) FROM pg_catalog.pg_attrdef ad WHERE ad.oid = u.objid)
    WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN pg_catalog.pg_get_constraintdef(u.objid)
    WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT ty.typdefault FROM pg_catalog.pg_type ty WHERE ty.oid = u.objid)
    WHEN 'pg_catalog.pg_policy'::pg_catalog.regclass THEN (SELECT pg_catalog.concat_ws(' ', pg_catalog.pg_get_expr(po.polqual, po.polrelid), pg_catalog.pg_get_expr(po.polwithcheck, po.polrelid)) FROM pg_catalog.pg_policy po WHERE po.oid = u.objid)
    WHEN 'pg_catalog.pg_trigger'::pg_catalog.regclass THEN pg_catalog.pg_get_triggerdef(u.objid)
    WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT CASE WHEN p.prokind IN ('f', 'p') THEN pg_catalog.pg_get_functiondef(p.oid) END FROM pg_catalog.pg_proc p WHERE p.oid = u.objid)
  END, ''), `+familyNamesSQL+`
FROM used u
ORDER BY 1`, regclass(t.Table), strings.Join(sidechannel.SQLTextSenders(), " "), strings.Join(sidechannel.RowSurgeryFuncs(), " "))
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 4 {
			continue
		}
		name, ok := t.Table.Name, r[1] == "1"
		if !ok {
			name, ok = sideChannelNames(r[2], familyNames(t, r[3]))
		}
		if !ok {
			continue
		}
		what := r[0] + ", which calls a function that sends SQL text to a server on a connection of its own (dblink) or kills row versions past their triggers (pg_surgery),"
		problem := dialect.RoutineDoorProblem(what, writtenName(t, name), "a SELECT of the view, a write to the table whose default, check, policy or trigger runs it, a call of the routine",
			"what the call's own session or the surgery does")
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorRoutine, Object: r[0], Problem: problem})
	}
	return doors, nil
}

// sideChannelNames judges the text src of a stored expression that calls a function
// sending SQL text by EXECUTE's rule (namesOrEscapes) for each of names: the first it
// reaches. A text the lexer cannot read counts when it mentions one.
func sideChannelNames(src string, names []string) (string, bool) {
	toks, err := dialect.LexDDL(src, dialect.PostgresSyntax)
	for _, n := range names {
		if (err != nil && dialect.Mentions(src, n)) || (err == nil && namesOrEscapes(toks, src, n)) {
			return n, true
		}
	}
	return "", false
}
