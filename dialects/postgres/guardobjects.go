package postgres

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardObjects finds the guard's objects of t, other than the guard functions
// (guardFunctions), that are not what this version installs (dialect.SideDoorOwnTrigger;
// red-team rt45b F1–F4): GuardInstalledQuery, TombstoneInstalledQuery and
// AbsenceRecorderQuery judge them by name, kind and version marker, so the owner of
// the guard objects could re-create one — on a plain connection — keeping all of that
// but checking nothing: the tombstone guard's rekey trigger WHEN (… AND false) (F1),
// the guard's DELETE trigger with its WHEN clause and " AND false" (F2), a tombstone
// function (F3) or an absence recorder (F4) whose body does nothing. Each is compared
// whole with what the installer writes:
//
//   - the six guard and tombstone triggers on t, where present (their absence is the
//     installed queries' and lostGuard's): pg_get_triggerdef's text must be the
//     installer's statement — the name, timing, events, level (FOR EACH ROW or
//     STATEMENT), no column list, no arguments, not a constraint trigger — with the
//     function's name printed as the session finds it (the function itself: it must
//     be a fencedsql_guard_ or fencedsql_tombstone_ function, the table's own text
//     judged here and in guardFunctions), ENABLE ALWAYS, and the WHEN clause
//     PostgreSQL's deparse of the installer's: the DELETE trigger's reading the
//     one-statement DELETE's mark for t or an inheritance ancestor and t's token column,
//     every operator and function in it pg_catalog's; the rekey trigger's
//     "old.<c> IS DISTINCT FROM new.<c>" for each primary key column, joined by OR,
//     with the key's own equality operators and nothing but binary-coercible casts
//     (RelabelType: varchar's to text);
//   - the table's tombstone function fencedsql_tombstone_<t>() in t's schema (the
//     function without arguments, the only one a trigger can run; a routine of
//     another signature or kind is a namesake, guardNamesakes'), whatever its marker (a no-op carrying an older version's marker would pass
//     TombstoneInstalledQuery's "not installed" by the lazy check, which does not
//     require the tombstone guard): its text is TombstoneDDL's for t's primary key and
//     token column, of this version or the previous one (tombBody), PL/pgSQL, a
//     volatile trigger function without arguments, SECURITY DEFINER, with exactly the
//     pinned search_path as its settings;
//   - the function named like t's absence recorder in t's schema with the recorder's
//     signature (the primary key's types, bigint, boolean: the only one AbsenceCall's
//     exactly typed call resolves to while it exists; a routine of another signature
//     or kind is a namesake, which guardNamesakes reports and the lazy check does not
//     refuse writes for, red-team rt58a F2), whatever its marker: its text is absenceDDL's for t, of this version or the previous one
//     (recorderText: built from the catalog's key, as ownAbsence), its arguments exactly the key's types then bigint and boolean,
//     returning one integer, PL/pgSQL, volatile, SECURITY DEFINER, with exactly the
//     pinned search_path (without it the body's operators would resolve through the
//     caller's search_path).
//
// So a tombstone guard two versions old, or older, is a door until the Fix replaces
// it (a pool refuses the table's writes), as a changed one is. Who owns the objects
// is not compared. A trigger calling another fencedsql_ function (the old name's,
// after a rename; an ancestor's) is judged by its text, and the function it calls by
// the check of its own table. Fix: the guard's DDL (triggers of the guard) or the
// tombstone guard's (triggers of the tombstone guard, its function, the recorder),
// which re-create them.
func (d dialectImpl) guardObjects(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	table, key, err := dialect.PrimaryKeyColumns(ctx, query, d, t.Table)
	if err != nil {
		return nil, err
	}
	table = fold(table)
	tombFn, absFn := tombFuncName(table), absenceFuncName(table)
	rows, err := query(ctx, `WITH RECURSIVE r(oid) AS (SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
  UNION SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN r ON i.inhrelid = r.oid),
pk(opno) AS (SELECT ao.amopopr FROM pg_catalog.pg_index i
    CROSS JOIN LATERAL pg_catalog.unnest(i.indclass::pg_catalog.oid[]) c(opc)
    JOIN pg_catalog.pg_opclass oc ON oc.oid = c.opc
    JOIN pg_catalog.pg_amop ao ON ao.amopfamily = oc.opcfamily AND ao.amoplefttype = oc.opcintype AND ao.amoprighttype = oc.opcintype AND ao.amopstrategy = 3 AND ao.amopmethod = oc.opcmethod
    WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indisprimary)
SELECT 'trigger', t.tgname::text, pg_catalog.pg_get_triggerdef(t.oid), p.proname::text, t.tgenabled::text,
  pg_catalog.quote_ident(rn.nspname) || '.' || pg_catalog.quote_ident(rc.relname),
  (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(r.oid::pg_catalog.regclass::text), E'\n') FROM r WHERE r.oid IS NOT NULL),
  COALESCE(t.tgqual::text, ''),
  CASE WHEN NOT EXISTS (SELECT 1 FROM pg_catalog.regexp_matches(COALESCE(t.tgqual::text, ''), ':(?:opno|funcid) ([0-9]+)', 'g') m
      WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_operator o WHERE o.oid = m[1]::pg_catalog.oid AND o.oprnamespace = 'pg_catalog'::pg_catalog.regnamespace)
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc f WHERE f.oid = m[1]::pg_catalog.oid AND f.pronamespace = 'pg_catalog'::pg_catalog.regnamespace)) THEN '1' ELSE '0' END,
  CASE WHEN NOT EXISTS (SELECT 1 FROM pg_catalog.regexp_matches(COALESCE(t.tgqual::text, ''), ':opno ([0-9]+)', 'g') m
      WHERE m[1]::pg_catalog.oid NOT IN (SELECT opno FROM pk)) THEN '1' ELSE '0' END,
  (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), E'\n' ORDER BY k.ord) FROM pg_catalog.pg_index i
    CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = t.tgrelid AND i.indisprimary AND k.ord <= i.indnkeyatts),
  (SELECT pg_catalog.quote_ident(a.attname) FROM pg_catalog.pg_attribute a WHERE a.attrelid = t.tgrelid AND a.attname = $6 AND NOT a.attisdropped)
FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
  JOIN pg_catalog.pg_class rc ON rc.oid = t.tgrelid JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname IN ($7, $8, $9, $10, $11, $12)
UNION ALL
SELECT 'function', p.proname::text, p.prosrc, l.lanname::text, p.provolatile::text,
  CASE WHEN p.prosecdef AND p.proconfig = ARRAY[$5::text] AND p.prokind = 'f' AND NOT p.proretset AND p.proargmodes IS NULL AND p.provariadic = 0 THEN '1' ELSE '0' END,
  p.prorettype::pg_catalog.regtype::text, pg_catalog.array_to_string(p.proargtypes::pg_catalog.oid[], ','),
  (SELECT pg_catalog.string_agg(a.atttypid::text, ',' ORDER BY k.ord) FROM pg_catalog.pg_index i
    CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indisprimary AND k.ord <= i.indnkeyatts),
  pg_catalog.oidvectortypes(p.proargtypes), '', ''
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE n.nspname = $2 AND p.prokind = 'f' AND (p.proname = $3 AND p.pronargs = 0
  OR p.proname = $4 AND p.proargtypes OPERATOR(pg_catalog.=) `+recorderArgs("pg_catalog.to_regclass($1)")+`)
ORDER BY 1, 2, 3`,
		regclass(t.Table), table.Schema, tombFn.Name, absFn.Name, pinnedSearchPath, t.TokenColumn,
		guardTrigger, guardDeleteTrigger, guardTruncateTrigger, tombDeleteTrigger, tombInsertTrigger, tombRekeyTrigger)
	if err != nil {
		return nil, err
	}
	var guardBad, tombBad []string
	for _, r := range rows {
		if len(r) < 12 {
			continue
		}
		switch r[0] {
		case "trigger":
			if what := d.triggerProblem(r); what != "" {
				if strings.HasPrefix(r[1], "fencedsql_guard") {
					guardBad = append(guardBad, what)
				} else {
					tombBad = append(tombBad, what)
				}
			}
		case "function":
			if what := d.tombFunctionProblem(r, table, key, t.TokenColumn); what != "" {
				tombBad = append(tombBad, what)
			}
		}
	}
	var doors []dialect.SideDoor
	if len(guardBad) > 0 && t.TokenColumn != "" && t.VersionColumn != "" {
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "guard triggers on " + t.Table.String(),
			Problem: strings.Join(guardBad, "; ") + ": a changed guard object may let through what it should refuse (a stale holder's DELETE, a token lowered); re-create the guard (fencedsql-schema -apply)",
			Fix:     d.GuardDDL(t.Table, t.TokenColumn, t.VersionColumn)})
	}
	if len(tombBad) > 0 {
		door := dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "tombstone guard of " + t.Table.String(),
			Problem: strings.Join(tombBad, "; ") + ": a changed tombstone guard object may let a stale holder re-create a row deleted, or claimed absent, under a newer token; re-create the tombstone guard (fencedsql-schema -apply)"}
		if len(key) > 0 && t.TokenColumn != "" && dialect.TombstoneKeyNames(d, key) == nil {
			door.Fix = d.TombstoneDDL(table, key, t.TokenColumn)
		}
		doors = append(doors, door)
	}
	return doors, nil
}

// guardTriggerHeads are the installer's trigger statements up to the WHEN clause
// (pg_get_triggerdef's spelling; the relation is the placeholder's).
var guardTriggerHeads = map[string]string{
	guardTrigger:         "BEFORE INSERT OR UPDATE ON \x00 FOR EACH ROW ",
	guardDeleteTrigger:   "AFTER DELETE ON \x00 FOR EACH ROW ",
	guardTruncateTrigger: "BEFORE TRUNCATE ON \x00 FOR EACH STATEMENT ",
	tombDeleteTrigger:    "AFTER DELETE ON \x00 FOR EACH ROW ",
	tombInsertTrigger:    "AFTER INSERT ON \x00 FOR EACH ROW ",
	tombRekeyTrigger:     "AFTER UPDATE ON \x00 FOR EACH ROW ",
}

// functionRef matches the function call pg_get_triggerdef prints after EXECUTE
// FUNCTION: an optionally qualified name and no arguments.
var functionRef = regexp.MustCompile(`^(?:(?:[a-z_][a-z0-9_$]*|"(?:[^"]|"")+")\.)?([a-z_][a-z0-9_$]*|"(?:[^"]|"")+")\(\)$`)

// nodeKinds matches the node names of a pg_node_tree text.
var nodeKinds = regexp.MustCompile(`\{([A-Z_]+)`)

// triggerProblem judges one 'trigger' row of guardObjects' query: (kind, name,
// triggerdef, function name, tgenabled, qualified relation, the regclass literals of
// the table and its ancestors, tgqual, all operators and functions of the WHEN
// pg_catalog's, all its operators the primary key's equality, the key's quoted
// columns, the quoted token column). It returns what is wrong, "" when nothing is.
func (d dialectImpl) triggerProblem(r []string) string {
	name, def, fn, enabled, rel, regclasses, qual := r[1], r[2], r[3], r[4], r[5], strings.Split(r[6], "\n"), r[7]
	bad := "the trigger " + name + " is not the one this version installs"
	head, ok := guardTriggerHeads[name]
	if !ok {
		return ""
	}
	prefix := "CREATE TRIGGER " + name + " " + strings.Replace(head, "\x00", rel, 1)
	calls := "fencedsql_tombstone_"
	if strings.HasPrefix(name, "fencedsql_guard") {
		calls = "fencedsql_guard_"
	}
	if enabled != tgAlways || !strings.HasPrefix(fn, calls) || !strings.HasPrefix(def, prefix) {
		return bad
	}
	rest := def[len(prefix):]
	i := strings.LastIndex(rest, "EXECUTE FUNCTION ")
	if i < 0 {
		return bad
	}
	when, call := rest[:i], rest[i+len("EXECUTE FUNCTION "):]
	if m := functionRef.FindStringSubmatch(call); m == nil || unquoteIdent(m[1]) != fn {
		return bad
	}
	switch name {
	case guardDeleteTrigger:
		if r[8] != "1" || r[11] == "" {
			return bad + " (its WHEN clause)"
		}
		for _, rc := range regclasses {
			if when == guardDeleteWhenDeparsed(rc, r[11], false) || when == guardDeleteWhenDeparsed(rc, r[11], true) {
				return ""
			}
		}
		return bad + " (its WHEN clause)"
	case tombRekeyTrigger:
		if r[9] != "1" || r[10] == "" || !rekeyNodes(qual) || when != rekeyWhenDeparsed(strings.Split(r[10], "\n"), when) {
			return bad + " (its WHEN clause)"
		}
		return ""
	}
	if when != "" || qual != "" {
		return bad + " (it has a WHEN clause)"
	}
	return ""
}

// guardDeleteWhenDeparsed is guardDeleteWhen as pg_get_triggerdef prints it, for the
// regclass literal of the table it marks (as the session prints the regclass) and the
// token column (quoted as quote_ident does); with before, the clause as the release
// before red-team rt59b F1 wrote it (the statement setting compared bare), which the
// side-door checks still take for the guard's own until the Fix re-creates it.
func guardDeleteWhenDeparsed(regclass, tok string, before bool) string {
	stmt := "COALESCE(current_setting('" + deleteStmtSetting + "'::text, true), ''::text)"
	if before {
		stmt = "current_setting('" + deleteStmtSetting + "'::text, true)"
	}
	return "WHEN ((((" + stmt + " = concat((" + regclass + "::regclass)::oid, '/', statement_timestamp())) AND (old." + tok +
		" <= (current_setting('" + deleteTokenSetting + "'::text, true))::bigint)) IS NOT TRUE)) "
}

// rekeyNodes reports whether the rekey trigger's WHEN node tree holds only what
// triggerWhen's condition parses to: OR, IS DISTINCT FROM, column references and
// binary-coercible casts (no constant, no function, no AND).
func rekeyNodes(qual string) bool {
	for _, m := range nodeKinds.FindAllStringSubmatch(qual, -1) {
		switch m[1] {
		case "DISTINCTEXPR", "VAR", "RELABELTYPE":
		case "BOOLEXPR":
		default:
			return false
		}
	}
	return strings.Count(qual, "{BOOLEXPR") == strings.Count(qual, "{BOOLEXPR :boolop or")
}

// rekeyWhenDeparsed is the rekey trigger's WHEN clause as pg_get_triggerdef prints it
// for the key's columns (quoted as quote_ident does), with the binary-coercible casts
// PostgreSQL printed in got (a varchar column's "(old.c)::text") kept where they stand.
func rekeyWhenDeparsed(cols []string, got string) string {
	terms := make([]string, len(cols))
	for i, c := range cols {
		terms[i] = "(" + castOf(got, "old."+c, " IS DISTINCT FROM ") + " IS DISTINCT FROM " + castOf(got, "new."+c, ")") + ")"
	}
	if len(terms) == 1 {
		return "WHEN (" + terms[0] + ") "
	}
	return "WHEN ((" + strings.Join(terms, " OR ") + ")) "
}

// castOf returns ref as got prints it: "(ref)::<type>" when got holds ref cast that
// way (the type ending before end), else ref.
func castOf(got, ref, end string) string {
	i := strings.Index(got, "("+ref+")::")
	if i < 0 {
		return ref
	}
	rest := got[i+len("("+ref+")::"):]
	j := strings.Index(rest, end)
	if j < 0 || strings.ContainsAny(rest[:j], "()") {
		return ref
	}
	return "(" + ref + ")::" + rest[:j]
}

// tombFunctionDDL is TombstoneDDL's statement creating the tombstone function.
func (d dialectImpl) tombFunctionDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) string {
	for _, s := range d.TombstoneDDL(table, key, tokenCol) {
		if strings.HasPrefix(s, "CREATE OR REPLACE FUNCTION ") {
			return s
		}
	}
	return ""
}

// tombFunctionProblem judges one 'function' row of guardObjects' query: (kind, name,
// prosrc, language, volatility, SECURITY DEFINER with exactly the pinned search_path
// and a plain function's shape, return type, argument type oids, the key's type oids,
// argument types' text). It returns what is wrong, "" when nothing is.
func (d dialectImpl) tombFunctionProblem(r []string, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) string {
	name, src := r[1], r[2]
	shape := r[3] == "plpgsql" && r[4] == "v" && r[5] == "1"
	if name == tombFuncName(table).Name {
		own := false
		if len(key) > 0 && tokenCol != "" {
			own = src == createBody(d.tombFunctionDDL(table, key, tokenCol)) || src == d.tombBody(tombVersionNumber-1, table, key, tokenCol)
		}
		if !shape || r[6] != "trigger" || r[7] != "" || !own {
			return "the tombstone function " + tombFuncName(table).String() + "() is not the text this version (or the previous one) installs"
		}
		return ""
	}
	bad := "the absence recorder " + absenceFuncName(table).String() + "(" + r[9] + ") is not the function this version installs"
	if !shape || r[6] != "integer" || r[8] == "" || r[7] != r[8]+",20,16" || len(key) == 0 {
		return bad
	}
	if !d.recorderText(src, table, key, tokenCol) {
		return bad
	}
	return ""
}

// recorderText reports whether src is the recorder's body absenceDDL writes for table
// (schema resolved, folded), its primary key as the catalog lists it (names, order,
// equality operators: never read out of src) and token column, of this version or an
// earlier one ownAbsence still recognises (absenceBodyOf, down to v2).
func (d dialectImpl) recorderText(src string, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) bool {
	cols := make([]string, len(key))
	conds := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
		eq := " = "
		if k.Equals != "" {
			eq = " OPERATOR(" + k.Equals + ") "
		}
		conds[i] = "x." + cols[i] + eq + "$" + strconv.Itoa(i+1)
	}
	tomb, tbl, tok := tombTable(table).Quote(d.QuoteIdent), table.Quote(d.QuoteIdent), d.QuoteIdent(tokenCol)
	for v := absenceVersionNumber; v >= 2; v-- {
		if src == absenceBodyOf(v, tomb, tbl, tok, strings.Join(cols, ", "), strings.Join(conds, " AND "), len(key)) {
			return true
		}
	}
	return false
}
