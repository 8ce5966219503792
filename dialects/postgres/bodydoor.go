package postgres

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/dialect/sidechannel"
)

// The door checks' one judgement of a routine body (red-team rt44d F2, F3): whether
// the body of a function, procedure, trigger function or event trigger function may
// write the guarded table — the table under its own name or under the name of one of
// its partitions or inheritance children (its family: a write naming a partition
// writes the table's rows as surely as one naming the table, and the wrapper treats
// the partition's name as the table's, so a door naming it is a door), by a statement
// that names it (dialect.WritesTable) or by dynamic SQL (dynamicSQLWrites: a body
// with EXECUTE that names it anywhere, or holds an escape literal the test does not
// decode) — and, for a body in a language the lexer does not read, any mention of a
// name (dialect.Mentions). routines, otherTriggers' triggers and event triggers, and
// ownTriggers' patchDoor all judge with bodyWrites over the names familyNames lists;
// their catalog queries pre-filter with familyNamedSQL and dynamicSQLSQL.

// familySQL is the recursive CTE fam(oid), to follow WITH RECURSIVE: the relation the
// parameter $param names (to_regclass) and its pg_inherits descendants, at any depth.
func familySQL(param int) string {
	return `fam(oid) AS (
  SELECT pg_catalog.to_regclass($` + strconv.Itoa(param) + `)::pg_catalog.oid
  UNION
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN fam ON i.inhparent = fam.oid)`
}

// familyNamesSQL is the names of fam's relations, separated by spaces (” for none).
const familyNamesSQL = `COALESCE((SELECT pg_catalog.string_agg(fc.relname::text, ' ') FROM fam JOIN pg_catalog.pg_class fc ON fc.oid = fam.oid), '')`

// familyNamedSQL is the catalog pre-filter of text (an SQL expression, already
// lower-cased): it holds the name of one of fam's relations.
func familyNamedSQL(lower string) string {
	return `EXISTS (SELECT 1 FROM fam JOIN pg_catalog.pg_class fc ON fc.oid = fam.oid WHERE pg_catalog.strpos(` + lower + `, pg_catalog.lower(fc.relname::text)) > 0)`
}

// dynamicSQLSQL is the catalog pre-filter of a body for dynamicSQLWrites' escape
// rule and its surgery rule: text (an SQL expression) runs SQL text — holds
// "execute", in any case, or the name of a function that sends SQL text
// (sidechannel.SQLTextSenders) — and a backslash (an E'…' string's escape), or it holds
// the name of one of pg_surgery's functions. A U& escape is pre-filtered by the
// callers ('u&').
func dynamicSQLSQL(text string) string {
	lower := `pg_catalog.lower(` + text + `)`
	return `((pg_catalog.strpos(` + lower + `, 'execute') > 0 OR ` + strposAny(lower, sidechannel.SQLTextSenders()) + `) AND pg_catalog.strpos(` + text + `, pg_catalog.chr(92)) > 0 OR ` +
		strposAny(lower, sidechannel.RowSurgeryFuncs()) + `)`
}

// familyNames returns the names bodyWrites looks for: the table's own (as configured)
// and listed, familyNamesSQL's answer (the table as the catalog spells it, its
// partitions and children), without repeats.
func familyNames(t dialect.SideDoorTable, listed string) []string {
	names := []string{t.Table.Name}
	for _, n := range strings.Fields(listed) {
		dup := false
		for _, m := range names {
			dup = dup || strings.EqualFold(m, n)
		}
		if !dup {
			names = append(names, n)
		}
	}
	return names
}

// bodyWrites reports whether the routine body src, in language lang (pg_language's
// name), may write one of names, and which: an SQL or PL/pgSQL body by
// dialect.WritesTable under each standard_conforming_strings reading
// (writesUnderEveryReading, red-team rt47a F1), dynamicSQLWrites or
// escapeDynamicSQL, a body in another language (PL/Python,
// PL/Perl, …, which the lexer does not read) when it mentions the name at all.
func bodyWrites(src, lang string, names []string) (string, bool) {
	for _, n := range names {
		switch lang {
		case "sql", "plpgsql":
			if writesUnderEveryReading(src, n, false) || dynamicSQLWrites(src, n) || escapeDynamicSQL(src) {
				return n, true
			}
		default:
			if dialect.Mentions(src, n) {
				return n, true
			}
		}
	}
	return "", false
}

// writtenName names what a door writes, for its problem: the table, or the partition
// or child name (bodyWrites' answer) and the table it belongs to.
func writtenName(t dialect.SideDoorTable, name string) string {
	if strings.EqualFold(name, t.Table.Name) {
		return t.Table.String()
	}
	return name + " (a partition or inheritance child of " + t.Table.String() + ")"
}

// disabledNote is the problem's note on a door that is switched off now (state "D",
// red-team rt44d F1): it counts all the same, one statement (enable) by the
// relation's owner turns it on; "" for one that is on.
func disabledNote(state, enable string) string {
	if state != "D" {
		return ""
	}
	return " (disabled now, which does not close the door: " + enable + " by its owner switches it on, and the pool refuses that statement but a plain connection does not)"
}
