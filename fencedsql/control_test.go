package fencedsql

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// On a pool with guarded tables: transaction control as text and dynamic SQL are
// refused whatever they name; DDL, SET and LOCK are refused when they name a guarded
// table (in an identifier or in a body); the options allow DDL and dynamic SQL.
func TestRewriteControlStatements(t *testing.T) {
	cases := []struct {
		d       testDialect
		in      string
		refused bool
		opts    []Option // added to Guard("accounts")
	}{
		// transaction control
		{pgTest, `BEGIN`, true, nil},
		{pgTest, `begin transaction isolation level serializable`, true, nil},
		{mysqlTest, `START TRANSACTION`, true, nil},
		{pgTest, `COMMIT`, true, nil},
		{pgTest, `  -- c
 END`, true, nil},
		{pgTest, `ROLLBACK`, true, nil},
		{mysqlTest, `SET autocommit = 0`, true, nil},
		{mysqlTest, `SET SESSION AUTOCOMMIT=OFF`, true, nil},
		// a session setting that turns off the database-side guard triggers
		{pgTest, `SET session_replication_role = replica`, true, nil},
		{pgTest, `SET LOCAL session_replication_role TO 'replica'`, true, nil},
		{pgTest, `SET search_path = public`, false, nil},
		{mysqlTest, `LOCK TABLES other WRITE`, true, nil},
		{mysqlTest, `XA START 'x'`, true, nil},
		{sqliteTest, `SELECT 1; COMMIT`, true, nil},
		{pgTest, `ROLLBACK TO SAVEPOINT a`, false, nil},
		{pgTest, `SAVEPOINT a`, false, nil},
		{pgTest, `LOCK TABLE accounts IN EXCLUSIVE MODE`, false, nil},
		// dynamic SQL
		{pgTest, `DO $$ BEGIN EXECUTE 'UPDATE ' || 'acc' || 'ounts SET x = 1'; END $$`, true, nil},
		{pgTest, `CALL transfer(1, 2)`, true, nil},
		{pgTest, `EXECUTE stmt1(5)`, true, nil},
		{mysqlTest, `EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET x = 1')`, true, nil},
		{mysqlTest, `PREPARE s FROM @q`, true, nil},
		{mysqlTest, `BEGIN NOT ATOMIC UPDATE other SET x = 1 END`, true, nil},
		{mysqlTest, `BEGIN NOT ATOMIC SET @a = 1; UPDATE other SET x = 1; END`, true, nil},
		{mysqlTest, `BEGIN NOT ATOMIC SET @a = 1; UPDATE other SET x = 1; END`, false, []Option{WithDynamicSQL(true)}},
		{pgTest, `CALL transfer(1, 2)`, false, []Option{WithDynamicSQL(true)}},
		{mysqlTest, `PREPARE s FROM 'UPDATE accounts SET x = 1'`, true, []Option{WithDynamicSQL(true)}},
		{pgTest, `PREPARE s AS UPDATE accounts SET x = 1`, true, []Option{WithDynamicSQL(true)}},
		// DDL naming a guarded table, in an identifier or a body
		{pgTest, `ALTER TABLE accounts ALTER COLUMN fence_token DROP NOT NULL`, true, nil},
		{pgTest, `ALTER TABLE accounts ALTER COLUMN balance TYPE bigint USING balance * 2`, true, nil},
		{pgTest, `DROP TABLE accounts`, true, nil},
		{mysqlTest, `RENAME TABLE accounts TO old_accounts`, true, nil},
		{pgTest, `CREATE RULE r AS ON INSERT TO other DO ALSO UPDATE accounts SET x = 1`, true, nil},
		{pgTest, `CREATE FUNCTION f() RETURNS void AS $$ UPDATE accounts SET x = 1 $$ LANGUAGE sql`, true, nil},
		{pgTest, `CREATE FUNCTION f() RETURNS void AS 'UPDATE "accounts" SET x = 1' LANGUAGE sql`, true, nil},
		{mysqlTest, `CREATE TRIGGER t AFTER INSERT ON other FOR EACH ROW UPDATE accounts SET x = 1`, true, nil},
		{pgTest, `CREATE VIEW v AS SELECT * FROM accounts`, true, nil},
		{pgTest, `CREATE TABLE t2 AS WITH u AS (UPDATE accounts SET x = 1 RETURNING id) SELECT * FROM u`, true, nil},
		{pgTest, `CREATE TABLE t2 AS WITH u AS (UPDATE accounts SET x = 1 RETURNING id) SELECT * FROM u`, true, []Option{WithDDL(true)}},
		{pgTest, `ALTER TABLE accounts ADD COLUMN note text`, false, []Option{WithDDL(true)}},
		{pgTest, `CREATE TABLE accounts_archive (id int)`, false, nil},
		{pgTest, `CREATE INDEX ON other (x)`, false, nil},
		// SET naming a guarded table
		{mysqlTest, `SET STATEMENT max_statement_time=1 FOR UPDATE accounts SET x = 1`, true, nil},
		{mysqlTest, `SET @x = 1`, false, nil},
		// TRUNCATE stays refused even with DDL allowed
		{pgTest, `TRUNCATE accounts`, true, []Option{WithDDL(true)}},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, append([]Option{Guard("accounts")}, c.opts...)...)
		p, err := rw.Rewrite(c.in, false)
		switch {
		case c.refused && !errors.Is(err, ErrUnsupported):
			t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, c.in, p, err)
		case !c.refused && (err != nil || p.Kind != plan.KindPass):
			t.Errorf("%s: rewrite(%q) = %v, %v; want pass-through", c.d.name, c.in, p, err)
		}
	}
}

// Without guarded tables the wrapper is transparent: nothing is refused for its head.
func TestRewriteNoGuardsTransparent(t *testing.T) {
	for _, in := range []string{`BEGIN`, `COMMIT`, `CALL p()`, `DO $$ BEGIN END $$`, `ALTER TABLE accounts ADD x int`, `SET autocommit = 0`} {
		k, err := newCore([]Option{WithDialect(pgTest), WithSchemaCheck(false)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := k.plan(in, false)
		if err != nil || p.Kind != plan.KindPass {
			t.Errorf("rewrite(%q) without guards = %v, %v; want pass-through", in, p, err)
		}
	}
}

// Savepoints as text pass the planner, marked TxOnly (the wrapper refuses them outside
// a transaction it began), on a pool with guarded tables only; nothing else is marked.
func TestRewriteSavepointTxOnly(t *testing.T) {
	cases := []struct {
		d      testDialect
		in     string
		txOnly bool
	}{
		{pgTest, `SAVEPOINT a`, true},
		{pgTest, `savepoint "a"`, true},
		{pgTest, `RELEASE SAVEPOINT a`, true},
		{pgTest, `RELEASE a`, true},
		{pgTest, `ROLLBACK TO SAVEPOINT a`, true},
		{pgTest, `ROLLBACK WORK TO a`, true},
		{sqliteTest, `ROLLBACK TRANSACTION TO SAVEPOINT a`, true},
		{sqliteTest, `SELECT 1; SAVEPOINT a`, true},
		{sqliteTest, `/* c */ SAVEPOINT a`, true},
		{mysqlTest, `/*!50000 SAVEPOINT a */`, true},
		{mysqlTest, `SELECT 1 /*!50000 , 2; SAVEPOINT a */`, true},
		{pgTest, `SELECT 1`, false},
		{pgTest, `UPDATE other SET savepoint = 1`, false},
		{pgTest, `SELECT savepoint FROM other`, false},
	}
	for _, c := range cases {
		p, err := newTestRewriter(t, c.d, Guard("accounts")).Rewrite(c.in, false)
		if err != nil {
			if c.txOnly && errors.Is(err, ErrUnsupported) && c.d == mysqlTest {
				continue // a multi-statement executable comment may be refused outright
			}
			t.Errorf("%s: rewrite(%q): %v", c.d.name, c.in, err)
			continue
		}
		if (p.TxOnly != nil) != c.txOnly || p.Kind != plan.KindPass {
			t.Errorf("%s: rewrite(%q) = kind %v, TxOnly %v; want pass-through, TxOnly %v", c.d.name, c.in, p.Kind, p.TxOnly, c.txOnly)
		}
		if p.TxOnly != nil && !errors.Is(asUnsupported(p.TxOnly), ErrUnsupported) {
			t.Errorf("%s: %q: TxOnly %v is not a refusal", c.d.name, c.in, p.TxOnly)
		}
		if p, err := newTestRewriter(t, c.d, WithDDL(false)).Rewrite(c.in, false); err != nil || p.TxOnly != nil {
			t.Errorf("%s: no guarded table: rewrite(%q) = %v, %v; want a plain pass-through", c.d.name, c.in, p, err)
		}
	}
}
