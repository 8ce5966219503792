package postgres_test

// Writes through relations that reach a system catalog under another name (red-team
// rt37e F2, F3): a view over pg_settings, pg_attribute, pg_trigger or pg_proc, created by
// a migration, is found at the pool's first connection (dialect.CatalogViewFinder) and
// writes through it are refused like writes to the catalog.

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSettingThroughViewOverPgSettingsRefused (red-team rt37e F2, protected setting
// changed unseen): pg_settings' ON UPDATE rule calls set_config, and an updatable
// view over pg_settings (here one a migration created, rt37e_v) inherits the rule,
// so `UPDATE rt37e_v SET setting = 'off' WHERE name = 'synchronous_commit'` sets the
// session's synchronous_commit to off (local here: the test server's is off). The planner refuses the write when it targets
// pg_settings by name and set_config of a protected setting in every spelling
// (docs/design.md "Statements that reach the guards without naming them"), but the
// view's name is neither, so the UPDATE passes; the session check does not read the
// setting again, and the next guarded write on that pooled connection is sent and
// acknowledged with synchronous_commit = off — a fenced write the client sees
// committed can be lost on a crash, after which an older token's write wins. Right
// behaviour (now): the write through the view is refused with ErrUnsupported, as a
// write to the catalog is, and the setting is unchanged.
func TestSettingThroughViewOverPgSettingsRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	rawWith(t, dsn, guardTableAccounts, "INSERT INTO accounts (id, balance) VALUES (2, 7)",
		"CREATE VIEW rt37e_v AS SELECT name, setting FROM pg_settings")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	ctx := fencedsql.WithToken(context.Background(), 8)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A first guarded write: the session check has run on this connection.
	if _, err := conn.ExecContext(ctx, "UPDATE accounts SET balance = 6 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	// The test server's own synchronous_commit is off (from its configuration, which
	// the session check tolerates): the view sets the session's to local.
	_, viewErr := conn.ExecContext(ctx, "UPDATE rt37e_v SET setting = 'local' WHERE name = 'synchronous_commit'")
	if !errors.Is(viewErr, fencedsql.ErrUnsupported) {
		t.Errorf("the UPDATE of a view over pg_settings: %v; want ErrUnsupported", viewErr)
	}
	var sc string
	if err := conn.QueryRowContext(ctx, "SELECT current_setting('synchronous_commit')").Scan(&sc); err != nil {
		t.Fatal(err)
	}
	_, writeErr := conn.ExecContext(ctx, "UPDATE accounts SET balance = 5 WHERE id = 2")
	if sc == "local" && writeErr == nil {
		t.Fatalf("protected setting changed unseen: the UPDATE of a view over pg_settings passed (err %v) and set synchronous_commit = %s, and the next guarded write was sent and acknowledged; want the view write refused (ErrUnsupported) or the guarded write refused (ErrSchema)", viewErr, sc)
	}
}

// TestSearchPathThroughViewOverPgSettingsRefused (red-team rt37e F2, second
// spelling, fail-open): the same view moves search_path without the statement naming
// it (`WHERE name LIKE 'search%path'`), so the planner's resetsNames (any statement
// naming search_path or set_config) does not re-arm the connection's table checks.
// The cached verdict for "accounts" (public.accounts, fit) then covers evil.accounts,
// whose fencing columns are nullable: a token-8 UPDATE of its row written by token 60
// stores the fencing NULL and succeeds. docs/design.md lists a search_path moved by a
// function as open; this route is a plain UPDATE of a view, which the planner could
// refuse. Right behaviour: the UPDATE of the view over pg_settings is refused with
// ErrUnsupported (or re-arms the checks, and the write is refused with ErrSchema),
// and evil.accounts keeps balance 5 and token 60.
func TestSearchPathThroughViewOverPgSettingsRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts, "INSERT INTO accounts (id, balance) VALUES (2, 7)",
		"CREATE VIEW rt37e_v AS SELECT name, setting FROM pg_settings",
		"CREATE SCHEMA evil",
		"CREATE TABLE evil.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT, version BIGINT)",
		"INSERT INTO evil.accounts VALUES (1, 5, 60, 1)")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	ctx := fencedsql.WithToken(context.Background(), 8)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "UPDATE accounts SET balance = 6 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	_, viewErr := conn.ExecContext(ctx, "UPDATE rt37e_v SET setting = 'evil, public' WHERE name LIKE 'search%path'")
	if !errors.Is(viewErr, fencedsql.ErrUnsupported) {
		t.Errorf("the write through the view over a catalog: %v; want ErrUnsupported", viewErr)
	}
	_, writeErr := conn.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1")
	var b int64
	var tok sql.NullInt64
	if err := raw.QueryRow("SELECT balance, fence_token FROM evil.accounts WHERE id = 1").Scan(&b, &tok); err != nil {
		t.Fatal(err)
	}
	if b != 5 {
		t.Fatalf("fail-open: after the view UPDATE (err %v) moved search_path, a token-8 UPDATE (err %v) changed evil.accounts row 1, written by token 60, to balance %d, token %v", viewErr, writeErr, b, tok)
	}
}

// TestNotNullDroppedThroughViewOverPgAttributeRefused (red-team rt37e F3, fail-open): the planner
// refuses writes to the system catalogs by target name (pg_catalog.*, any pg_*
// relation: a red-team pass set pg_attribute.attnotnull = false on the token column,
// docs/design.md "Statements that reach the guards without naming them"), but not a
// write through a plain view over a catalog. With rt37e_attrs (a migration's view over
// pg_attribute), `UPDATE rt37e_attrs SET attnotnull = false WHERE attrelid =
// 'accounts'::regclass AND attname = 'fence_token'` passes the planner and drops the
// token column's NOT NULL; the pool's cached verdict on accounts still says fit, so a
// token-8 UPDATE of row 1 (token 60) stores the fencing NULL and succeeds. (With the
// guard installed the view UPDATE passes the same way, but the guard trigger refuses
// the stale write: ErrFenced, row kept.) Needs a role that may write the catalogs
// (the test's is a superuser), which is what the catalog rule is there for. Right
// behaviour (now): a write whose target is a view over a catalog relation is refused with
// ErrUnsupported like a write to the catalog (or the SideDoorFinder reports such
// views), and row 1 keeps balance 5 and token 60.
func TestNotNullDroppedThroughViewOverPgAttributeRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 7, 0, 0)",
		"CREATE VIEW rt37e_attrs AS SELECT attrelid, attname, attnotnull FROM pg_attribute")
	ctx := fencedsql.WithToken(context.Background(), 8)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "UPDATE accounts SET balance = 6 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	_, viewErr := conn.ExecContext(ctx, "UPDATE rt37e_attrs SET attnotnull = false WHERE attrelid = 'accounts'::regclass AND attname = 'fence_token'")
	if !errors.Is(viewErr, fencedsql.ErrUnsupported) {
		t.Errorf("the write through the view over a catalog: %v; want ErrUnsupported", viewErr)
	}
	_, writeErr := conn.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1")
	var b int64
	var tok sql.NullInt64
	if err := raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); err != nil {
		t.Fatal(err)
	}
	if b != 5 || !tok.Valid {
		t.Fatalf("fail-open: the UPDATE of a view over pg_attribute (err %v) dropped fence_token's NOT NULL, and a token-8 UPDATE (err %v) of row 1, written by token 60, left balance %d, token %v", viewErr, writeErr, b, tok)
	}
}

// TestGuardTriggersDisabledThroughViewOverPgTriggerRefused (red-team rt37e F3, second spelling,
// guard bypass): with the guards installed, `UPDATE rt37e_trg SET tgenabled = 'D'
// WHERE tgrelid = 'accounts'::regclass` through the fenced pool (rt37e_trg: a
// migration's view over pg_trigger) passes the planner, which refuses the same UPDATE
// of pg_trigger and `ALTER TABLE … DISABLE TRIGGER`, and switches off every trigger of
// accounts, the guard's among them. A writer outside the wrapper (here a plain
// connection, as the guards exist for) then lowers row 1's token from 60 to 1 and its
// balance, which the guard refuses while enabled. (A new fenced pool notices the
// disabled guard — "guard lost" — and refuses; the writers the guard exists for do
// not.) Right behaviour (now): the write through the view over the catalog is refused with
// ErrUnsupported, the guard stays enabled, and the plain connection's stale UPDATE is
// refused by it.
func TestGuardTriggersDisabledThroughViewOverPgTriggerRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 7, 0, 0)",
		"CREATE VIEW rt37e_trg AS SELECT tgrelid, tgname, tgenabled FROM pg_trigger")
	ctx := fencedsql.WithToken(context.Background(), 8)
	guardedWith(t, ctx, dsn)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(ctx, "UPDATE accounts SET balance = 6 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	_, viewErr := db.ExecContext(ctx, "UPDATE rt37e_trg SET tgenabled = 'D' WHERE tgrelid = 'accounts'::regclass")
	if !errors.Is(viewErr, fencedsql.ErrUnsupported) {
		t.Errorf("the write through the view over a catalog: %v; want ErrUnsupported", viewErr)
	}
	outside := rawWith(t, dsn)
	_, staleErr := outside.Exec("UPDATE accounts SET balance = 1, fence_token = 1, version = version + 1 WHERE id = 1")
	var b, tok int64
	if err := raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); err != nil {
		t.Fatal(err)
	}
	if b != 5 || tok != 60 {
		t.Fatalf("guard bypass: the UPDATE of a view over pg_trigger through the fenced pool (err %v) disabled the guard, and a plain connection's stale UPDATE (err %v) left row 1 with balance %d, token %d (was 5, 60)", viewErr, staleErr, b, tok)
	}
}

// TestGuardFunctionsRewrittenThroughViewOverPgProcRefused (red-team rt37e F3, third spelling,
// fail-open with the guard installed): through rt37e_fn, a migration's view over
// pg_proc, the fenced pool rewrites the body of fencedsql_fenced_accounts (the
// function the one-statement DELETE calls to raise ErrFenced) to `RETURN 1` and the
// guard's trigger function to "return OLD/NEW" — `WHERE proname LIKE 'fenced%…%'`
// names no guard object, and the planner refuses the same UPDATE of pg_proc by name.
// PL/pgSQL recompiles a function whose pg_proc row changed, so the very next stale
// token-8 DELETE of row 1 (token 60) on the same pool deletes it; before the rewrite
// it is ErrFenced (checked as set-up). Right behaviour (now): the writes through the view
// over pg_proc are refused with ErrUnsupported, and the DELETE is ErrFenced with row 1
// kept.
func TestGuardFunctionsRewrittenThroughViewOverPgProcRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 7, 0, 0)",
		"CREATE VIEW rt37e_fn AS SELECT proname, prosrc FROM pg_proc")
	ctx := fencedsql.WithToken(context.Background(), 8)
	guardedWith(t, ctx, dsn)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(ctx, "DELETE FROM accounts WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("set-up: the stale DELETE before the rewrite: %v; want ErrFenced", err)
	}
	_, e1 := db.ExecContext(ctx, "UPDATE rt37e_fn SET prosrc = 'BEGIN RETURN 1; END' WHERE proname LIKE 'fenced%fenced%'")
	_, e2 := db.ExecContext(ctx, "UPDATE rt37e_fn SET prosrc = 'BEGIN IF TG_OP = ''DELETE'' THEN RETURN OLD; END IF; RETURN NEW; END' WHERE proname LIKE 'fenced%guard%'")
	for _, e := range []error{e1, e2} {
		if !errors.Is(e, fencedsql.ErrUnsupported) {
			t.Errorf("the UPDATE of a view over pg_proc: %v; want ErrUnsupported", e)
		}
	}
	_, delErr := db.ExecContext(ctx, "DELETE FROM accounts WHERE id = 1")
	var c int
	if err := raw.QueryRow("SELECT count(*) FROM accounts WHERE id = 1").Scan(&c); err != nil {
		t.Fatal(err)
	}
	if c != 1 {
		t.Fatalf("fail-open with the guard installed: after rewriting the fence and guard functions through a view over pg_proc (errs %v, %v), a stale token-8 DELETE (err %v) deleted row 1, written by token 60", e1, e2, delErr)
	}
}

// TestCatalogViewsFoundAtDepth: the pool's first connection finds, besides a view over
// a catalog, a view over that view, a table whose rule writes a catalog (a write to it
// runs the rule) and a view over that table, and refuses writes to each with
// ErrUnsupported, the catalogs unchanged; a view over an ordinary table is written as
// usual. Creating a view over a catalog through the fenced pool is refused, WithDDL or
// not, and so is renaming a found one (the pool would not know the new name).
func TestCatalogViewsFoundAtDepth(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)",
		"CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)",
		"INSERT INTO notes VALUES (1, 'a')",
		"CREATE VIEW cv_proc AS SELECT proname, prosrc FROM pg_catalog.pg_proc",
		"CREATE VIEW cv_proc2 AS SELECT * FROM cv_proc WHERE proname LIKE 'x%'",
		"CREATE TABLE cv_ruled (id BIGINT PRIMARY KEY, flag TEXT)",
		"CREATE RULE cv_rule AS ON UPDATE TO cv_ruled DO INSTEAD UPDATE pg_catalog.pg_trigger SET tgenabled = NEW.flag::\"char\" WHERE tgrelid = 'accounts'::regclass",
		"CREATE VIEW cv_over_ruled AS SELECT * FROM cv_ruled",
		"CREATE VIEW notes_v AS SELECT id, body FROM notes")
	ctx := fencedsql.WithToken(context.Background(), 8)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	for _, q := range []string{
		"UPDATE cv_proc SET prosrc = 'x' WHERE proname = 'nothing'",
		"UPDATE public.cv_proc2 SET prosrc = 'x' WHERE proname = 'xnothing'",
		"UPDATE cv_ruled SET flag = 'D'",
		"UPDATE cv_over_ruled SET flag = 'D'",
		"CREATE VIEW cv_new AS SELECT tgrelid, tgenabled FROM pg_trigger",
		"CREATE VIEW cv_new AS SELECT * FROM cv_proc",
		"ALTER VIEW cv_proc RENAME TO innocent",
	} {
		if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s: %v; want ErrUnsupported", q, err)
		}
	}
	if _, err := db.ExecContext(ctx, "UPDATE notes_v SET body = 'b' WHERE id = 1"); err != nil {
		t.Errorf("a write through a view over an ordinary table: %v", err)
	}
	var disabled int
	if err := raw.QueryRow("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'accounts'::regclass AND tgenabled = 'D'").Scan(&disabled); err != nil {
		t.Fatal(err)
	}
	if disabled != 0 {
		t.Fatalf("%d triggers of accounts disabled through a rule", disabled)
	}
	// DROP removes the door: it passes.
	if _, err := db.ExecContext(ctx, "DROP VIEW cv_proc2"); err != nil {
		t.Errorf("DROP VIEW of a found view: %v", err)
	}
}
