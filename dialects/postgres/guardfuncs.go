package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardFunctions finds the guard's functions of t that carry this version's marker
// but not the text this version installs (dialect.SideDoorOwnTrigger): the function
// each of the three guard triggers on t runs (fencedsql_guard, _delete, _truncate),
// and the one-statement DELETE's fence functions (fencedsql_fence_<table>, as the
// DELETE resolves it, and the fencedsql_fenced_<table> it calls). GuardInstalledQuery
// judges them by name and marker only, and the guard-writer check leaves the guard's
// own functions alone, so `CREATE OR REPLACE FUNCTION fencedsql_guard_<table>()` by
// the functions' owner, keeping the marker, could accept a lowered token or a write
// below the floor, or lower the floor itself, with every check passing; a fence that
// always answers 1 would let a stale holder's one-statement DELETE through.
//
// PostgreSQL keeps a function's text as written (pg_proc.prosrc), so each is compared
// whole with what guardFunctionDDL writes for t's fencing columns and the floor's
// schema the text names (ownFunctionText). A function with an older marker, or none,
// is GuardInstalledQuery's "not installed", not judged here. Fix: the guard's DDL,
// which re-creates the functions and the triggers.
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
	fenceMatches := func(src string, which int, nsp string) (calls string, ok bool) {
		if schema, ok := ownFunctionText(src, bare[which]); ok {
			return unquoteIdent(schema), true
		}
		if _, ok := ownFunctionText(src, texts(dialect.TableName{Schema: nsp, Name: table.Name})[which]); ok {
			return nsp, true
		}
		return "", false
	}
	fence := fenceFuncName(table).Quote(d.QuoteIdent) + "(bigint, bigint)"
	rows, err := query(ctx, `SELECT 'trigger', t.tgname::text, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname) || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')', n.nspname::text, p.prosrc, l.lanname::text
FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname IN ($2, $3, $4)
UNION ALL
SELECT 'fence', '', pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname) || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')', n.nspname::text, p.prosrc, l.lanname::text
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.oid = pg_catalog.to_regprocedure($5)
UNION ALL
SELECT 'fenced', '', pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname) || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')', n.nspname::text, p.prosrc, l.lanname::text
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.proname = $6 AND p.proargtypes = '20 20'::pg_catalog.oidvector
ORDER BY 1, 2, 3`, t.Table.String(), guardTrigger, guardDeleteTrigger, guardTruncateTrigger, fence, fencedFunc(table.Name))
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	judged := map[string]int{} // function → its door's index
	door := func(fn, what string) {
		if i, ok := judged[fn]; ok {
			doors[i].Problem = strings.Replace(doors[i].Problem, ", carries", " and "+what+", carries", 1)
			return
		}
		judged[fn] = len(doors)
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "function " + fn,
			Problem: "the function " + fn + ", " + what + ", carries this version's marker but not the text this version installs for " + t.Table.String() + ": " +
				"a changed guard may let through what it should refuse (a token lowered, a write below the floor, a stale holder's DELETE) or change the guard tables; re-create it (fencedsql-schema -apply)",
			Fix: d.GuardDDL(t.Table, t.TokenColumn, t.VersionColumn)})
	}
	// The slow fence judged is the one the fast fence calls (its schema's name).
	calls := ""
	var fenced [][]string
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		switch r[0] {
		case "trigger":
			if !strings.Contains(r[4], guardVersion) {
				continue
			}
			if _, ok := ownFunctionText(r[4], guardText); !ok || r[5] != "plpgsql" {
				door(r[2], "which the guard trigger "+r[1]+" on "+t.Table.String()+" runs")
			}
		case "fence":
			if !strings.Contains(r[4], oneStepMarker) {
				continue
			}
			schema, ok := fenceMatches(r[4], 2, r[3])
			if !ok || r[5] != "sql" {
				door(r[2], "the one-statement DELETE's fence")
				continue
			}
			calls = schema
		case "fenced":
			fenced = append(fenced, r)
		}
	}
	for _, r := range fenced {
		if r[3] != calls || !strings.Contains(r[4], oneStepMarker) {
			continue
		}
		if _, ok := fenceMatches(r[4], 1, r[3]); !ok || r[5] != "plpgsql" {
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
	if !ok || schema == "" {
		return "", false
	}
	want := strings.ReplaceAll(template, floorPlaceholder, schema+"."+dialect.FloorTable)
	want = strings.ReplaceAll(want, floorSeqPlaceholder, quoteLiteral(schema+"."+floorSeq))
	want = strings.ReplaceAll(want, schemaPlaceholder, schema)
	return schema, src == want
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
