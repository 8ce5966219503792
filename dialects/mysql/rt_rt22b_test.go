package mysql_test

// Red-team rt22b: G16 "A raise returns when no older write can still commit" on
// MariaDB, second round (guards reading the floor LOCK IN SHARE MODE).

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt22bRaiseOverMissingFloorRowReadCommitted (fail-open when the floor table has
// lost its row; READ COMMITTED). RaiseTokenFloor documents the case ("a floor table a
// guard reads but that has lost its row gets the row back"), and the guards read an
// empty floor table as no floor. The waiting that G16 relies on is the raise's write
// of the floor row conflicting with the writers' LOCK IN SHARE MODE read of it — but
// with no row there is nothing to lock, and READ COMMITTED takes no gap lock: a
// writer under token 8 reads "no floor" and locks nothing, the raise INSERTs the row
// without waiting and returns nil, and the writer then commits its write under 8 with
// the floor 10 in force. (REPEATABLE READ holds: the empty read's gap lock makes the
// INSERT wait.)
//
// Right behaviour: a raise that finds the row missing cannot rely on the row lock:
// e.g. restore the row first and wait out open writers another way (the MariaDB
// analogue of the PostgreSQL settle: wait for transactions that hold locks on guarded
// tables, information_schema.INNODB_TRX / metadata locks), or have the guards refuse
// writes while the floor row is missing (fail closed), or refuse to raise (typed
// error) when the row is missing and writers may be open.
func TestRTrt22bRaiseOverMissingFloorRowReadCommitted(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1), (2, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 8), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	// With the floor's row gone, the guards refuse every write until a raise writes
	// it back: nothing is judged under a missing floor.
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("a write with the floor's row missing: %v; want ErrBelowFloor", err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 2"); err != nil {
		t.Fatalf("a write at the floor after the raise wrote the row back: %v", err)
	}
}

// TestRTrt22bRaiseOverOlderGuardReturnsEarly (fail-open on an upgraded library whose
// guards were not re-applied). The fix for rt20t F1 lives in the guard triggers' text
// (the floor read LOCK IN SHARE MODE); a database whose guards were installed by the
// previous release keeps the lockless read until `fencedsql-schema -apply` runs again.
// GuardInstalledQuery reports such a guard as missing, but RaiseTokenFloor does not
// look: its GuardFloorsQuery matches the older triggers' text as well
// ("%FROM fencedsql_floor f WHERE%"), it raises, and returns nil at once while a READ
// COMMITTED transaction that wrote under token 8 is open; that transaction then
// commits its write under 8 with the floor 10 in force — exactly the rt20t F1 hole,
// now behind a successful raise whose documentation promises it cannot happen.
// (This version's fenced pool refuses to write through the older guard — its lazy
// check fails closed, held — but the writers open at a raise are the previous
// release's processes, or any session, which do not ask.)
//
// Right behaviour: RaiseTokenFloor (and TokenFloors) check that every guard that reads
// the floor in scope reads it with the lock (GuardInstalledQuery's condition) and fail
// with a typed error naming the tables whose guards must be re-applied (or, at least,
// do not return success while such a guard's writers may be open).
func TestRTrt22bRaiseOverOlderGuardReturnsEarly(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1), (2, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	// The previous release's guard: the same DDL with the floor read lockless.
	var old []string
	for _, s := range g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version") {
		old = append(old, strings.ReplaceAll(s, " LOCK IN SHARE MODE)", ")"))
	}
	testdb.Exec(t, raw, old...)
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()

	// This version's pool refuses to write through the older guard (its lazy check
	// fails closed): held.
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts SET balance = 98 WHERE id = 2"); err == nil {
		t.Log("note: this version's fenced pool wrote through the older guard")
	}
	// The writer is the previous release's pool (or any session): what the guard
	// judges is the row's token, 8, under the floor it reads.
	tx, err := raw.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 99, fence_token = 8, version = version + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10) }()
	raisedFirst := false
	select {
	case err := <-done:
		if err != nil {
			if !errors.Is(err, schema.ErrFloorUnsettled) {
				t.Fatalf("RaiseTokenFloor over the older guard: %v; want ErrFloorUnsettled naming it", err)
			}
			return
		}
		raisedFirst = true
	case <-time.After(1500 * time.Millisecond):
	}
	commitErr := tx.Commit()
	if !raisedFirst {
		<-done
	}
	var token int64
	if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&token); err != nil {
		t.Fatal(err)
	}
	if raisedFirst && commitErr == nil && token == 8 {
		t.Errorf("RaiseTokenFloor(10) returned nil over a guard of the previous version (lockless floor read) while a READ COMMITTED writer under 8 was open; that writer then committed row 1 under token %d below the floor 10", token)
	}
}
