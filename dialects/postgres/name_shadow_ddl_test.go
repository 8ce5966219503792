// DDL through a WithDDL pool that makes a guarded name resolve to another table
// (red-team rt37b F3, F4): it re-arms the name checks, of its connection or the pool.

package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTempTableShadowThroughDDLPoolRechecked (fail-open). PostgreSQL puts pg_temp first on
// every search_path, so `CREATE TEMP TABLE accounts …` shadows public.accounts for
// the rest of the session. Sent through a pool allowed to run DDL (fenced_allow=ddl,
// a migration-capable pool) after the pool's lazy check passed public.accounts, it is
// not a statement the planner counts as changing name resolution (ResolvesNames:
// SET/RESET of the path, a role, DO, CALL, …; not CREATE TEMP), so the cached verdict
// covers pg_temp.accounts: a stale UPDATE (token 10 over its row at 50) is rewritten,
// its fencing CASE gives NULL, the temp table's nullable fence_token takes it, and the
// write succeeds with the row's token erased.
//
// Now: DDL naming a guarded table that says TEMP re-arms the name checks of its
// connection, as SET search_path does (plan.ShadowsNames), so the next guarded write
// is refused with ErrSchema (nullable fencing columns of the table the name now
// resolves to), nothing written.
func TestTempTableShadowThroughDDLPoolRechecked(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TEMP TABLE accounts AS SELECT id, balance, 50::bigint AS fence_token, version FROM public.accounts`); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
	if err == nil {
		var bal, tok any
		_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM pg_temp.accounts WHERE id = 1").Scan(&bal, &tok)
		t.Fatalf("stale UPDATE (token 10) after CREATE TEMP TABLE accounts through the pool: accepted; pg_temp.accounts row now balance %v fence_token %v (was 50); want ErrSchema or ErrFenced", bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}

// TestUserSchemaShadowThroughDDLPoolRechecked (fail-open; the same gap as
// TestTempTableShadowThroughDDLPoolRechecked, for every connection of the pool). The
// default search_path is `"$user", public`. Through a pool allowed to run DDL,
// `CREATE SCHEMA <current_user>` and `CREATE TABLE <current_user>.accounts AS SELECT …`
// make the unqualified name `accounts` resolve to the new table on every connection
// of the role, but neither statement re-arms the name checks (ResolvesNames looks for
// SET/RESET/DO/CALL/EXECUTE/PREPARE, search_path and set_config), so the pool's cached
// verdict on public.accounts covers the new table: a stale UPDATE (token 10 over its
// row at 50) stores the fencing NULL there and succeeds.
//
// Now: DDL sent through the pool that creates or renames a relation of a guarded
// table's name drops the pool's verdicts on names (plan.Plan.ResetsPoolNames), so the
// next guarded write, on any connection, re-judges `accounts` as now resolved and
// refuses it with ErrSchema, nothing written.
func TestUserSchemaShadowThroughDDLPoolRechecked(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	var user, path string
	if err := raw.QueryRowContext(ctx, "SELECT current_user, current_setting('search_path')").Scan(&user, &path); err != nil {
		t.Fatal(err)
	}
	if path != `"$user", public` {
		t.Skipf("search_path is %q, not the default", path)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	// c2, another connection of the pool, caches the pool's verdict on accounts and is
	// held while the DDL runs on a different one: the stale write below is sent on c2.
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	q := `"` + user + `"`
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Exec(`DROP SCHEMA ` + q + ` CASCADE`) })
	if _, err := db.ExecContext(ctx, `CREATE TABLE `+q+`.accounts AS SELECT id, balance, 50::bigint AS fence_token, version FROM public.accounts`); err != nil {
		t.Fatal(err)
	}
	_, err = c2.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
	if err == nil {
		var bal, tok any
		_ = raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM "+q+".accounts WHERE id = 1").Scan(&bal, &tok)
		t.Fatalf("stale UPDATE (token 10) after CREATE TABLE %s.accounts (earlier on the search_path) through the pool: accepted; that row now balance %v fence_token %v (was 50); want ErrSchema or ErrFenced", q, bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}
