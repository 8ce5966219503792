package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFloorInstalledDuringRaise: guards installed in another schema, in a transaction
// open while RaiseTokenFloor runs, read a floor table of their own. The raise waits for
// the installation (the advisory lock both take) and then raises the new floor too;
// an installation begun while a raise holds the lock starts its floor from the raised
// ones. Before, the raise did not see the uncommitted guards and the new floor started
// at the old value (red-team rt20t): tokens below the raise were accepted there.
func TestFloorInstalledDuringRaise(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA one`, `CREATE SCHEMA two`, `CREATE SCHEMA three`)
	guardDDL := postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	rawWith(t, fencetest.WithParam(dsn, "search_path=one"), append([]string{accounts}, guardDDL...)...)

	floorOf := func(s string) int64 {
		t.Helper()
		var f int64
		if err := admin.QueryRowContext(ctx, "SELECT floor FROM "+s+".fencedsql_floor").Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// install runs accounts' guard installation in one transaction on a connection
	// whose search_path is schema, as fencedsql-schema -apply does, and leaves it open.
	install := func(schema string) (*sql.Tx, error) {
		tx, err := rawWith(t, fencetest.WithParam(dsn, "search_path="+schema)).BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		for _, q := range append([]string{accounts}, guardDDL...) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				tx.Rollback()
				return nil, fmt.Errorf("%s: %w", q, err)
			}
		}
		return tx, nil
	}
	// An installation open across the raise.
	tx, err := install("two")
	if err != nil {
		t.Fatal(err)
	}
	raised := make(chan error, 1)
	go func() { raised <- schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 500) }()
	select {
	case err := <-raised:
		t.Fatalf("RaiseTokenFloor returned (%v) while a guard installation was open", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-raised; err != nil {
		t.Fatal(err)
	}
	if one, two := floorOf("one"), floorOf("two"); one != 500 || two != 500 {
		t.Fatalf("floors after the raise: one %d, two %d; want both 500", one, two)
	}

	// A raise open (holding the lock) when an installation begins: the installation
	// waits, then starts from the raised floor.
	rtx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range postgres.Dialect.(dialect.FloorInstallLocker).FloorRaiseLock() {
		if _, err := rtx.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	q, args := postgres.Dialect.(dialect.Floorer).RaiseFloorQuery(dialect.TableName{Schema: "one", Name: dialect.FloorTable}, 900)
	if _, err := rtx.ExecContext(ctx, q, args...); err != nil {
		t.Fatal(err)
	}
	installed := make(chan error, 1)
	go func() {
		tx, err := install("three")
		if err == nil {
			err = tx.Commit()
		}
		installed <- err
	}()
	select {
	case err := <-installed:
		t.Fatalf("a guard installation went through (%v) while a raise held the lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := rtx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-installed; err != nil {
		t.Fatal(err)
	}
	if three := floorOf("three"); three != 900 {
		t.Fatalf("floor of an installation that waited for a raise to 900: %d", three)
	}
}
