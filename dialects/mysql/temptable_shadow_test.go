// A TEMPORARY table that shadows a guarded table for its session (red-team rt37b F1,
// F2): the lazy check probes for it on a connection whose names moved and refuses.

package mysql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const shadowAccountsTable = "CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"

// TestTemporaryTableShadowThroughDDLPoolRefused (fail-open). On MariaDB a TEMPORARY
// table shadows the base table of its name for the session, qualified or not.
// Through a pool allowed to run DDL (fenced_allow=ddl) whose lazy check already passed
// the base table, `CREATE TEMPORARY TABLE accounts (…)` with nullable fencing columns
// is not counted as changing name resolution (only USE is, on MySQL/MariaDB), and
// information_schema does not list temporary tables anyway, so the cached verdict
// (the base table's) covers the temporary one: a stale UPDATE (token 10 over its row
// at 50) is rewritten, its fencing CASE gives NULL, the nullable column takes it, and
// the write succeeds with the row's token erased. (G13's Limits sentence speaks of a
// same-named table "created later by another client … or as a TEMPORARY table on
// MySQL" as caught by the database-side guard triggers; a temporary table has none,
// and here it was created through the fenced pool itself, in plain sight.)
//
// Now: the CREATE re-arms its connection's name checks (plan.ShadowsNames), and the
// re-run check probes the name as the session resolves it (SHOW CREATE TABLE,
// dialect.TempShadowFinder): every guarded write of the name on that connection is
// refused with ErrSchema until the temporary table is dropped.
func TestTemporaryTableShadowThroughDDLPoolRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, shadowAccountsTable, "INSERT INTO accounts VALUES (1, 1, 10, 1)")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TEMPORARY TABLE accounts (id INT PRIMARY KEY, balance BIGINT, fence_token BIGINT NULL, version BIGINT NULL)"); err != nil {
		t.Fatal(err)
	}
	// The first guarded write after it already meets the probe: refused, nothing written.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "INSERT INTO accounts (id, balance) VALUES (1, 100)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("INSERT (token 50) into the temporary accounts: %v, want ErrSchema", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts").Scan(&n); err != nil || n != 0 {
		t.Fatalf("temporary accounts rows: %d, %v; want 0", n, err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO accounts VALUES (1, 100, 50, 1)"); err == nil {
		t.Fatal("unfenced INSERT into a guarded name: accepted")
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
	if err == nil {
		var bal, tok any
		_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok)
		t.Fatalf("stale UPDATE (token 10) after CREATE TEMPORARY TABLE accounts through the pool: accepted; temporary accounts row now balance %v fence_token %v (was 50); want ErrSchema or ErrFenced", bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
	// Dropped, the name resolves to the base table again: fenced writes work, stale ones
	// are fenced.
	if _, err := db.ExecContext(ctx, "DROP TEMPORARY TABLE accounts"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE accounts SET balance = 3 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE (token 30) after DROP TEMPORARY TABLE: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE (token 10) after DROP TEMPORARY TABLE: %v, want ErrFenced", err)
	}
}

// TestTemporaryTableShadowOnRawConnectionRefused (fail-open, no option enabled). The
// session-5 fix for sql.Conn.Raw re-arms the name checks of the connection, which
// closed a TEMP table of the guarded name made on Raw for SQLite. On MariaDB the
// re-armed check cannot see a temporary table (information_schema.COLUMNS lists base
// tables only on 10.11), so after `CREATE TEMPORARY TABLE accounts (…)` with nullable
// fencing columns on Raw — a pool with neither WithDDL nor dynamic SQL — the re-run
// lazy check judges the base table, passes, and a stale UPDATE (token 10 over the
// temporary row at 50) stores the fencing NULL there and succeeds.
//
// Now: Raw re-arms the connection's name checks, and the re-run check probes the
// name as the session resolves it (SHOW CREATE TABLE, which sees the temporary table):
// the stale write is refused with ErrSchema, nothing written.
func TestTemporaryTableShadowOnRawConnectionRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, shadowAccountsTable, "INSERT INTO accounts VALUES (1, 1, 10, 1)")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Raw(func(dc any) error {
		rc := fencedsql.Unwrap(dc).(driver.ExecerContext)
		if _, err := rc.ExecContext(ctx, "CREATE TEMPORARY TABLE accounts (id INT PRIMARY KEY, balance BIGINT, fence_token BIGINT NULL, version BIGINT NULL)", nil); err != nil {
			return err
		}
		_, err := rc.ExecContext(ctx, "INSERT INTO accounts VALUES (1, 100, 50, 1)", nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
	if err == nil {
		var bal, tok any
		_ = c.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok)
		t.Fatalf("stale UPDATE (token 10) after CREATE TEMPORARY TABLE accounts on Raw: accepted; temporary accounts row now balance %v fence_token %v (was 50); want ErrSchema or ErrFenced", bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}
