package plan

import "testing"

// TestShadowsNames: DDL that may create, rename, move or drop a relation a guarded name
// resolves to drops the pool's verdicts (pool), and, when the relation may be seen by
// its session only, re-arms the connection's checks (session); ordinary statements and
// DDL of other tables do neither (red-team rt37b F2–F5).
func TestShadowsNames(t *testing.T) {
	for _, c := range []struct {
		d             testDialect
		sql           string
		pool, session bool
	}{
		{pgTest, `CREATE TEMP TABLE accounts AS SELECT * FROM public.accounts`, true, true},
		{pgTest, `CREATE TABLE pg_temp.accounts (id int)`, true, true},
		{pgTest, `SELECT * INTO TEMP accounts FROM public.accounts`, true, true},
		{pgTest, `EXPLAIN ANALYZE CREATE TEMP TABLE accounts AS SELECT * FROM public.accounts`, true, true},
		{pgTest, `EXPLAIN (ANALYZE) SELECT * INTO TEMP accounts FROM public.accounts`, true, true},
		{pgTest, `CREATE TABLE "fenced".accounts AS SELECT * FROM public.accounts`, true, false},
		{pgTest, `ALTER TABLE acc2 RENAME TO accounts`, true, true},
		{pgTest, `DROP TABLE app.accounts`, true, false},
		{pgTest, `CREATE SCHEMA app`, true, false},
		{pgTest, `IMPORT FOREIGN SCHEMA remote FROM SERVER s INTO app`, true, false},
		{pgTest, `ALTER TABLE accounts ADD COLUMN note text`, true, false},
		{pgTest, `CREATE TABLE other (id int)`, false, false},
		{pgTest, `CREATE TEMP TABLE U&"\0061ccounts" (id int)`, true, true},
		{pgTest, `SELECT * FROM accounts`, false, false},
		{pgTest, `INSERT INTO audit SELECT * FROM accounts`, false, false},
		{mysqlTest, `CREATE TEMPORARY TABLE accounts (id INT)`, true, true},
		{mysqlTest, `CREATE OR REPLACE TEMPORARY TABLE accounts (id INT)`, true, true},
		{mysqlTest, `RENAME TABLE acc2 TO accounts`, true, true},
		{mysqlTest, `DROP TEMPORARY TABLE accounts`, true, true},
		{mysqlTest, `/*!CREATE TEMPORARY TABLE accounts (id INT)*/`, true, true},
		{mysqlTest, `CREATE TEMPORARY TABLE scratch (id INT)`, false, false},
		{mysqlTest, `CREATE TEMPORARY TABLE tmp_accounts (id INT)`, false, false},
		{mysqlTest, "CREATE TEMPORARY TABLE `accounts` (id INT)", true, true},
		{mysqlTest, `CREATE TEMPORARY TABLE db.ACCOUNTS (id INT)`, true, true},
		{mysqlTest, `SELECT * FROM accounts WHERE id = 1`, false, false},
		{sqliteTest, `CREATE TEMP TABLE accounts AS SELECT * FROM main.accounts`, true, true},
		{sqliteTest, `CREATE TABLE temp.accounts (id INTEGER)`, true, true},
		{sqliteTest, `CREATE TEMP VIEW accounts AS SELECT * FROM main.accounts`, true, true},
		{sqliteTest, `SELECT * FROM accounts`, false, false},
	} {
		rw := newTestRewriter(t, c.d, Guard("accounts"))
		pool, session := rw.ShadowsNames(c.sql)
		if pool != c.pool || session != c.session {
			t.Errorf("%s: ShadowsNames(%q) = %v, %v; want %v, %v", c.d.Name(), c.sql, pool, session, c.pool, c.session)
		}
		p, err := rw.Rewrite(c.sql, false)
		if err == nil && (p.ResetsPoolNames != c.pool || c.session && !p.ResetsNames) {
			t.Errorf("%s: rewrite(%q): resetsPoolNames %v, resetsNames %v; want %v, %v", c.d.Name(), c.sql, p.ResetsPoolNames, p.ResetsNames, c.pool, c.session)
		}
	}
}
