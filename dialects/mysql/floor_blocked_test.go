package mysql_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseBlockedByOpenWriterNamesIt (red-team rt31b F8): on MariaDB a raise waits for
// the shared lock every open guarded write holds on the floor row; a paused holder's
// open transaction blocks it, and after innodb_lock_wait_timeout it raises nothing.
// RaiseTokenFloor answers a *schema.SettleError (Blocked, errors.Is ErrFloorBlocked,
// not ErrFloorUnsettled: nothing was raised) naming the blocking connection, so that
// the operator can end it; the floor is unchanged; once the writer ends, a raise passes.
func TestRaiseBlockedByOpenWriterNamesIt(t *testing.T) {
	ctx := context.Background()
	dsn, raw := floorAccounts(t, 1)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// The raiser's sessions wait at most 1 s for a row lock.
	raiser := testdb.Open(t, "mysql", fencetest.WithParam(dsn, "innodb_lock_wait_timeout=1"))
	err = schema.RaiseTokenFloor(ctx, raiser, mysql.Dialect, 10)
	if err == nil {
		t.Fatal("RaiseTokenFloor returned nil while a transaction under token 8 was open")
	}
	var se *schema.SettleError
	if !errors.Is(err, schema.ErrFloorBlocked) || errors.Is(err, schema.ErrFloorUnsettled) || !errors.As(err, &se) || !se.Blocked {
		t.Fatalf("RaiseTokenFloor blocked by an open writer: %v; want a *SettleError (Blocked) wrapping ErrFloorBlocked", err)
	}
	var writer string
	if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&writer); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(se.Open, writer) || !strings.Contains(err.Error(), writer) {
		t.Errorf("the error names connections %v, not the open writer's %s: %v", se.Open, writer, err)
	}
	if f, err := schema.TokenFloor(ctx, raw, mysql.Dialect); err != nil || f != 0 {
		t.Errorf("floor after the blocked raise = %d, %v; want 0 (nothing raised)", f, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raiser, mysql.Dialect, 10); err != nil {
		t.Fatalf("raise after the writer ended: %v", err)
	}
}
