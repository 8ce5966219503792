package mysql_test

// Writes through views that reach the server's catalogs (red-team rt37e F3 on MariaDB):
// creating one through the fenced pool is refused, and one a migration created is
// found at a pool's first connection (dialect.CatalogViewFinder), and writes through it
// are refused like writes to mysql.proc.

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const catalogViewAccounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"

// TestFenceFunctionRewrittenThroughViewOverMysqlProcRefused (red-team rt37e F3 on MariaDB,
// fail-open with the guard installed): the planner refuses writes to the tables of
// the mysql database by target name (a red-team pass rewrote the fence function in
// mysql.proc, docs/design.md "Statements that reach the guards without naming them"),
// but not a write through a view over one. With rt37e_proc (a view over mysql.proc,
// created through the fenced pool itself, which passes it), `UPDATE rt37e_proc SET body = 'BEGIN RETURN 1; END', … WHERE db =
// DATABASE() AND type = 'FUNCTION'` sent through the fenced pool replaces the body of
// the table's fence function, the one the one-statement DELETE calls to refuse a
// stale token. A connection that loads it afterwards (a new pool here; any connection
// whose routine cache is fresh) runs the stale token-8 DELETE of row 1, written by
// token 60, and the row is gone. Before the view UPDATE the same DELETE is ErrFenced
// (checked as set-up). Needs an account that may write mysql.proc (the test's can),
// which is what the rule is there for. Right behaviour (now): CREATE VIEW over a
// mysql.* table through the fenced pool is refused; a view a migration created is
// found by pools opened after it, the write through it (or a view over it) is refused
// with ErrUnsupported like a write to the table, and the DELETE is ErrFenced with row 1
// kept.
func TestFenceFunctionRewrittenThroughViewOverMysqlProcRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn, catalogViewAccounts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 7, 0, 0)")
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	tctx := fencedsql.WithToken(ctx, 8)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	// Through the fenced pool, WithDDL or not, the view is refused; a migration (a
	// plain connection) creates it.
	if _, err := db.ExecContext(ctx, "CREATE VIEW rt37e_proc AS SELECT db, name, type, body, body_utf8 FROM mysql.proc"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("CREATE VIEW over mysql.proc through the fenced pool: %v; want ErrUnsupported", err)
	}
	testdb.Exec(t, raw, "CREATE VIEW rt37e_proc AS SELECT db, name, type, body, body_utf8 FROM mysql.proc")
	// A pool opened after the view exists (the first one found none: a view created
	// later is found by pools opened later).
	db = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(tctx, "DELETE FROM accounts WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("set-up: the stale DELETE before the view UPDATE: %v; want ErrFenced", err)
	}
	_, viewErr := db.ExecContext(tctx, "UPDATE rt37e_proc SET body = 'BEGIN RETURN 1; END', body_utf8 = 'BEGIN RETURN 1; END' WHERE db = DATABASE() AND type = 'FUNCTION'")
	if !errors.Is(viewErr, fencedsql.ErrUnsupported) {
		t.Errorf("the UPDATE of a view over mysql.proc: %v; want ErrUnsupported", viewErr)
	}
	// A view over that view is found too, and RENAME of a found view is refused.
	testdb.Exec(t, raw, "CREATE VIEW rt37e_proc2 AS SELECT * FROM rt37e_proc")
	db3 := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		"UPDATE rt37e_proc2 SET body = 'BEGIN RETURN 1; END' WHERE db = DATABASE() AND type = 'FUNCTION'",
		"RENAME TABLE rt37e_proc TO innocent",
	} {
		if _, err := db3.ExecContext(tctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s: %v; want ErrUnsupported", q, err)
		}
	}
	db2 := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, delErr := db2.ExecContext(tctx, "DELETE FROM accounts WHERE id = 1")
	if !errors.Is(delErr, fencedsql.ErrFenced) {
		t.Errorf("the stale DELETE after the refused view UPDATE: %v; want ErrFenced", delErr)
	}
	var c int
	if err := raw.QueryRow("SELECT count(*) FROM accounts WHERE id = 1").Scan(&c); err != nil {
		t.Fatal(err)
	}
	if c != 1 {
		t.Fatalf("fail-open: after the UPDATE of a view over mysql.proc through the fenced pool (err %v), a stale token-8 DELETE (err %v) deleted row 1, written by token 60", viewErr, delErr)
	}
}

// TestCatalogViewsListedExactlyByName: the pool's listing of catalog views
// (catalogViewsQuery) must keep every view, whatever names the server's catalog
// collation takes for equal. information_schema's names are compared accent- and
// case-insensitively (utf8_general_ci): the listing's recursive UNION and GROUP BY
// merged views `cafe` and `café` (or `strase` and `straße`, `V` and `v` in twin
// databases) into one row, and the planner, which keys a view by its lower-cased name,
// then refused writes through only one of them: an UPDATE of the other, a view over
// mysql.proc, rewrote the fence function. Now the listing groups the names byte for
// byte and each view is refused.
func TestCatalogViewsListedExactlyByName(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn, catalogViewAccounts)
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	pairs := [][2]string{{"cafe", "café"}, {"strase", "straße"}, {"resume", "RÉSUMÉ"}}
	for _, p := range pairs {
		for _, name := range p {
			testdb.Exec(t, raw, "CREATE VIEW `"+name+"` AS SELECT db, name, type, body FROM mysql.proc")
		}
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	tctx := fencedsql.WithToken(ctx, 8)
	for _, p := range pairs {
		for _, name := range p {
			// A WHERE that matches no row: a write let through would change nothing.
			q := "UPDATE `" + name + "` SET body = body WHERE db = 'no such database'"
			if _, err := db.ExecContext(tctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s through the fenced pool: %v; want ErrUnsupported (a view over mysql.proc)", q, err)
			}
		}
	}
}
