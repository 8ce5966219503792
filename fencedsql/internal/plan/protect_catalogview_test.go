package plan

import "testing"

// Relations that reach a system catalog under another name (red-team rt37e F2, F3;
// protect_catalogview.go): writes through a known one are refused like writes to the
// catalog, whatever the options; the DDL that makes one is refused; reads, DROP and
// ordinary views pass.

// withCatalogViews gives the planner the relations a dialect's CatalogViewFinder found.
func withCatalogViews(views ...CatalogView) testOption {
	return func(c *PlannerConfig) { c.CatalogViews = append(c.CatalogViews, views...) }
}

var catalogViewCases = []struct {
	d       testDialect
	sql     string
	refused bool
}{
	// writes through a known catalog view, in any spelling
	{pgTest, "UPDATE rt37e_v SET setting = 'off' WHERE name = 'synchronous_commit'", true},
	{pgTest, "UPDATE public.RT37E_V SET setting = 'off'", true},
	{pgTest, `UPDATE ONLY "rt37e_v" SET setting = 'off'`, true},
	{pgTest, "WITH x AS (UPDATE rt37e_v SET setting = 'off' RETURNING 1) SELECT * FROM x", true},
	{pgTest, "DELETE FROM rt37e_v WHERE name = 'x'", true},
	{pgTest, "INSERT INTO rt37e_v (name, setting) VALUES ('a', 'b')", true},
	{pgTest, "DO $$ BEGIN UPDATE rt37e_v SET setting = 'off'; END $$", true},
	{mysqlTest, "UPDATE rt37e_proc SET body = 'BEGIN RETURN 1; END'", true},
	{mysqlTest, "UPDATE `db`.`rt37e_proc` SET body = 'x'", true},
	{mysqlTest, "UPDATE t, rt37e_proc SET rt37e_proc.body = 'x' WHERE t.id = 1", true},
	{mysqlTest, "REPLACE INTO rt37e_proc (db, name) VALUES ('a', 'b')", true},
	{mysqlTest, "DELETE rt37e_proc FROM rt37e_proc WHERE db = 'x'", true},
	// the DDL that would move a known one out of sight
	{pgTest, "ALTER VIEW rt37e_v RENAME TO innocent", true},
	{mysqlTest, "RENAME TABLE rt37e_proc TO innocent", true},
	// the DDL that makes one, whatever WithDDL
	{pgTest, "CREATE VIEW v AS SELECT proname, prosrc FROM pg_proc", true},
	{pgTest, "CREATE OR REPLACE TEMP VIEW v AS SELECT * FROM pg_catalog.pg_trigger", true},
	{pgTest, "CREATE VIEW v AS SELECT * FROM rt37e_v", true},
	{pgTest, "CREATE VIEW v AS TABLE information_schema.tables", true},
	{pgTest, "CREATE RULE r AS ON INSERT TO t DO INSTEAD UPDATE pg_trigger SET tgenabled = 'D'", true},
	// names in relation positions, a column list after INTO included (rt39a F2)
	{pgTest, "CREATE RULE r AS ON INSERT TO t DO INSTEAD INSERT INTO pg_catalog.pg_description(objoid, description) VALUES (1, 'x')", true},
	{pgTest, "CREATE RULE r AS ON INSERT TO t DO INSTEAD INSERT INTO rt37e_v(name, setting) VALUES ('a', 'b')", true},
	{pgTest, "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO u VALUES (1); INSERT INTO pg_attribute(attnotnull) VALUES (false))", true},
	{pgTest, "CREATE RULE r AS ON INSERT TO t DO UPDATE pg_catalog.pg_trigger SET tgenabled = 'D'", true},
	{pgTest, "CREATE RULE r AS ON INSERT TO t DO INSTEAD DELETE FROM ONLY public.rt37e_v WHERE name = 'x'", true},
	{pgTest, "CREATE VIEW v AS SELECT * FROM t, pg_proc", true},
	{pgTest, "CREATE VIEW v AS SELECT * FROM t AS a JOIN u ON a.x = u.x, LATERAL (SELECT 1) s, pg_catalog.pg_proc", true},
	{pgTest, "CREATE VIEW v AS SELECT * FROM (t JOIN pg_proc ON true)", true},
	{pgTest, "CREATE VIEW v AS SELECT * FROM t WHERE x IN (SELECT oid FROM ONLY pg_catalog.pg_class)", true},
	{pgTest, "CREATE VIEW v AS SELECT * FROM t LEFT JOIN rt37e_v USING (name)", true},
	{pgTest, "CREATE VIEW v AS SELECT pg_catalog.pg_proc FROM t", true}, // a qualified catalog name where no relation is read: fail closed
	{mysqlTest, "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW INSERT IGNORE mysql.proc (db) VALUES ('x')", true},
	{mysqlTest, "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW UPDATE t2, mysql.proc SET body = 'x'", true},
	{mysqlTest, "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW REPLACE INTO rt37e_proc(db) VALUES ('x')", true},
	{sqliteTest, "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE OR IGNORE sqlite_dbpage SET data = NULL; END", true},
	{mysqlTest, "CREATE VIEW rt37e_proc2 AS SELECT db, name, body FROM mysql.proc", true},
	{mysqlTest, "CREATE OR REPLACE ALGORITHM = MERGE DEFINER = CURRENT_USER SQL SECURITY DEFINER VIEW v AS SELECT * FROM `mysql`.`global_priv`", true},
	{mysqlTest, "ALTER VIEW v AS SELECT * FROM mysql.proc", true},
	{mysqlTest, "CREATE DEFINER = event@localhost VIEW v AS SELECT * FROM mysql.proc", true},
	{mysqlTest, "CREATE DEFINER = `table`@`%` VIEW v AS SELECT * FROM mysql.proc", true},
	{mysqlTest, "CREATE VIEW v AS SELECT * FROM rt37e_proc", true},
	{mysqlTest, "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = (SELECT count(*) FROM performance_schema.threads)", true},
	// what passes (unless refused for another reason: CREATE TRIGGER without WithDDL)
	{pgTest, "SELECT * FROM rt37e_v", false},
	{pgTest, "DROP VIEW rt37e_v", false},
	{pgTest, "UPDATE other SET setting = 'off'", false},
	{pgTest, "CREATE VIEW v AS SELECT id, balance FROM ledger", false},
	{pgTest, "CREATE VIEW v AS SELECT pg_backend_pid(), now()::timestamptz, x::pg_lsn FROM ledger", false},
	{pgTest, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM pg_stat_activity", false},
	{pgTest, "CREATE TRIGGER tsv BEFORE INSERT OR UPDATE ON docs FOR EACH ROW EXECUTE FUNCTION pg_catalog.tsvector_update_trigger(tsv, 'pg_catalog.english', body)", false},
	{mysqlTest, "SELECT * FROM rt37e_proc", false},
	{mysqlTest, "DROP VIEW rt37e_proc", false},
	{mysqlTest, "CREATE VIEW v AS SELECT id, balance FROM ledger", false},
	{mysqlTest, "CREATE VIEW v AS SELECT sys.format_bytes(size) AS s FROM ledger", false},
	{mysqlTest, "CREATE TABLE copy AS SELECT * FROM mysql.proc", false},
	{mysqlTest, "CREATE TABLE copy AS SELECT * FROM information_schema.views", false},
}

func TestCatalogViewWritesAndDDLRefused(t *testing.T) {
	for name, opts := range protectOptions {
		for _, c := range catalogViewCases {
			o := append(append([]testOption{}, opts...), withCatalogViews(
				CatalogView{Schema: "public", Name: "rt37e_v", Reaches: "pg_catalog.pg_settings"},
				CatalogView{Schema: "db", Name: "rt37e_proc", Reaches: "mysql.proc"}))
			rw := newTestRewriter(t, c.d, o...)
			_, err := rw.Rewrite(c.sql, false)
			if c.refused && !isRefusal(err) {
				t.Errorf("%s %s: %q: %v; want a refusal", c.d.name, name, c.sql, err)
			}
			if _, plain := newTestRewriter(t, c.d, opts...).Rewrite(c.sql, false); !c.refused && err != nil && plain == nil {
				t.Errorf("%s %s: %q refused: %v", c.d.name, name, c.sql, err)
			}
		}
	}
}

// TestCatalogViewNeedsGuardedTables: a pool without guarded tables refuses nothing.
func TestCatalogViewNeedsGuardedTables(t *testing.T) {
	rw := NewPlanner(PlannerConfig{Syntax: pgTest.syn, NumberedParams: true, QuoteIdent: pgTest.QuoteIdent,
		CatalogViews: []CatalogView{{Name: "rt37e_v"}}})
	if _, err := rw.Rewrite("UPDATE rt37e_v SET setting = 'off'", false); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogViewDDLJudgesRelationPositionsOnly (red-team rt39a F3): names in column,
// function, type, collation and operator positions are no relations, so these views
// pass a WithDDL pool (they were refused as naming the system catalog).
func TestCatalogViewDDLJudgesRelationPositionsOnly(t *testing.T) {
	for _, c := range []struct {
		d   testDialect
		sql string
	}{
		{pgTest, "CREATE VIEW v AS SELECT pg_score FROM ledger"},
		{pgTest, "CREATE VIEW v AS SELECT CAST(x AS pg_catalog.text) AS y, pg_catalog.int4 '5' FROM ledger"},
		{pgTest, `CREATE VIEW v AS SELECT (x::text COLLATE pg_catalog."default") AS y FROM ledger`},
		{pgTest, "CREATE VIEW v AS SELECT x FROM ledger WHERE x OPERATOR(pg_catalog.=) 1"},
		{pgTest, "CREATE VIEW v AS SELECT EXTRACT(epoch FROM pg_ts), x IS DISTINCT FROM pg_score FROM ledger"},
		{pgTest, "CREATE VIEW v AS SELECT a, pg_score FROM ledger JOIN other USING (pg_score) ORDER BY a, pg_score"},
		{pgTest, "CREATE VIEW v AS SELECT * FROM ledger, pg_catalog.generate_series(1, 3) g"},
		{pgTest, "CREATE VIEW v AS SELECT ledger.rt37e_v FROM ledger"},
		{mysqlTest, "CREATE VIEW v AS SELECT CAST(x AS CHAR) AS y, pg_score FROM ledger"},
	} {
		rw := newTestRewriter(t, c.d, append(append([]testOption{}, protectOptions["ddl+dynamic_sql"]...), withCatalogViews(
			CatalogView{Schema: "public", Name: "rt37e_v", Reaches: "pg_catalog.pg_settings"}))...)
		if _, err := rw.Rewrite(c.sql, false); err != nil {
			t.Errorf("%s: %q refused: %v", c.d.name, c.sql, err)
		}
	}
}
