package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// LintSchema finds what in a guarded table's declaration defeats the fence
// (dialect.SchemaLinter): the lazy check before the first guarded write on a
// connection refuses such a table with ErrSchema (nothing is written), and
// schema.Check reports it with its fix.
//
// A token or version column that is not an integer (smallint, integer, bigint): a
// real or double precision column rounds large tokens, so a stale token can compare
// equal to a newer one (real keeps 24 bits: 16777217 reads as 16777216); numeric
// compares exactly but the guard's functions take bigint. Text columns are refused
// by the database itself (no text <= bigint), but are reported here too. Fix: the
// column made bigint (ALTER COLUMN … TYPE bigint USING …::bigint).
func (d dialectImpl) LintSchema(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable) ([]dialect.SchemaProblem, error) {
	rows, err := query(ctx, `SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), CASE WHEN COALESCE(NULLIF(t.typbasetype, 0), t.oid) IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype, 'pg_catalog.int8'::pg_catalog.regtype) THEN 1 ELSE 0 END FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND a.attname IN ($2, $3) ORDER BY a.attnum`,
		t.Table.String(), t.TokenColumn, t.VersionColumn)
	if err != nil {
		return nil, err
	}
	var found []dialect.SchemaProblem
	tbl := fold(t.Table).Quote(d.QuoteIdent)
	for _, r := range rows {
		if len(r) != 3 || dialect.CatalogBool(r[2]) {
			continue
		}
		col := d.QuoteIdent(r[0])
		found = append(found, dialect.SchemaProblem{
			Problem: "column " + r[0] + " is " + r[1] + ", not an integer: a fencing column of a floating-point type rounds large tokens (a stale one can equal a newer one); make it bigint",
			Fix:     []string{"ALTER TABLE " + tbl + " ALTER COLUMN " + col + " TYPE bigint USING " + col + "::bigint"}})
	}
	return found, nil
}

var _ dialect.SchemaLinter = dialectImpl{}
