// A TEMP table of a guarded name created through a WithDDL pool on SQLite (red-team
// rt37b F5): it re-arms the connection's name checks.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestTempTableShadowThroughDDLPoolSQLiteRechecked (fail-open, same class as the fixed
// session-5 finding TestCfgRaw*: a TEMP table of the guarded name made on Raw). A pool
// allowed to run DDL (fenced_allow=ddl, a migration-capable pool) writes the guarded
// table once, so the lazy check's verdict on `accounts` (main.accounts: fit) is cached
// for the pool. Then `CREATE TEMP TABLE accounts AS SELECT …` (whose columns carry no NOT NULL)
// goes through the same pool. SQLite resolves the unqualified name to temp.accounts
// from then on, but CREATE TEMP is not a statement the planner counts as changing
// name resolution (ResolvesNames knows only ATTACH/DETACH on SQLite), so the cached
// verdict now covers temp.accounts: a stale UPDATE (token 10 over a row at 50) is
// sent, its fencing CASE yields NULL, the nullable column takes it, and the write
// "succeeds" with the row's fence token erased.
//
// Now: DDL naming a guarded table that says TEMP re-arms the name checks of its
// connection as ATTACH does (plan.ShadowsNames), so the next guarded write re-runs the
// lazy check on the name as now resolved and refuses it with ErrSchema (nullable
// fencing columns), nothing written.
func TestTempTableShadowThroughDDLPoolSQLiteRechecked(t *testing.T) {
	ctx := context.Background()
	p, raw := accountsAt10SQLite(t)
	db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=accounts&fenced_allow=ddl")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err) // the verdict on accounts is now cached for the pool
	}
	// CREATE TABLE AS: the copy's columns carry no NOT NULL; its row is at token 50.
	if _, err := db.ExecContext(ctx, `CREATE TEMP TABLE accounts AS SELECT id, balance, 50 AS fence_token, version FROM main.accounts`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
	var bal, tok sql.NullInt64
	_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM temp.accounts WHERE id = 1").Scan(&bal, &tok)
	if err == nil {
		var mainBal int64
		_ = raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&mainBal)
		t.Fatalf("stale UPDATE (token 10) after CREATE TEMP TABLE accounts through the pool: accepted; temp.accounts row now balance %v fence_token %v; want ErrSchema (nullable fencing columns of the table the name now resolves to) or ErrFenced (main.accounts balance %d)", bal, tok, mainBal)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}
