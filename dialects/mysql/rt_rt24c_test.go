package mysql_test

// Red-team rt24c: G16 "Tokens never go back" across a database failover, MariaDB 10.11.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt24cMissingFloorRowOneStatementDelete (fail-open). rt22b made MariaDB's guard
// triggers refuse every write while the floor table has lost its row
// (`NOT COALESCE(tok >= floor, FALSE)`), but the one-statement DELETE's fence function
// (fencedsql_fence_<t>, DELETE … RETURNING) still tests `IF tok < fl`, with fl the
// statement's `(SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1)`: NULL when the
// row is missing, so the test is NULL and the stale holder's DELETE goes through. An
// UPDATE under the same token is refused (ErrBelowFloor), a DELETE is not.
//
// Right behaviour: the fence function refuses when fl is NULL (IF NOT COALESCE(tok >=
// fl, FALSE)), as the triggers do: ErrBelowFloor, the row kept.
func TestRTrt24cMissingFloorRowOneStatementDelete(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1), (2, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
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

// rt24cXAPrepared makes a guarded accounts table (row 1 at token 5), has a plain
// connection write row 1 under token 8 inside an XA transaction (the fenced pool
// refuses XA statements), XA PREPAREs it and disconnects (a prepared transaction outlives its
// session; one replicated from the old primary is prepared on the promoted replica the
// same way). It returns the raw pool and the error of the XA statements.
func rt24cXAPrepared(t *testing.T) (raw *sql.DB, xaErr error) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	ctx := fencedsql.WithToken(context.Background(), 8)
	update := "UPDATE accounts SET fence_token = 8, version = version + 1, balance = 99 WHERE id = 1"
	xdb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer xdb.Close()
	c, err := xdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Cleanup(func() { _, _ = raw.Exec("XA ROLLBACK 'rt24c'") })
	for _, s := range []string{"XA START 'rt24c'", update, "XA END 'rt24c'", "XA PREPARE 'rt24c'"} {
		if _, err := c.ExecContext(ctx, s); err != nil {
			return raw, fmt.Errorf("%s: %w", s, err)
		}
	}
	_ = c.Raw(func(any) error { return driver.ErrBadConn }) // drop the session: the XA stays prepared
	return raw, nil
}

// TestRTrt24cRaiseOverPreparedXA (fail-open; G16 "A raise returns when no older write
// can still commit"). MariaDB's guards make the raise wait for open writers through the
// floor row's shared lock (LOCK IN SHARE MODE in the triggers). But InnoDB (MariaDB
// 10.6+, observed on 10.11) releases a transaction's shared and gap locks at XA PREPARE, so a prepared
// transaction that wrote row 1 under token 8 holds nothing the raise's UPDATE waits for:
// RaiseTokenFloor(10) returns nil at once, and XA COMMIT then commits the write under 8
// with the floor 10 in force. A failover makes this ordinary: XA PREPAREd transactions
// of the old primary are replicated (MariaDB 10.5+) and stay prepared on the promoted
// replica; the hook raises the floor, and the transaction manager's recovery then
// commits the stale holders' writes. (The fenced pool refuses XA statements, so the
// writer is a plain connection or another application's XA/JTA transaction manager;
// the guards hold such writers to the floor like any other, G16.) PostgreSQL's settle waits for prepared
// transactions and says so (ErrFloorUnsettled naming them); MariaDB says nothing.
//
// Right behaviour: RaiseTokenFloor on MariaDB does not report success while a prepared
// XA transaction that wrote a guarded table exists (XA RECOVER /
// information_schema.INNODB_TRX in state PREPARED): it waits, then fails with
// *schema.SettleError / ErrFloorUnsettled naming them; or the guards take the floor
// row's lock exclusively so PREPARE keeps it.
func TestRTrt24cRaiseOverPreparedXA(t *testing.T) {
	raw, err := rt24cXAPrepared(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	raiseErr := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10)
	if raiseErr != nil {
		if !errors.Is(raiseErr, schema.ErrFloorUnsettled) || !strings.Contains(raiseErr.Error(), "XA X'7274323463',X'',1") {
			t.Fatalf("RaiseTokenFloor over a prepared XA transaction: %v; want ErrFloorUnsettled naming it", raiseErr)
		}
		// Once it has ended, a raise returns.
		if _, err := raw.ExecContext(context.Background(), "XA ROLLBACK 'rt24c'"); err != nil {
			t.Fatal(err)
		}
		if err := schema.RaiseTokenFloor(context.Background(), raw, mysql.Dialect, 10); err != nil {
			t.Fatalf("RaiseTokenFloor after the XA transaction ended: %v", err)
		}
		return
	}
	_, commitErr := raw.ExecContext(ctx, "XA COMMIT 'rt24c'")
	var tok, floor int64
	if err := raw.QueryRowContext(ctx, "SELECT (SELECT fence_token FROM accounts WHERE id = 1), (SELECT floor FROM fencedsql_floor WHERE id = 1)").Scan(&tok, &floor); err != nil {
		t.Fatal(err)
	}
	t.Errorf("RaiseTokenFloor(10) returned nil while an XA transaction that wrote row 1 under token 8 was prepared; XA COMMIT afterwards: %v; row 1 now carries token %d with the floor %d in force", commitErr, tok, floor)
}

// TestRTrt24cMissingFloorRowNotReported (reporting). With the floor table's row lost,
// MariaDB's guards refuse every guarded write with ErrBelowFloor (rt22b), yet
// schema.TokenFloor answers 0 with a nil error — "no floor raised", the opposite of
// what the guards do — and schema.Check reports the table Guarded with no problem
// about the floor: an operator checking the new primary after a failover sees a
// healthy, floorless database while every write is refused (or, on PostgreSQL, while
// no floor is enforced, see postgres TestRTrt24cMissingFloorRowReadCommitted).
//
// Right behaviour: schema.Check reports the missing floor row as a problem (Fix:
// RaiseTokenFloor / GuardDDL, which write the row back), and TokenFloor fails with a
// typed error (or names the table whose row is missing) instead of 0.
func TestRTrt24cMissingFloorRowNotReported(t *testing.T) {
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
