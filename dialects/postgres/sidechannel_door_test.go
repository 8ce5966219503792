package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// sideChannelDoor is stored code created on a plain connection (a migration) that
// calls dblink or pg_surgery, and the statements that remove it again.
type sideChannelDoor struct {
	name         string
	create, drop []string
	long         bool // run under FENCEDSQL_LONG=1 only (testdb.Long)
}

// TestSideChannelCallsInStoredCodeAreDoors (red-team rt65a F2, F3): stored code that
// sends SQL text naming the guarded table through dblink (dblink_exec, dblink,
// dblink_send_query, …, in any spelling of the call, or through an alias the catalog
// knows), or calls pg_surgery's heap_force_kill / heap_force_freeze whatever it names,
// is a door into the table — a function, a procedure, a view, a trigger function or a
// trigger's WHEN clause on another table, a column DEFAULT, a table's or a domain's
// CHECK, a policy, a routine's argument default — so the lazy check refuses the
// guarded write (ErrSchema) while it exists: a statement through the pool reaches it
// without naming the table, and the text it sends runs in dblink's own session (an
// UPDATE that advances the version passes the installed guard; ALTER TABLE … DISABLE
// TRIGGER ALL switches it off), or the surgery removes a guarded row without its
// tombstone, so a stale holder re-inserts the key. Before the fix the guarded INSERT
// was accepted with each of these in place. The CI form runs nine of the eighteen
// (one of each way the check finds them); FENCEDSQL_LONG=1 runs all.
func TestSideChannelCallsInStoredCodeAreDoors(t *testing.T) {
	const upd = `'UPDATE acc SET balance = 0, version = version + 1 WHERE id = 1'`
	const ci = `'dbname=elsewhere'`
	doors := []sideChannelDoor{
		{"sql function over dblink_exec", []string{"CREATE FUNCTION sc_door() RETURNS text LANGUAGE sql AS $$ SELECT dblink_exec(" + ci + ", " + upd + ") $$"},
			[]string{"DROP FUNCTION sc_door()"}, false},
		{"plpgsql function over quoted, qualified dblink_exec", []string{`CREATE FUNCTION sc_door() RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN public."dblink_exec"(` + ci + ", " + upd + "); END $$"},
			[]string{"DROP FUNCTION sc_door()"}, false},
		{"procedure over dblink_send_query", []string{"CREATE PROCEDURE sc_door() LANGUAGE plpgsql AS $$ BEGIN PERFORM dblink_send_query(" + ci + ", " + upd + "); END $$"},
			[]string{"DROP PROCEDURE sc_door()"}, true},
		{"function switching the guards off through dblink_exec", []string{"CREATE FUNCTION sc_door() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM dblink_exec(" + ci + ", 'ALTER TABLE acc DISABLE TRIGGER ALL'); END $$"},
			[]string{"DROP FUNCTION sc_door()"}, true},
		{"view over dblink_exec", []string{"CREATE VIEW sc_door AS SELECT dblink_exec(" + ci + ", " + upd + ") AS r"},
			[]string{"DROP VIEW sc_door"}, false},
		{"view over dblink with an escape literal", []string{`CREATE VIEW sc_door AS SELECT * FROM dblink(` + ci + `, E'WITH x AS (DELETE FROM \x61cc RETURNING 1) SELECT 1') AS t(i int)`},
			[]string{"DROP VIEW sc_door"}, true},
		{"trigger function on another table over dblink_exec", []string{"CREATE FUNCTION sc_trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM dblink_exec(" + ci + ", " + upd + "); RETURN NULL; END $$",
			"CREATE TRIGGER sc_trg AFTER INSERT ON par FOR EACH ROW EXECUTE FUNCTION sc_trg()"},
			[]string{"DROP TRIGGER sc_trg ON par", "DROP FUNCTION sc_trg()"}, true},
		{"trigger WHEN clause on another table over dblink_exec", []string{"CREATE FUNCTION sc_trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
			"CREATE TRIGGER sc_trg AFTER INSERT ON par FOR EACH ROW WHEN (dblink_exec(" + ci + ", " + upd + ") IS NOT NULL) EXECUTE FUNCTION sc_trg()"},
			[]string{"DROP TRIGGER sc_trg ON par", "DROP FUNCTION sc_trg()"}, false},
		{"column default over quoted, qualified dblink_exec", []string{`ALTER TABLE par ADD COLUMN r text DEFAULT "public"."dblink_exec"(` + ci + ", " + upd + ")"},
			[]string{"ALTER TABLE par DROP COLUMN r"}, false},
		{"check constraint over dblink_exec", []string{"ALTER TABLE par ADD CONSTRAINT sc_chk CHECK (dblink_exec(" + ci + ", " + upd + ") IS NOT NULL) NOT VALID"},
			[]string{"ALTER TABLE par DROP CONSTRAINT sc_chk"}, true},
		{"domain check over dblink_exec", []string{"CREATE DOMAIN sc_dom AS text CHECK (dblink_exec(" + ci + ", " + upd + ") IS NOT NULL)"},
			[]string{"DROP DOMAIN sc_dom"}, true},
		{"policy over dblink_exec", []string{"CREATE POLICY sc_pol ON par USING (dblink_exec(" + ci + ", " + upd + ") IS NOT NULL)"},
			[]string{"DROP POLICY sc_pol ON par"}, false},
		{"argument default over dblink_exec", []string{"CREATE FUNCTION sc_door(x text DEFAULT dblink_exec(" + ci + ", " + upd + ")) RETURNS text LANGUAGE sql AS $$ SELECT x $$"},
			[]string{"DROP FUNCTION sc_door(text)"}, true},
		{"view over an SQL-standard wrapper of dblink_exec", []string{"CREATE FUNCTION sc_run(q text) RETURNS text LANGUAGE sql BEGIN ATOMIC SELECT dblink_exec(" + ci + ", q); END",
			"CREATE VIEW sc_door AS SELECT sc_run(" + upd + ") AS r"},
			[]string{"DROP VIEW sc_door", "DROP FUNCTION sc_run(text)"}, false},
		{"view over a C alias of dblink_exec", []string{"CREATE FUNCTION sc_run(text, text) RETURNS text AS '$libdir/dblink', 'dblink_exec' LANGUAGE C STRICT",
			"CREATE VIEW sc_door AS SELECT sc_run(" + ci + ", " + upd + ") AS r"},
			[]string{"DROP VIEW sc_door", "DROP FUNCTION sc_run(text, text)"}, false},
		{"function over heap_force_kill", []string{"CREATE FUNCTION sc_door(k bigint) RETURNS void LANGUAGE sql AS $$ SELECT heap_force_kill('acc'::regclass, array_agg(ctid)) FROM acc WHERE id = k $$"},
			[]string{"DROP FUNCTION sc_door(bigint)"}, false},
		{"function over heap_force_freeze of a regclass by OID", []string{"CREATE FUNCTION sc_door(r oid) RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM heap_force_freeze(r::regclass, ARRAY['(0,1)'::tid]); END $$"},
			[]string{"DROP FUNCTION sc_door(oid)"}, true},
		{"view over heap_force_kill", []string{"CREATE VIEW sc_door AS SELECT heap_force_kill('acc'::regclass, array_agg(ctid))::text AS r FROM acc WHERE id = 1"},
			[]string{"DROP VIEW sc_door"}, true},
	}
	dsn, raw := sideChannelDB(t)
	for i, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			if d.long && !testdb.Long() {
				t.Skip("FENCEDSQL_LONG=1 runs it")
			}
			rawWith(t, dsn, d.create...)
			defer rawWith(t, dsn, d.drop...)
			err := sideChannelInsert(t, dsn, 100+i)
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("guarded INSERT under token 10 with %s in place: %v; want ErrSchema (a door: a statement through the pool reaches it without naming acc)", d.name, err)
			}
		})
	}
	var bal int64
	if err := raw.QueryRow("SELECT balance FROM acc WHERE id = 1").Scan(&bal); err != nil || bal != 500 {
		t.Errorf("row 1: balance %d, %v; want 500", bal, err)
	}
}

// TestSideChannelCallsNamingOtherTablesAreNoDoors: the over-refusal side of
// TestSideChannelCallsInStoredCodeAreDoors — stored code whose dblink text names
// other tables only is no door of acc (EXECUTE's rule: the text names the table
// anywhere, or holds an escape literal), and the guarded write is accepted.
func TestSideChannelCallsNamingOtherTablesAreNoDoors(t *testing.T) {
	const ci = `'dbname=elsewhere'`
	dsn, _ := sideChannelDB(t)
	rawWith(t, dsn,
		"CREATE FUNCTION sc_other() RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN dblink_exec("+ci+", 'UPDATE par SET id = 2'); END $$",
		"CREATE VIEW sc_other_v AS SELECT dblink_exec("+ci+", 'DELETE FROM par') AS r",
		"ALTER TABLE par ADD COLUMN r text DEFAULT dblink_exec("+ci+", 'INSERT INTO par VALUES (3)')")
	if err := sideChannelInsert(t, dsn, 7); err != nil {
		t.Fatalf("[over-refusal] guarded INSERT with dblink calls naming other tables only: %v; want it accepted", err)
	}
}

// sideChannelDB is a fresh database with acc (the installed guard), row 1 written
// under token 50 (balance 500), another table par, and the dblink and pg_surgery
// extensions.
func sideChannelDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	rawWith(t, dsn, "CREATE EXTENSION IF NOT EXISTS dblink", "CREATE EXTENSION IF NOT EXISTS pg_surgery",
		"CREATE TABLE par (id bigint)",
		"INSERT INTO acc (id, balance, fence_token, version) VALUES (1, 500, 50, 1)")
	return dsn, raw
}

// sideChannelInsert runs a guarded INSERT of key id under token 10 through a fresh
// fenced pool (a fresh lazy check of acc).
func sideChannelInsert(t *testing.T, dsn string, id int) error {
	t.Helper()
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=acc"))
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "INSERT INTO acc (id) VALUES ("+strconv.Itoa(id)+")")
	return err
}
