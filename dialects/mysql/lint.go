package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// LintSchema finds what in a guarded table's declaration defeats the fence
// (dialect.SchemaLinter): the lazy check before the first guarded write on a
// connection refuses such a table with ErrSchema (nothing is written), and
// schema.Check reports it with its fix.
//
//   - A storage engine other than InnoDB. One without transactions (MyISAM, Aria,
//     MEMORY, CSV, …): a fenced statement over several rows that meets a newer token
//     fails after writing the rows before it, and they stay written (the
//     all-or-nothing of G2 is gone; an upsert's other rows, a fenced DELETE's two
//     statements). One with transactions that keeps its rows on another server
//     (FEDERATED/FederatedX, Spider; CONNECT has none): the guard's triggers run
//     only for writes through this table, and the remote table's own writers never
//     meet them, as with a PostgreSQL foreign table. The engines are judged by an
//     allow-list (InnoDB alone, the engine the guards were built and tested on), so
//     an engine this version does not know is refused, not assumed. Fix: ALTER
//     TABLE … ENGINE=InnoDB.
//   - The same of the table's tombstone table or of the token floor of its database
//     (fencedsql_tomb_<table>, fencedsql_floor; TombstoneDDL and FloorDDL create them
//     InnoDB, but CREATE TABLE IF NOT EXISTS keeps one that exists, or was converted
//     since): a MEMORY table is emptied at every server restart, and a replica
//     restarted or promoted starts it empty, so the tombstones (G9) or the floor are
//     forgotten; the other engines without transactions keep what a failed
//     statement wrote. Fix: ALTER TABLE … ENGINE=InnoDB on it.
//   - A token or version column that is not an integer: a FLOAT or DOUBLE column
//     rounds large tokens, so a stale token can compare equal to a newer one; a string
//     column compares as text ('10' < '9'), so the guard accepts a lowered token and
//     refuses a raised one; a DECIMAL compares exactly but the guard's arithmetic and
//     the wrapper's arguments are integers. Fix: the column made BIGINT NOT NULL
//     DEFAULT 0 (MODIFY COLUMN: its values converted, its other attributes replaced).
//   - A fencing column too narrow for its values (dialect.NarrowFencingColumn). Fix:
//     BIGINT, as above.
//   - A fencing column that a unique key depends on (lintKeyFencing;
//     dialect.KeyFencingColumn): a column of the primary key or of a unique index, a
//     generated column computed from it in one, an expression of a MySQL functional
//     key part naming either: every fenced write sets it and moves the row. No fix
//     statement.
//   - A primary key on a column prefix: the tombstones key on whole columns. No fix
//     statement (a TEXT or BLOB key needs its prefix): key the table on whole columns.
//   - A primary key ending in an application-time period WITHOUT OVERLAPS (MariaDB;
//     periodKeyQuery, red-team rt40a F1): the table calls two rows one key when their
//     periods overlap, the tombstones when the period's bounds are equal, so a row
//     deleted under a newer token came back under an older one with a shorter period.
//     Refused whether or not the table is tombstoned (the keyed claims compare the key
//     with = too). No fix statement: key the table without WITHOUT OVERLAPS.
func (d dialectImpl) LintSchema(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable) ([]dialect.SchemaProblem, error) {
	var found []dialect.SchemaProblem
	tbl := t.Table.Quote(d.QuoteIdent)
	// The engines of the guarded table, of its tombstone table and of the token floor
	// of its database (those that exist), by name.
	tomb, floor := tombTable(t.Table), floorTable(t.Table.Schema)
	rows, err := query(ctx, "SELECT t.TABLE_NAME, t.ENGINE, COALESCE(e.TRANSACTIONS, '') FROM information_schema.TABLES t LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE WHERE t.TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND t.TABLE_NAME IN (?, ?, ?) AND t.TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY t.TABLE_NAME",
		t.Table.Schema, t.Table.Name, tomb.Name, floor.Name)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if len(r) != 3 || strings.EqualFold(r[1], "InnoDB") {
			continue
		}
		why := engineProblem(r[1], r[2])
		switch r[0] {
		case t.Table.Name:
			found = append(found, dialect.SchemaProblem{
				Problem: "the table's engine " + r[1] + " " + why + ": a fenced statement that fails (ErrFenced) leaves the rows it wrote before the failing one, a fenced DELETE is not atomic, or the rows' own writers never meet the guard; convert the table to InnoDB",
				Fix:     []string{"ALTER TABLE " + tbl + " ENGINE=InnoDB"}})
		case tomb.Name:
			found = append(found, dialect.SchemaProblem{
				Problem: "the tombstone table " + tomb.String() + " has the engine " + r[1] + ", which " + why + ": a MEMORY table is emptied at every restart (and a replica restarted or promoted starts it empty), forgetting the tombstones so that a stale holder re-creates the rows deleted under a newer token; the others keep what a failed statement wrote, or keep the tombstones where other writers change them; convert it to InnoDB",
				Fix:     []string{"ALTER TABLE " + tomb.Quote(d.QuoteIdent) + " ENGINE=InnoDB"}})
		case floor.Name:
			found = append(found, dialect.SchemaProblem{
				Problem: "the token floor " + floor.String() + " has the engine " + r[1] + ", which " + why + ": a MEMORY table is emptied at every restart (and a replica restarted or promoted starts it empty), and an empty floor table is no floor, so tokens below the raised floor write again; the others keep what a failed statement wrote, or keep the floor where other writers change it; convert it to InnoDB",
				Fix:     []string{"ALTER TABLE " + floor.Quote(d.QuoteIdent) + " ENGINE=InnoDB"}})
		}
	}
	rows, err = query(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME IN (?, ?) ORDER BY ORDINAL_POSITION",
		t.Table.Schema, t.Table.Name, t.TokenColumn, t.VersionColumn)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		fix := []string{"ALTER TABLE " + tbl + " MODIFY COLUMN " + d.QuoteIdent(r[0]) + " BIGINT NOT NULL DEFAULT 0"}
		width := integerWidth(r[1])
		if width == 0 {
			found = append(found, dialect.SchemaProblem{
				Problem: "column " + r[0] + " is " + r[2] + ", not an integer: a fencing column compared as a float rounds large tokens (a stale one can equal a newer one) and as text orders '10' before '9'; make it BIGINT",
				Fix:     fix})
			continue
		}
		if p := dialect.NarrowFencingColumn(r[0], r[2], width, t.TokenColumn); p != "" {
			found = append(found, dialect.SchemaProblem{Problem: p, Fix: fix})
		}
	}
	// A primary key on a column prefix (name(4)): the tombstones key on the whole
	// column, so a row deleted under a newer token came back as another value with
	// the same prefix — one key for the table, another for the tombstone (a red-team
	// pass). No statement fixes it in general (a TEXT key needs its prefix).
	// And, in the same query, a MariaDB application-time period key (periodKeyQuery).
	// And the unique keys' columns and the generated columns (keyFencingQuery).
	// The query reads GENERATION_EXPRESSION and CHECK_CLAUSE, which MariaDB prints in
	// the reading session's sql_mode: noSessionMode (catalogsession.go, red-team
	// rt61b F1).
	rows, err = query(ctx, noSessionMode+"SELECT 'prefix', COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' AND SUB_PART IS NOT NULL "+
		"UNION ALL "+periodKeyQuery+
		" UNION ALL "+keyFencingQuery,
		t.Table.Schema, t.Table.Name, t.Table.Schema, t.Table.Name, t.Table.Name, t.Table.Name, t.Table.Name,
		t.TokenColumn, t.VersionColumn, t.Table.Schema, t.Table.Name, t.Table.Schema, t.Table.Name)
	if err != nil {
		return nil, err
	}
	var keyRows [][]string
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		switch r[0] {
		case "prefix":
			found = append(found, dialect.SchemaProblem{
				Problem: "the primary key uses a prefix of column " + r[1] + " (" + r[2] + " characters): the tombstones key on the whole column, so after a DELETE under a newer token a stale holder can insert a value with the same prefix — the same key for the table; key the table on whole columns"})
		case "key", "key token", "key version", "generated":
			keyRows = append(keyRows, r)
		case "period":
			found = append(found, dialect.SchemaProblem{
				Problem: "the primary key ends in the application-time period " + r[1] + " WITHOUT OVERLAPS: two rows whose periods overlap are one key for the table, but the tombstones (and the keyed claims) compare the period's columns with =, so after a DELETE under a newer token a stale holder re-inserts the deleted row with a period one day shorter, and a DELETE … FOR PORTION OF on a plain connection frees a portion no tombstone covers; key the table without WITHOUT OVERLAPS (the overlap rule can be kept by a trigger) or do not fence it"})
		}
	}
	keys, err := d.lintKeyFencing(ctx, query, t, keyRows)
	if err != nil {
		return nil, err
	}
	return append(found, keys...), nil
}

// periodKeyQuery finds a primary key that ends in an application-time period WITHOUT
// OVERLAPS (MariaDB 10.5+: PRIMARY KEY (id, p WITHOUT OVERLAPS); red-team rt40a F1):
// one row ('period', the period's name, "") per such key. MariaDB's catalog does not
// mark the period in a key (information_schema has no PERIODS table before 11.x): the
// key lists the period's end and start columns as its last two columns, in that
// order, and the period is a table CHECK constraint named after it whose clause is
// exactly `start` < `end`. A key whose last two columns are (end, start) beside such a
// CHECK written by hand is refused too (fail closed). Parameters: schema, table,
// table, table, table. MySQL has no periods (and no CHECK_CONSTRAINTS.TABLE_NAME: the
// constraint is joined through TABLE_CONSTRAINTS, which both have). MariaDB prints
// CHECK_CLAUSE in the reading session's sql_mode ("s" < "e" under ANSI_QUOTES): the
// statement that holds this query starts with noSessionMode (LintSchema).
var periodKeyQuery = "SELECT 'period', tc.CONSTRAINT_NAME, '' FROM information_schema.TABLE_CONSTRAINTS tc " +
	"JOIN information_schema.CHECK_CONSTRAINTS cc ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME AND " + sameName("cc.CONSTRAINT_SCHEMA", "tc.CONSTRAINT_SCHEMA") + " AND " + sameName("cc.CONSTRAINT_NAME", "tc.CONSTRAINT_NAME") + " " +
	"JOIN information_schema.KEY_COLUMN_USAGE ke ON ke.TABLE_SCHEMA = tc.TABLE_SCHEMA AND ke.TABLE_NAME = tc.TABLE_NAME AND ke.CONSTRAINT_NAME = 'PRIMARY' " +
	"JOIN information_schema.KEY_COLUMN_USAGE ks ON ks.TABLE_SCHEMA = tc.TABLE_SCHEMA AND ks.TABLE_NAME = tc.TABLE_NAME AND ks.CONSTRAINT_NAME = 'PRIMARY' AND ks.ORDINAL_POSITION = ke.ORDINAL_POSITION + 1 " +
	"WHERE tc.TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND tc.TABLE_NAME = ? AND tc.CONSTRAINT_TYPE = 'CHECK' " +
	"AND cc.CHECK_CLAUSE = CONCAT('`', REPLACE(ks.COLUMN_NAME, '`', '``'), '` < `', REPLACE(ke.COLUMN_NAME, '`', '``'), '`') " +
	"AND NOT EXISTS (SELECT 1 FROM information_schema.KEY_COLUMN_USAGE kx WHERE kx.TABLE_SCHEMA = tc.TABLE_SCHEMA AND kx.TABLE_NAME = ? AND " + periodSameTable + " AND kx.CONSTRAINT_NAME = 'PRIMARY' AND kx.ORDINAL_POSITION > ks.ORDINAL_POSITION) " +
	"AND ks.TABLE_NAME = ? AND ke.TABLE_NAME = ? AND " + periodSameKey

// periodSameKey and periodSameTable hold periodKeyQuery's views to the one table byte
// for byte (sameName, red-team rt56a F2: information_schema's = folds case and
// accents, and a twin table's key is not the table's); the constant names above let
// information_schema open only that table.
var (
	periodSameKey = sameName("ke.TABLE_SCHEMA", "tc.TABLE_SCHEMA") + " AND " + sameName("ke.TABLE_NAME", "tc.TABLE_NAME") + " AND " +
		sameName("ks.TABLE_SCHEMA", "tc.TABLE_SCHEMA") + " AND " + sameName("ks.TABLE_NAME", "tc.TABLE_NAME")
	periodSameTable = sameName("kx.TABLE_SCHEMA", "tc.TABLE_SCHEMA") + " AND " + sameName("kx.TABLE_NAME", "tc.TABLE_NAME")
)

// integerWidth returns the width in bytes of a DATA_TYPE of
// information_schema.COLUMNS that is an integer type, 0 for any other.
func integerWidth(dataType string) int {
	switch strings.ToLower(dataType) {
	case "tinyint":
		return 1
	case "smallint":
		return 2
	case "mediumint":
		return 3
	case "int", "integer":
		return 4
	case "bigint":
		return 8
	}
	return 0
}

var _ dialect.SchemaLinter = dialectImpl{}

// engineProblem says why a storage engine other than InnoDB is refused, from its
// name and information_schema.ENGINES.TRANSACTIONS ("YES", "NO", or empty for an
// engine the server does not list).
func engineProblem(engine, transactions string) string {
	switch {
	case !strings.EqualFold(transactions, "YES"):
		return "has no transactions"
	case strings.EqualFold(engine, "FEDERATED"), strings.EqualFold(engine, "FEDERATEDX"),
		strings.EqualFold(engine, "SPIDER"), strings.EqualFold(engine, "CONNECT"):
		return "keeps the rows on another server, whose writers never meet the guard"
	default:
		return "is not InnoDB, the one engine the guards are known to hold on"
	}
}
