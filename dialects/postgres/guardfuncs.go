package postgres

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardFunctions finds the guard's functions of t that are not the text this version
// installs (dialect.SideDoorOwnTrigger): the function
// each of the three guard triggers on t runs (fencedsql_guard, _delete, _truncate),
// and the one-statement DELETE's fence functions (fencedsql_fence_<table> of the
// table's own schema, the only one DeleteFenceQuery lets the DELETE call, and the
// fencedsql_fenced_<table> it calls, which must be the one of its own schema, and is
// judged whatever its marker). GuardInstalledQuery
// judges them by name and marker only, and the guard-writer check leaves the guard's
// own functions alone, so `CREATE OR REPLACE FUNCTION fencedsql_guard_<table>()` by
// the functions' owner, keeping the marker, could accept a lowered token or a write
// below the floor, or lower the floor itself, with every check passing; a fence that
// always answers 1 would let a stale holder's one-statement DELETE through.
//
// PostgreSQL keeps a function's text as written (pg_proc.prosrc), so each is compared
// whole with what guardFunctionDDL writes for t's fencing columns and the floor's
// schema the text names (ownFunctionText). A guard trigger function with an older
// marker, or none, is GuardInstalledQuery's "not installed", not judged here (one with
// none is ownTriggers' door: it is not exempt there). The fast fence is judged whatever
// its marker while the trigger function is of this version (red-team rt46a F3: a fence
// whose marker was changed hid a guard function redirected alone to a shadow floor);
// one of an earlier release, beside an earlier release's guard, is that installation's
// "not installed". Only the table's own schema is searched: a fence of the same name
// that a pool's search_path reaches elsewhere is not the guard's (the DELETE never
// calls it). Fix: the guard's DDL, which re-creates the functions and the triggers.
func (d dialectImpl) guardFunctions(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" || t.VersionColumn == "" {
		return nil, nil
	}
	table := fold(t.Table)
	// The fences name the table in their messages, and the fast one the slow one, as
	// the installer named it: unqualified (the slow one by the installer's schema) or
	// qualified (schema.Check qualifies what it installs). Both spellings are the
	// guard's; the trigger function's text does not depend on it.
	texts := func(table dialect.TableName) []string {
		ddl := d.guardFunctionDDL(table, t.TokenColumn, t.VersionColumn)
		out := make([]string, len(ddl))
		for i, q := range ddl {
			out[i] = createBody(q)
		}
		return out
	}
	bare := texts(dialect.TableName{Name: table.Name})
	if len(bare) != 3 {
		return nil, nil
	}
	guardText := bare[0]
	// fenceMatches reports whether src is the fence text (1 the slow one, 2 the fast
	// one) for the table unqualified or qualified by the function's schema, and the
	// schema of the slow function the fast one calls.
	fenceMatches := func(src string, which int, nsp string) (calls, floor string, ok bool) {
		if schema, ok := ownFunctionText(src, bare[which]); ok {
			return unquoteIdent(schema), unquoteIdent(schema), true
		}
		if schema, ok := ownFunctionText(src, texts(dialect.TableName{Schema: nsp, Name: table.Name})[which]); ok {
			return nsp, unquoteIdent(schema), true
		}
		return "", "", false
	}
	rows, err := query(ctx, `WITH f(kind, tg, fn) AS (
  SELECT 'trigger', t.tgname::text, t.tgfoid FROM pg_catalog.pg_trigger t
  WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname IN ($2, $3, $4)
  UNION ALL
  SELECT 'fence', '', p.oid FROM pg_catalog.pg_proc p
  WHERE p.proname = $5 AND p.proargtypes = '20 20'::pg_catalog.oidvector
    AND p.pronamespace = (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1))
  UNION ALL
  SELECT 'fenced', '', p.oid FROM pg_catalog.pg_proc p WHERE p.proname = $6 AND p.proargtypes = '20 20'::pg_catalog.oidvector)
SELECT f.kind, f.tg, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname) || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')',
  n.nspname::text, p.prosrc, l.lanname::text
FROM f JOIN pg_catalog.pg_proc p ON p.oid = f.fn
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
ORDER BY 1, 2, 3`, regclass(t.Table), guardTrigger, guardDeleteTrigger, guardTruncateTrigger, fenceFunc(table.Name), fencedFunc(table.Name))
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	judged := map[string]int{} // function → its door's index
	door := func(fn, what string) {
		if i, ok := judged[fn]; ok {
			doors[i].Problem = strings.Replace(doors[i].Problem, ", is not the text", " and "+what+", is not the text", 1)
			return
		}
		judged[fn] = len(doors)
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "function " + fn,
			Problem: "the function " + fn + ", " + what + ", is not the text this version installs for " + t.Table.String() + ": " +
				"a changed guard may let through what it should refuse (a token lowered, a write below the floor, a stale holder's DELETE) or change the guard tables; re-create it (fencedsql-schema -apply)",
			Fix: d.GuardDDL(t.Table, t.TokenColumn, t.VersionColumn)})
	}
	// The three guard triggers' function, then the fast fence, then the slow fence it
	// calls; every one names the same floor (one GuardDDL wrote them), so a fence
	// re-created to read another schema's floor (or to call another schema's slow
	// fence) is a changed guard too.
	byKind := map[string][][]string{}
	for _, r := range rows {
		if len(r) >= 6 {
			byKind[r[0]] = append(byKind[r[0]], r)
		}
	}
	floor, current := "", false
	for _, r := range byKind["trigger"] {
		if !strings.Contains(r[4], guardVersion) {
			continue
		}
		current = true
		schema, ok := ownFunctionText(r[4], guardText)
		if !ok || r[5] != "plpgsql" || floor != "" && unquoteIdent(schema) != floor {
			door(r[2], "which the guard trigger "+r[1]+" on "+t.Table.String()+" runs")
			continue
		}
		floor = unquoteIdent(schema)
	}
	calls := ""
	for _, r := range byKind["fence"] {
		if !current && !strings.Contains(r[4], oneStepMarker) {
			continue
		}
		// The fast fence calls the slow one of its own schema (both are created where
		// the fast one is: the installer's schema, or the table's).
		schema, reads, ok := fenceMatches(r[4], 2, r[3])
		if !ok || r[5] != "sql" || schema != r[3] || floor != "" && reads != floor {
			door(r[2], "the one-statement DELETE's fence")
			continue
		}
		calls = schema
	}
	for _, r := range byKind["fenced"] {
		// The slow fence the fast one calls is judged whatever its marker: an unmarked
		// one answering 1 would pass every DELETE.
		if r[3] != calls {
			continue
		}
		if _, reads, ok := fenceMatches(r[4], 1, r[3]); !ok || r[5] != "plpgsql" || floor != "" && reads != floor {
			door(r[2], "the one-statement DELETE's fence")
		}
	}
	return doors, nil
}

// createBody returns the body of one of guardFunctionDDL's CREATE FUNCTION statements:
// the text between its dollar-quote tags (dollarTag: "$fencedsql$" or
// "$fencedsql_<n>$", which the body does not contain), as pg_proc.prosrc keeps it
// once withFloorTable replaced the placeholders.
func createBody(create string) string {
	i := strings.Index(create, " AS $fencedsql")
	if i < 0 {
		return ""
	}
	rest := create[i+len(" AS "):]
	end := strings.IndexByte(rest[1:], '$')
	if end < 0 {
		return ""
	}
	tag := rest[:end+2]
	if !strings.HasSuffix(rest, tag) || len(rest) < 2*len(tag) {
		return ""
	}
	return rest[len(tag) : len(rest)-len(tag)]
}

// ownFunctionText reports whether src is the text template becomes when
// withFloorTable replaces its placeholders for some schema (as quote_ident spells
// it), and which: src must equal the template with every placeholder replaced, in
// withFloorTable's order, for the schema its first placeholder's value names.
func ownFunctionText(src, template string) (schema string, ok bool) {
	if template == "" {
		return "", false
	}
	first, at := "", -1
	for _, p := range []string{floorPlaceholder, floorSeqPlaceholder, schemaPlaceholder} {
		if i := strings.Index(template, p); i >= 0 && (at < 0 || i < at) {
			first, at = p, i
		}
	}
	if at < 0 {
		return "", src == template
	}
	if !strings.HasPrefix(src, template[:at]) {
		return "", false
	}
	after := template[at+len(first):]
	next := len(after)
	for _, p := range []string{floorPlaceholder, floorSeqPlaceholder, schemaPlaceholder} {
		if i := strings.Index(after, p); i >= 0 && i < next {
			next = i
		}
	}
	value := src[at:]
	if chunk := after[:next]; chunk != "" {
		j := strings.Index(value, chunk)
		if j < 0 {
			return "", false
		}
		value = value[:j]
	}
	switch first {
	case floorPlaceholder:
		schema, ok = strings.CutSuffix(value, "."+dialect.FloorTable)
	case floorSeqPlaceholder:
		var name string
		if name, ok = unquoteLiteral(value); ok {
			schema, ok = strings.CutSuffix(name, "."+floorSeq)
		}
	default:
		schema, ok = value, true
	}
	if !ok || !quotedIdent(schema) {
		return "", false
	}
	want := strings.ReplaceAll(template, floorPlaceholder, schema+"."+dialect.FloorTable)
	want = strings.ReplaceAll(want, floorSeqPlaceholder, quoteLiteral(schema+"."+floorSeq))
	want = strings.ReplaceAll(want, schemaPlaceholder, schema)
	return schema, src == want
}

// quotedIdent reports whether q is one identifier as quote_ident spells it: a plain
// lower-case name, or a double-quoted one whose quotes are doubled. The schema read
// from a function's text must be one, or text put where the schema goes (an
// expression, a subquery) would be accepted wherever the template repeats it.
func quotedIdent(q string) bool {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' {
		inner := q[1 : len(q)-1]
		return inner != "" && !strings.Contains(strings.ReplaceAll(inner, `""`, ""), `"`)
	}
	if q == "" || !(q[0] == '_' || q[0] >= 'a' && q[0] <= 'z') {
		return false
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// unquoteIdent returns the name quote_ident spelled as q.
func unquoteIdent(q string) string {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' {
		return strings.ReplaceAll(q[1:len(q)-1], `""`, `"`)
	}
	return q
}

// quoteLiteral is PostgreSQL's quote_literal: quotes doubled, and backslashes doubled
// under an E prefix when there is one.
func quoteLiteral(s string) string {
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// unquoteLiteral reverses quoteLiteral; ok is false for a text quoteLiteral does not
// write.
func unquoteLiteral(q string) (string, bool) {
	inner := strings.TrimPrefix(q, "E")
	if len(inner) < 2 || inner[0] != '\'' || inner[len(inner)-1] != '\'' {
		return "", false
	}
	s := strings.ReplaceAll(inner[1:len(inner)-1], "''", "'")
	if inner != q {
		s = strings.ReplaceAll(s, `\\`, `\`)
	}
	return s, quoteLiteral(s) == q
}

// The fencing columns' stand-ins in ownGuardTextSQL's template.
const (
	tokStandIn = "@fencedsql_token_column@"
	verStandIn = "@fencedsql_version_column@"
)

// ownGuardTextSQL returns an SQL condition on the text expression src (a function's
// pg_proc.prosrc) that holds exactly when src is the guard's trigger function as this
// version or the previous one writes it (guardTriggerDDL: a database upgraded to this
// version keeps its guards of the previous one until each is re-installed, and they
// must not stop every guarded table's writes meanwhile, red-team rt58b) for some
// fencing columns and some floor schema:
// the columns (quoted identifiers) and the schema (as quote_ident spells it) are read
// from where the text first names them, each matched as one identifier, and the whole
// text must equal the template with them put in — so no other text, however it spells
// its marker, passes. Its parameters are numbered from first. The guard-writer check
// leaves such a function alone on any relation (every guard reads the floor's copy);
// the check of its own table (guardFunctions) compares it with that table's columns.
func (d dialectImpl) ownGuardTextSQL(src string, first int) (string, []any) {
	var conds []string
	var args []any
	for _, v := range []int{guardVersionNumber, guardVersionNumber - 1} {
		cond, a := d.guardTextSQL(createBody(d.guardTriggerDDL(v, dialect.TableName{Name: "t"}, tokStandIn, verStandIn)), src, first+len(args))
		conds, args = append(conds, cond), append(args, a...)
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}

// guardTextSQL is ownGuardTextSQL's condition for one version's text tmpl.
func (d dialectImpl) guardTextSQL(tmpl, src string, first int) (string, []any) {
	qt, qv := d.QuoteIdent(tokStandIn), d.QuoteIdent(verStandIn)
	lt, lv := pgLiteral(tokStandIn), pgLiteral(verStandIn)
	const ident = `("(?:[^"]|"")+")`
	const schemaIdent = `((?:[a-z_][a-z0-9_$]*|"(?:[^"]|"")+"))`
	// around returns a pattern matching the text around the first occurrence of s in
	// tmpl, with group in its place (and what follows s, from skip on).
	around := func(s, group, skip string) string {
		i := strings.Index(tmpl, s)
		if i < 0 {
			return "^$.^" // matches nothing: the condition is false
		}
		// The context holds no other stand-in or placeholder (which the text spells
		// otherwise).
		before, after := tmpl[:i], tmpl[i+len(s):]
		for _, o := range []string{qt, qv, lt, lv, floorPlaceholder, floorSeqPlaceholder, schemaPlaceholder} {
			if j := strings.LastIndex(before, o); j >= 0 {
				before = before[j+len(o):]
			}
			if j := strings.Index(after, o); j >= 0 {
				after = after[:j]
			}
		}
		before = before[max(0, len(before)-32):]
		after = after[:min(len(after), 24)]
		return regexp.QuoteMeta(before) + group + regexp.QuoteMeta(skip+after)
	}
	args := []any{
		tmpl, qt, lt, qv, lv, floorPlaceholder, floorSeqPlaceholder, schemaPlaceholder,
		"." + dialect.FloorTable, "." + floorSeq,
		around(qt, ident, ""), around(qv, ident, ""), around(floorPlaceholder, schemaIdent, "."+dialect.FloorTable),
	}
	p := func(k int) string { return "$" + strconv.Itoa(first+k) }
	lit := func(q string) string {
		return `'''' || pg_catalog.replace(pg_catalog.replace(pg_catalog.substr(` + q + `, 2, pg_catalog.length(` + q + `) - 2), '""', '"'), '''', '''''') || ''''`
	}
	cond := `(SELECT COALESCE(` + src + ` = pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(` +
		p(0) + `::text, ` + p(1) + `::text, x.tq), ` + p(2) + `::text, ` + lit("x.tq") + `), ` + p(3) + `::text, x.vq), ` + p(4) + `::text, ` + lit("x.vq") + `), ` +
		p(5) + `::text, x.s || ` + p(8) + `::text), ` + p(6) + `::text, pg_catalog.quote_literal(x.s || ` + p(9) + `::text)), ` + p(7) + `::text, x.s), false)
  FROM (SELECT pg_catalog.substring(` + src + `, ` + p(10) + `::text) AS tq, pg_catalog.substring(` + src + `, ` + p(11) + `::text) AS vq, pg_catalog.substring(` + src + `, ` + p(12) + `::text) AS s) x)`
	return cond, args
}
