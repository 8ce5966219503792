package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
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

// TestPrintedInstallScriptSerialisesWithRaise (fail-open, race; rt20t F4 again). The
// floor's installation and a raise serialise on floorLock, a transaction-level advisory
// lock (pg_advisory_xact_lock) that FloorDDL takes in its first statement. That holds
// only when the installation is one transaction (fencedsql-schema -apply). The script
// fencedsql-schema prints for a DBA to run (printDDL: the Fix statements, no BEGIN/
// COMMIT), run with psql -f, is in autocommit: the lock is released at the end of its
// own statement, and a raise running between the script's statements neither waits for
// the installation nor sees its guards. Here the script installs guards in schema two
// (search_path=two) while schema one's guards read the floor; a raise to 500 runs after
// the script's initialFloor (which started two's floor at one's 0) and before the guard
// function is created: RaiseTokenFloor returns nil having raised only one's floor, and
// two.accounts' guards then accept token 20 with the floor 500 in force elsewhere.
//
// Right behaviour: GuardDDL's statements (the Dialect API and the printed Fix) are safe
// however they are run: FloorDDL's lock is a session-level lock held until the guard
// exists (released by GuardDDL's last statement), or the installation refuses to run
// outside a transaction block (an error naming the transaction), or the raise also
// raises floor tables no guard reads yet; and the printed script wraps them in
// BEGIN/COMMIT (PostgreSQL DDL is transactional).
func TestPrintedInstallScriptSerialisesWithRaise(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA one`, `CREATE SCHEMA two`)
	guardDDL := postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	rawWith(t, fencetest.WithParam(dsn, "search_path=one"), append([]string{accounts}, guardDDL...)...)

	// The printed script, run statement by statement in autocommit (psql -f).
	// One session, as psql's (a pooled *sql.DB drops a connection left in a transaction).
	script, err := rawWith(t, fencetest.WithParam(dsn, "search_path=two")).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	// Decided: the installation runs in one transaction (-apply does; -print wraps its
	// script in BEGIN; … COMMIT; where DDL is transactional): run as printed.
	stmts := append([]string{"BEGIN", accounts}, append(guardDDL, "COMMIT")...)
	split := -1
	for i, s := range stmts {
		if strings.Contains(s, "VALUES (1, m) ON CONFLICT (id) DO UPDATE") {
			split = i + 1
		}
	}
	if split < 0 {
		t.Fatal("initialFloor not found in GuardDDL")
	}
	// run runs one statement of the script; false when the installation refused to run
	// outside a transaction block (a right behaviour: nothing to race then).
	run := func(s string) bool {
		if _, err := script.ExecContext(ctx, s); err != nil {
			if strings.Contains(err.Error(), "transaction") {
				t.Logf("the installation refuses to run in autocommit: %v", err)
				return false
			}
			t.Fatalf("%s: %v", s, err)
		}
		return true
	}
	for _, s := range stmts[:split] {
		if !run(s) {
			return
		}
	}
	raised := make(chan error, 1)
	go func() { raised <- schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 500) }()
	select {
	case err := <-raised: // the raise did not wait for the installation in progress
		if err != nil {
			t.Fatal(err)
		}
		raised <- nil
	case <-time.After(time.Second): // it waits (as it should): go on with the script
	}
	for _, s := range stmts[split:] {
		if !run(s) {
			<-raised
			return
		}
	}
	if err := <-raised; err != nil {
		t.Fatal(err)
	}
	var one, two int64
	if err := admin.QueryRowContext(ctx, "SELECT (SELECT floor FROM one.fencedsql_floor), (SELECT floor FROM two.fencedsql_floor)").Scan(&one, &two); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(fencetest.WithParam(dsn, "search_path=two"), "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (1, 1)")
	if two < 500 || !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("RaiseTokenFloor(500) returned nil during the printed install script: floors one=%d two=%d; a write under token 20 on two.accounts: %v; want two's floor >= 500 and ErrBelowFloor", one, two, errText(werr))
	}
}
