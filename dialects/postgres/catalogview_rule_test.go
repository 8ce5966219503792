// CREATE RULE/VIEW reaching a system catalog through a fenced pool: names in relation
// positions (a column list after INTO included) are judged as relations, names in
// column, type, collation and operator positions are not (red-team rt39a F2, F3).

package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const catalogRuleAccounts = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// TestCreateRuleInsertIntoCatalogWithColumnListRefused (red-team rt39a F2, fail-open
// of the DDL rule). Before, protectViewDDL skipped a name followed by "(" as a function call, so a rule
// whose action inserts into a catalog with a column list — `INSERT INTO
// pg_catalog.pg_description(objoid, …) VALUES …` — is not seen naming the catalog, and
// `CREATE RULE … DO INSTEAD INSERT INTO pg_catalog.X(cols) …` through a WithDDL pool is
// accepted; the pool (whose catalog views were read at its first connection) then
// also passes the INSERT into the rule's table, which writes the catalog.
//
// Right behaviour: a name after INSERT INTO (REPLACE INTO, etc.) followed by a column
// list is a relation: the CREATE RULE is refused as the design says.
func TestCreateRuleInsertIntoCatalogWithColumnListRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, catalogRuleAccounts, `INSERT INTO accounts VALUES (1, 1, 10, 1)`,
		`CREATE TABLE rt39a_t (x INT)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(ctx, `CREATE RULE rt39a_r AS ON INSERT TO rt39a_t DO INSTEAD INSERT INTO pg_catalog.pg_description(objoid, classoid, objsubid, description) VALUES ('rt39a_t'::regclass, 'pg_class'::regclass, 0, 'rt39a written through a rule')`)
	if err == nil {
		t.Cleanup(func() {
			raw.Exec(`DELETE FROM pg_catalog.pg_description WHERE description = 'rt39a written through a rule'`)
		})
		_, werr := db.ExecContext(ctx, `INSERT INTO rt39a_t VALUES (1)`)
		var n int
		_ = raw.QueryRowContext(ctx, `SELECT count(*) FROM pg_catalog.pg_description WHERE description = 'rt39a written through a rule'`).Scan(&n)
		t.Fatalf("CREATE RULE … DO INSTEAD INSERT INTO pg_catalog.pg_description(cols) through the pool: accepted; INSERT INTO rt39a_t then: err %v, catalog rows written %d; want the CREATE RULE refused", werr, n)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("CREATE RULE: %v; want ErrUnsupported", err)
	}
}

// TestCreateRuleInsertIntoCatalogViewWithColumnListRefused (red-team rt39a F2b,
// fail-open of the DDL rule; before the fix, the same "(" skip as TestCreateRuleInsertIntoCatalogWithColumnListRefused,
// for a known catalog view). rt39a_dv is a view over pg_catalog.pg_description that the
// pool found at its first connection: `INSERT INTO rt39a_dv(cols) …` is refused, and
// `CREATE VIEW … FROM rt39a_dv` too, but `CREATE RULE … DO INSTEAD INSERT INTO
// rt39a_dv(cols) …` is accepted (the name is followed by "(" and is taken for a
// function call; the catalog-write check does not read a rule's actions either), and a
// plain `INSERT INTO rt39a_t` on the same pool then writes the catalog through the
// rule and the view.
//
// Right behaviour: the CREATE RULE is refused (a relation after INTO with a column
// list is a relation), so no write through the pool reaches pg_description.
func TestCreateRuleInsertIntoCatalogViewWithColumnListRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, catalogRuleAccounts, `INSERT INTO accounts VALUES (1, 1, 10, 1)`,
		`CREATE TABLE rt39a_t (x INT)`,
		`CREATE VIEW rt39a_dv AS SELECT * FROM pg_catalog.pg_description`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO rt39a_dv(objoid, classoid, objsubid, description) VALUES ('rt39a_t'::regclass, 'pg_class'::regclass, 0, 'rt39a direct')`); err == nil {
		t.Fatal("precondition: INSERT INTO rt39a_dv(cols) accepted")
	}
	_, err := db.ExecContext(ctx, `CREATE RULE rt39a_r2 AS ON INSERT TO rt39a_t DO INSTEAD INSERT INTO rt39a_dv(objoid, classoid, objsubid, description) VALUES ('rt39a_t'::regclass, 'pg_class'::regclass, 0, 'rt39a via rule')`)
	if err == nil {
		t.Cleanup(func() { raw.Exec(`DELETE FROM pg_catalog.pg_description WHERE description = 'rt39a via rule'`) })
		_, werr := db.ExecContext(ctx, `INSERT INTO rt39a_t VALUES (1)`)
		var n int
		_ = raw.QueryRowContext(ctx, `SELECT count(*) FROM pg_catalog.pg_description WHERE description = 'rt39a via rule'`).Scan(&n)
		t.Fatalf("CREATE RULE … DO INSTEAD INSERT INTO rt39a_dv(cols) (a known catalog view) through the pool: accepted; INSERT INTO rt39a_t then: err %v, pg_description rows written %d; want the CREATE RULE refused", werr, n)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("CREATE RULE: %v; want ErrUnsupported", err)
	}
}

// TestViewOverCatalogTypesCollationsOperatorsAccepted (red-team rt39a F3,
// over-refusal). Before, protectViewDDL read every name in a
// CREATE VIEW/RULE/TRIGGER, not only names in relation positions, so ordinary views on
// unguarded tables are refused through a WithDDL pool as "naming the system catalog":
// a column called pg_score (an unqualified pg_* name), CAST(x AS pg_catalog.text) (a
// type, not after ::), COLLATE pg_catalog."default" and OPERATOR(pg_catalog.=) — the
// last two are what pg_dump/pg_get_viewdef emit for view definitions under an empty
// search_path, so replaying a dumped schema through the pool fails.
//
// Right behaviour: types (CAST … AS, column definitions), collations, OPERATOR(…)
// and column references are not relations: each CREATE VIEW is accepted.
func TestViewOverCatalogTypesCollationsOperatorsAccepted(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, catalogRuleAccounts, `CREATE TABLE rt39a_t (x INT, pg_score INT)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE VIEW rt39a_v8 AS SELECT pg_score FROM rt39a_t`,
		`CREATE VIEW rt39a_v9 AS SELECT CAST(x AS pg_catalog.text) AS y FROM rt39a_t`,
		`CREATE VIEW rt39a_v10 AS SELECT (x::text COLLATE pg_catalog."default") AS y FROM rt39a_t`,
		`CREATE VIEW rt39a_v11 AS SELECT x FROM rt39a_t WHERE x OPERATOR(pg_catalog.=) 1`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Errorf("over-refusal: %s\n  => %v", q, err)
		}
	}
}
