package postgres

import (
	"context"
	"strconv"
	"strings"

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
//
// A fencing column too narrow for its values (dialect.NarrowFencingColumn): a token
// column narrower than bigint, a version column narrower than integer. Fix: bigint.
//
// A DEFERRABLE primary key on a table with the tombstones: the tombstone's insert check
// needs the INSERT to wait for a concurrent DELETE of its key. Fix: the key replaced
// by one that is not deferrable.
//
// A fencing column that is nullable in a partition or inheritance child (at any
// depth): a statement on the table writes the child's rows too, and there the fencing
// NULL of a stale write is stored instead of failing it. Fix: the column made NOT NULL
// in the child (its rows holding NULL fixed first).
//
// An UNLOGGED table among the guarded table, its partitions and inheritance
// descendants, its tombstone table and the token floor table and its copy (in the
// schema the table's guard functions name them with, floorSchema, whatever the
// session's search_path): crash recovery empties it and no physical standby has its rows,
// so the tokens the fence compares with are forgotten at every crash restart and every
// failover, and a stale holder writes again (a red-team pass). Fix: ALTER TABLE … SET
// LOGGED (ALTER SEQUENCE for the copy).
func (d dialectImpl) LintSchema(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable) ([]dialect.SchemaProblem, error) {
	rows, err := query(ctx, `SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), CASE WHEN COALESCE(NULLIF(t.typbasetype, 0), t.oid) IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype, 'pg_catalog.int8'::pg_catalog.regtype) THEN 1 ELSE 0 END, (SELECT b.typlen FROM pg_catalog.pg_type b WHERE b.oid = COALESCE(NULLIF(t.typbasetype, 0), t.oid)) FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND a.attname IN ($2, $3) ORDER BY a.attnum`,
		t.Table.String(), t.TokenColumn, t.VersionColumn)
	if err != nil {
		return nil, err
	}
	var found []dialect.SchemaProblem
	tbl := fold(t.Table).Quote(d.QuoteIdent)
	for _, r := range rows {
		if len(r) != 4 {
			continue
		}
		col := d.QuoteIdent(r[0])
		fix := []string{"ALTER TABLE " + tbl + " ALTER COLUMN " + col + " TYPE bigint USING " + col + "::bigint"}
		if !dialect.CatalogBool(r[2]) {
			found = append(found, dialect.SchemaProblem{
				Problem: "column " + r[0] + " is " + r[1] + ", not an integer: a fencing column of a floating-point type rounds large tokens (a stale one can equal a newer one); make it bigint",
				Fix:     fix})
			continue
		}
		if p := dialect.NarrowFencingColumn(r[0], r[1], byteWidth(r[3]), t.TokenColumn); p != "" {
			found = append(found, dialect.SchemaProblem{Problem: p, Fix: fix})
		}
	}
	// The descendants' fencing columns: a statement on the table writes their rows too,
	// and PostgreSQL (before 18) lets an inheritance child drop the NOT NULL it inherited
	// (a partition may not). There the fencing NULL of a stale write is stored instead of
	// failing the statement (red-team rt24b F5). The types are the table's: an inherited
	// column keeps its parent's type.
	rows, err = query(ctx, nullableDescendantsQuery, t.Table.String(), t.TokenColumn, t.VersionColumn)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		child := dialect.TableName{Schema: r[0], Name: r[1]}
		found = append(found, dialect.SchemaProblem{
			Problem: "column " + r[2] + " of " + child.String() + ", a partition or inheritance child of " + t.Table.String() + ", is nullable: a fenced write of " + t.Table.String() + " that reaches its rows stores the fencing NULL there instead of failing (a stale write is accepted and the row's token lost); make it NOT NULL",
			// The catalog's exact names, quoted (NotNullDDL folds a configured name).
			Fix: []string{"ALTER TABLE " + child.Quote(d.QuoteIdent) + " ALTER COLUMN " + d.QuoteIdent(r[2]) + " SET NOT NULL"}})
	}
	// A DEFERRABLE primary key under the tombstones: an INSERT of a key whose DELETE is
	// in progress does not wait for it (the unique check is queued to the commit), so
	// the tombstone check ran before the DELETE's tombstone committed, and the stale
	// row came back when both committed (a red-team pass). The tombstone's insert check
	// relies on the wait.
	rows, err = query(ctx, `SELECT k.conname::text, (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY u.ord)
    FROM pg_catalog.unnest(k.conkey) WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum)
FROM pg_catalog.pg_constraint k WHERE k.conrelid = to_regclass($1) AND k.contype = 'p' AND k.condeferrable
  AND EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgrelid = k.conrelid AND g.tgname = $2)`, t.Table.String(), tombInsertTrigger)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		// PostgreSQL alters the deferrability of foreign keys only: the key is
		// replaced, in one statement (a foreign key that references it must be
		// dropped first, and is named in the error).
		name := d.QuoteIdent(r[0])
		found = append(found, dialect.SchemaProblem{
			Problem: "primary key " + r[0] + " is DEFERRABLE: an INSERT of a key whose DELETE is in progress does not wait for it, so the tombstone check cannot see the DELETE's tombstone and a stale holder's row comes back; make it NOT DEFERRABLE",
			Fix:     []string{"ALTER TABLE " + tbl + " DROP CONSTRAINT " + name + ", ADD CONSTRAINT " + name + " PRIMARY KEY (" + r[1] + ")"}})
	}
	// The floor and its copy where the table's guard functions name them (floorSchema),
	// not where this session's search_path finds them.
	where, err := d.floorSchema(ctx, query, t.Table)
	if err != nil {
		return nil, err
	}
	floorRel := dialect.TableName{Schema: where, Name: dialect.FloorTable}
	floorCopyRel := dialect.TableName{Schema: where, Name: floorSeq}
	rows, err = query(ctx, unloggedQuery, t.Table.String(), tombTable(t.Table).Quote(d.QuoteIdent), floorRel.Quote(d.QuoteIdent), floorCopyRel.Quote(d.QuoteIdent))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		rel := dialect.TableName{Schema: r[0], Name: r[1]}
		kind := "TABLE"
		if r[2] == "S" {
			kind = "SEQUENCE"
		}
		found = append(found, dialect.SchemaProblem{
			Problem: strings.ToLower(kind) + " " + rel.String() + " is UNLOGGED: crash recovery empties it and no physical standby has its rows, so the fencing tokens it holds are forgotten at every crash restart and failover and a stale holder writes again; make it logged",
			Fix:     []string{"ALTER " + kind + " " + rel.Quote(d.QuoteIdent) + " SET LOGGED"}})
	}
	return found, nil
}

// unloggedQuery lists (schema, name, relkind) of the UNLOGGED relations among $1 (the
// guarded table) and its pg_inherits descendants (partitions and inheritance children,
// at any depth), $2 (its tombstone table), $3 and $4 (the floor table and its copy),
// each resolved like the guards name it (the floor qualified by the caller: floorSchema).
const unloggedQuery = `WITH RECURSIVE tree(oid) AS (
    SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
  UNION
    SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent OPERATOR(pg_catalog.=) tree.oid
)
SELECT n.nspname::text, c.relname::text, c.relkind::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE c.relpersistence OPERATOR(pg_catalog.=) 'u' AND (c.oid IN (SELECT tree.oid FROM tree)
  OR c.oid IN (pg_catalog.to_regclass($2), pg_catalog.to_regclass($3), pg_catalog.to_regclass($4)))
ORDER BY 1, 2`

// nullableDescendantsQuery lists (schema, name, column) of the fencing columns $2 and
// $3 that are nullable in a pg_inherits descendant of $1 (partitions and inheritance
// children, at any depth), $1 resolved like the statements resolve it.
const nullableDescendantsQuery = `WITH RECURSIVE tree(oid) AS (
    SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)
  UNION
    SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent OPERATOR(pg_catalog.=) tree.oid
)
SELECT n.nspname::text, c.relname::text, a.attname::text FROM tree JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) tree.oid
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
  JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid
WHERE a.attname IN ($2, $3) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped AND NOT a.attnotnull
ORDER BY 1, 2, 3`

// byteWidth reads pg_type.typlen (bytes; "" or unreadable: 0).
func byteWidth(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

var _ dialect.SchemaLinter = dialectImpl{}
