package mysql_test

// A check query of the wrapper that waits for a metadata lock another session holds on
// what it reads (LOCK TABLES … WRITE, as a migration tool or mariadb-dump
// --lock-tables takes), until the session's lock_wait_timeout ends the wait (1205), is
// a check that could not complete: a *CheckCutError wrapping the server's error, never
// ErrSchema with the go-sqlmock hint; nothing is sent, and the same pool checks again
// and writes once the lock is released (red-team rt65b F1, found on SQLite; the same
// class here).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestLockWaitDuringFirstReadsIsCheckCut: the migration session locks the registry of
// guarded tables, which the pool's first-connection reads open.
func TestLockWaitDuringFirstReadsIsCheckCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 100, 50, 1)")
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Fatal(err)
	}

	lc, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if _, err := lc.ExecContext(ctx, "LOCK TABLES fencedsql_registry WRITE"); err != nil {
		t.Fatal(err)
	}
	fdb := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts&lock_wait_timeout=1"))
	tctx := fencedsql.WithToken(ctx, 100)
	_, werr := fdb.ExecContext(tctx, "UPDATE accounts SET balance = 1 WHERE id = 1")
	var n int
	rerr := fdb.QueryRowContext(tctx, "SELECT COUNT(*) FROM accounts").Scan(&n)
	if _, err := lc.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		what string
		err  error
	}{{"a fresh-token UPDATE", werr}, {"a plain SELECT", rerr}} {
		if c.err == nil {
			t.Fatalf("%s while the registry was locked succeeded", c.what)
		}
		if errors.Is(c.err, fencedsql.ErrSchema) || strings.Contains(c.err.Error(), "mock driver") {
			t.Fatalf("%s while the registry was locked: %v — ErrSchema: a lock wait says nothing about the schema", c.what, c.err)
		}
		var me *gomysql.MySQLError
		if !errors.As(c.err, new(*fencedsql.CheckCutError)) || !errors.As(c.err, &me) || me.Number != 1205 {
			t.Errorf("%s: %v (%T), want a *CheckCutError wrapping the server's 1205", c.what, c.err, c.err)
		}
		if o := fencedsql.CommitOutcome(c.err); o != fencedsql.NotCommitted {
			t.Errorf("%s: CommitOutcome %v, want NotCommitted", c.what, o)
		}
	}
	var b int
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil || b != 100 {
		t.Fatalf("balance %d (%v) after the refused UPDATE, want 100", b, err)
	}
	// The cut reads were not recorded: the same pool reads again, writes, and fences.
	if _, err := fdb.ExecContext(tctx, "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatalf("the pool did not recover after the lock was released: %v", err)
	}
	if _, err := fdb.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 3 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("a stale write after the recovery: %v, want ErrFenced", err)
	}
}
