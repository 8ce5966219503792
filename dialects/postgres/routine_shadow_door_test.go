package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// shadowAccountsDDL creates the guarded table of the shadow-door tests, with a row
// written under token 10 (no guard installed: the door is found without one).
const shadowAccountsDDL = `CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`

// TestRoutineShadowingGuardedNameIsDoor (red-team rt47c F1): a function whose body
// creates, or renames onto, a relation of a guarded table's name — a TEMP table or
// view, pg_temp-qualified, CREATE TABLE AS, a rename, an SQL body's SELECT … INTO
// TEMP, a procedure it may CALL — shadows the table for the session that calls it
// (SELECT f() through the pool names no guarded table), and a stale write then lands
// unfenced in the shadow while the pool's verdict for the base table lasts. Such a
// routine is a door: schema.Check reports it (kind routine) and the pool refuses the
// table's writes (ErrSchema), so no write reaches a shadow, stale or not.
func TestRoutineShadowingGuardedNameIsDoor(t *testing.T) {
	const cols = `(id int PRIMARY KEY, balance bigint, fence_token bigint, version bigint)`
	plpgsql := func(body string) string {
		return `CREATE FUNCTION shadow_mk() RETURNS int LANGUAGE plpgsql AS $$ BEGIN ` + body + `; RETURN 1; END $$`
	}
	for name, ddl := range map[string][]string{
		"CreateTemp":      {plpgsql(`CREATE TEMP TABLE accounts ` + cols)},
		"CreateTempAs":    {plpgsql(`CREATE TEMPORARY TABLE accounts AS SELECT 0 AS id, 0::bigint AS balance, NULL::bigint AS fence_token, NULL::bigint AS version WITH NO DATA`)},
		"PgTempQualified": {plpgsql(`CREATE TABLE pg_temp.accounts ` + cols)},
		"QuotedUpperCase": {plpgsql(`IF true THEN CREATE TEMP TABLE IF NOT EXISTS "ACCOUNTS" ` + cols + `; END IF`)},
		"RenameTempOnto":  {plpgsql(`CREATE TEMP TABLE shadow_x ` + cols + `; ALTER TABLE shadow_x RENAME TO accounts`)},
		"CreateTempView":  {plpgsql(`CREATE TEMP TABLE shadow_y ` + cols + `; CREATE TEMP VIEW accounts AS SELECT * FROM shadow_y`)},
		"SQLSelectInto":   {`CREATE FUNCTION shadow_mk() RETURNS int LANGUAGE sql AS $$ SELECT 1 AS id, 0::bigint AS balance, NULL::bigint AS fence_token, NULL::bigint AS version INTO TEMP accounts; SELECT 1 $$`},
		"SQLCreateTemp":   {`CREATE FUNCTION shadow_mk() RETURNS int LANGUAGE sql AS $$ CREATE TEMP TABLE accounts ` + cols + `; SELECT 1 $$`},
		"Procedure": {`CREATE PROCEDURE shadow_pr() LANGUAGE plpgsql AS $$ BEGIN CREATE TEMP TABLE accounts ` + cols + `; END $$`,
			plpgsql(`CALL shadow_pr()`)},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db := requireShadowDoor(t, ctx, dialect.SideDoorRoutine, ddl)
			var err error
			// The call itself is a read; whatever it creates, no write reaches it.
			var one int
			if err := db.QueryRowContext(ctx, "SELECT shadow_mk()").Scan(&one); err != nil {
				t.Fatalf("SELECT shadow_mk(): %v", err)
			}
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale UPDATE (token 10) after SELECT shadow_mk(): %v, want ErrSchema or ErrFenced", err)
			}
		})
	}
}

// TestTriggerShadowingGuardedNameIsDoor (red-team rt47c F1): the same through a
// trigger — of an unguarded table (an INSERT into it through the pool creates the
// shadow), of the guarded table itself (an AFTER trigger's shadow takes the session's
// later writes), and an event trigger (any DDL runs it): each is a door (kind
// trigger), reported by schema.Check, and the table's writes are refused. (Each test
// has a database of its own, the event trigger's scope.)
func TestTriggerShadowingGuardedNameIsDoor(t *testing.T) {
	const fn = `CREATE FUNCTION shadow_trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN CREATE TEMP TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, balance bigint, fence_token bigint, version bigint); RETURN NEW; END $$`
	for name, ddl := range map[string][]string{
		"OtherTable": {`CREATE TABLE shadow_log (x int)`, fn,
			`CREATE TRIGGER shadow_trg AFTER INSERT ON shadow_log FOR EACH ROW EXECUTE FUNCTION shadow_trg()`},
		"OtherTableDisabled": {`CREATE TABLE shadow_log (x int)`, fn,
			`CREATE TRIGGER shadow_trg AFTER INSERT ON shadow_log FOR EACH ROW EXECUTE FUNCTION shadow_trg()`,
			`ALTER TABLE shadow_log DISABLE TRIGGER shadow_trg`},
		"TableItself": {fn,
			`CREATE TRIGGER shadow_trg AFTER UPDATE ON accounts FOR EACH STATEMENT EXECUTE FUNCTION shadow_trg()`},
		"EventTrigger": {`CREATE FUNCTION shadow_evt() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN CREATE TEMP TABLE IF NOT EXISTS accounts (id int); END $$`,
			`CREATE EVENT TRIGGER shadow_evt ON ddl_command_end WHEN TAG IN ('COMMENT') EXECUTE FUNCTION shadow_evt()`},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			requireShadowDoor(t, ctx, dialect.SideDoorTrigger, ddl)
		})
	}
}

// TestRoutineNotShadowingGuardedNameIsNoDoor: a routine that creates a temporary
// table of another name (accounts_tmp is not accounts) and reads the guarded table
// into a PL/pgSQL variable (SELECT … INTO v FROM accounts) is no door: the pool writes.
func TestRoutineNotShadowingGuardedNameIsNoDoor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	rawWith(t, dsn, shadowAccountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`,
		`CREATE FUNCTION shadow_ok() RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE v bigint; BEGIN CREATE TEMP TABLE IF NOT EXISTS accounts_tmp (id int); SELECT balance INTO v FROM accounts WHERE id = 1; RETURN v; END $$`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatalf("guarded UPDATE next to a routine that shadows no guarded name: %v", err)
	}
}

// requireShadowDoor creates accounts (row 1 at token 10) and runs ddl, then wants
// schema.Check to report a door of kind whose problem is the shadow's and a fenced
// pool of one connection to refuse a guarded UPDATE with ErrSchema; it returns that
// pool.
func requireShadowDoor(t *testing.T, ctx context.Context, kind dialect.SideDoorKind, ddl []string) *sql.DB {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, append([]string{shadowAccountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`}, ddl...)...)
	reports, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if !hasShadowDoor(reports, kind) {
		t.Errorf("schema.Check did not report the %s creating a relation named accounts as a door: %+v", kind, reports[0].SideDoors)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded UPDATE with a shadowing %s present: %v, want ErrSchema", kind, err)
	}
	return db
}

// hasShadowDoor reports whether the first report holds a door of kind whose problem
// is the shadow's.
func hasShadowDoor(reports []schema.TableReport, kind dialect.SideDoorKind) bool {
	for _, d := range reports[0].SideDoors {
		if d.Kind == kind && strings.Contains(d.Problem, "may create, rename, move or drop a relation named") {
			return true
		}
	}
	return false
}
