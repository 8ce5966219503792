package fencedsql_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// RT24B F4 on SQLite: guards main.accounts (tok/ver) and aux.accounts (the default
// columns; an ATTACHed database not attached yet, so the pool allows DDL, and attaches
// it and creates the table before it writes: until then it refuses writes, rt34d F2).
// A write of main.accounts is fenced on tok; the unqualified `UPDATE accounts`, which
// neither qualifier decides, is refused with ErrSchema naming both guards instead of
// being fenced on the first guard's columns, and the row keeps the newer holder's
// balance.
func TestUnqualifiedNameWithDifferentColumnsRefusedSQLite(t *testing.T) {
	ctx := context.Background()
	path := twoColumnSets(t)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path), fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithDDL(true),
		fencedsql.Guard("aux.accounts"),
		fencedsql.Guard("main.accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE main.accounts SET balance = 100 WHERE id = 1`); !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "aux.accounts") {
		t.Fatalf("a write while the listed aux.accounts does not exist: %v, want ErrSchema naming it", err)
	}
	for _, q := range []string{`ATTACH DATABASE ':memory:' AS aux`,
		`CREATE TABLE aux.accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE main.accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatalf("newer holder (token 10) through main.accounts: %v", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "main.accounts (tok, ver)") || balanceOf(t, path) != 100 {
		t.Errorf("stale holder (token 5) through the unqualified name: err = %v, balance now %d; want ErrSchema naming both guards and balance 100", err, balanceOf(t, path))
	}
}
