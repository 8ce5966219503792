package mysql_test

import (
	"context"
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

// Red-team rt24c: G14 "Tokens never go back" across a database failover, MariaDB 10.11.

// TestMissingFloorRowRefusesOneStatementDelete (fail-open). rt22b made MariaDB's guard
// triggers refuse every write while the floor table has lost its row
// (`NOT COALESCE(tok >= floor, FALSE)`), but the one-statement DELETE's fence function
// (fencedsql_fence_<t>, DELETE … RETURNING) still tests `IF tok < fl`, with fl the
// statement's `(SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1)`: NULL when the
// row is missing, so the test is NULL and the stale holder's DELETE goes through. An
// UPDATE under the same token is refused (ErrBelowFloor), a DELETE is not.
//
// Right behaviour: the fence function refuses when fl is NULL (IF NOT COALESCE(tok >=
// fl, FALSE)), as the triggers do: ErrBelowFloor, the row kept.
func TestMissingFloorRowRefusesOneStatementDelete(t *testing.T) {
	dsn, raw := floorAccounts(t, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	stale := fencedsql.WithToken(ctx, 8)
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("UPDATE under 8 with the floor row missing: %v; want ErrBelowFloor (rt22b)", err)
	}
	_, err := fenced.ExecContext(stale, "DELETE FROM accounts WHERE id = 2")
	var left int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 2").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrBelowFloor) || left != 1 {
		t.Errorf("DELETE under 8 with the floor row missing (UPDATE refused): err %v, row 2 still there %v; want ErrBelowFloor and the row kept", err, left == 1)
	}
}

// TestMissingFloorRowReported (reporting). With the floor table's row lost,
// MariaDB's guards refuse every guarded write with ErrBelowFloor (rt22b), yet
// schema.TokenFloor answers 0 with a nil error — "no floor raised", the opposite of
// what the guards do — and schema.Check reports the table Guarded with no problem
// about the floor: an operator checking the new primary after a failover sees a
// healthy, floorless database while every write is refused (or, on PostgreSQL, while
// no floor is enforced, see postgres TestMissingFloorRowRefusesWritesReadCommitted).
//
// Right behaviour: schema.Check reports the missing floor row as a problem (Fix:
// RaiseTokenFloor / GuardDDL, which write the row back), and TokenFloor fails with a
// typed error (or names the table whose row is missing) instead of 0.
func TestMissingFloorRowReported(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	ctx := context.Background()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	fl, err := schema.TokenFloor(ctx, raw, mysql.Dialect)
	if err == nil && fl == 0 {
		t.Errorf("TokenFloor with the floor row missing (every guarded write refused): %d, nil error; want an error naming the missing row", fl)
	}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range reps[0].Problems {
		if strings.Contains(strings.ToLower(p), "floor") {
			found = true
		}
	}
	if !found {
		t.Errorf("schema.Check with the floor row missing: Guarded %v, problems %q; want a problem naming the floor", reps[0].Guarded, reps[0].Problems)
	}
}

// TestGuardInstallLeavesLostFloorRowMissing (fail-open). With the floor
// table's row lost MariaDB's guards refuse every write (rt22b F3, rt24c F2) and
// schema.Check says to write the row back with RaiseTokenFloor at the lock service's
// LastToken + 1. But guarding one more table in the database (schema.Check's Fix:
// GuardDDL → floorDDL's `INSERT IGNORE … VALUES (1, 0)`) writes the row back at 0:
// a stale token (20, below the floor 50 raised at the failover) is accepted again on
// every guarded table, and TokenFloor reports 0 with no error.
//
// Right behaviour: an installation writes the floor row only when it creates the floor
// table; a lost row stays missing (writes refused, ErrFloorLost) until RaiseTokenFloor.
func TestGuardInstallLeavesLostFloorRowMissing(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE ledger (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	stale := fencedsql.WithToken(ctx, 20)
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the install: %v; want ErrBelowFloor", err)
	}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	fl, flErr := schema.TokenFloor(ctx, raw, mysql.Dialect)
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 98 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after guarding another table, token 20 (floor was 50, row lost): %v; TokenFloor %d (%v); want ErrBelowFloor: the installation wrote the floor row back at 0", err, fl, flErr)
	}
}
