package mysql_test

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

// Red-team rt20t: G14 "Tokens never go back" — the token floor against a transaction
// that is open across RaiseTokenFloor.

// TestRaiseWaitsForOpenWriterReadCommitted (fail-open, race). Under REPEATABLE
// READ InnoDB reads the floor row in the guard's triggers with a shared lock, so
// RaiseTokenFloor waits until a transaction that wrote under the old floor ends (held:
// TestHeld20tRaiseWaitsUnderRepeatableRead). Under READ COMMITTED — a common setting for
// InnoDB applications, and one the wrapper accepts — the triggers' read takes no lock:
// RaiseTokenFloor(10) returns at once while a transaction that wrote under token 8 — a
// fenced UPDATE, or a claim (SELECT … FOR UPDATE, whose fencing UPDATE stamps the row)
// — is open, and that transaction then commits its write under 8 with the
// floor at 10 in force (the BEFORE UPDATE guard's `(SELECT f.floor FROM fencedsql_floor
// …)` is a consistent read under READ COMMITTED; the INSERT trigger's read and the
// one-statement DELETE's do lock, and the raise waits for them). G14 says a token below the floor never writes, and the
// procedures say the old holder "gets ErrBelowFloor" once the floor is raised.
//
// Right behaviour: when RaiseTokenFloor returns, no transaction that wrote under a token
// below the new floor may still commit (e.g. the floor read in the triggers as a
// locking read, `… LOCK IN SHARE MODE`, whatever the isolation level; or
// RaiseTokenFloor waiting for open writers of the guarded tables after its commit).
func TestRaiseWaitsForOpenWriterReadCommitted(t *testing.T) {
	for _, q := range []string{"UPDATE accounts SET balance = 99 WHERE id = 1", "SELECT id FROM accounts WHERE id = 1 FOR UPDATE"} {
		t.Run(q, func(t *testing.T) {
			raisedFirst, commitErr, effect := raiseAcrossOpenWrite(t, sql.LevelReadCommitted, q)
			if raisedFirst && commitErr == nil && effect != "" {
				t.Errorf("RaiseTokenFloor(10) returned while a READ COMMITTED transaction under token 8 was open, and that transaction then committed %q: %s, below the floor, written after the floor was raised", q, effect)
			}
		})
	}
}

// Red-team rt22b: G14 "A raise returns when no older write can still commit" on
// MariaDB, second round (guards reading the floor LOCK IN SHARE MODE).

// TestRaiseOverMissingFloorRowWaitsReadCommitted (fail-open when the floor table has
// lost its row; READ COMMITTED). RaiseTokenFloor documents the case ("a floor table a
// guard reads but that has lost its row gets the row back"), and the guards read an
// empty floor table as no floor. The waiting that G14 relies on is the raise's write
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
func TestRaiseOverMissingFloorRowWaitsReadCommitted(t *testing.T) {
	dsn, raw := floorAccounts(t, 1, 2)
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

// TestRaiseOverOlderGuardWaitsForWriters (fail-open on an upgraded library whose
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
func TestRaiseOverOlderGuardWaitsForWriters(t *testing.T) {
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

// preparedXAWrite makes a guarded accounts table (row 1 at token 5), has a plain
// connection write row 1 under token 8 inside an XA transaction (the fenced pool
// refuses XA statements), XA PREPAREs it and disconnects (a prepared transaction outlives its
// session; one replicated from the old primary is prepared on the promoted replica the
// same way). It returns the raw pool and the error of the XA statements.
func preparedXAWrite(t *testing.T) (raw *sql.DB, xaErr error) {
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

// TestRaiseWaitsForPreparedXA (fail-open; G14 "A raise returns when no older write
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
// the guards hold such writers to the floor like any other, G14.) PostgreSQL's settle waits for prepared
// transactions and says so (ErrFloorUnsettled naming them); MariaDB says nothing.
//
// Right behaviour: RaiseTokenFloor on MariaDB does not report success while a prepared
// XA transaction that wrote a guarded table exists (XA RECOVER /
// information_schema.INNODB_TRX in state PREPARED): it waits, then fails with
// *schema.SettleError / ErrFloorUnsettled naming them; or the guards take the floor
// row's lock exclusively so PREPARE keeps it.
func TestRaiseWaitsForPreparedXA(t *testing.T) {
	raw, err := preparedXAWrite(t)
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

// TestRaiseIgnoresUnrelatedPreparedXA (over-refusal). RaiseTokenFloor on MariaDB
// waits for every XA transaction XA RECOVER lists at the raise (dialect.PreparedLister)
// — server-wide, whatever it wrote. An XA transaction prepared by another application
// that wrote only an unguarded table (here: a table with no guard, in the same database;
// another database of the server is the same) holds the raise until its context ends,
// and RaiseTokenFloor fails with ErrFloorUnsettled although no transaction that judged a
// write under the old floor can commit. A prepared XA transaction left behind by a
// crashed transaction manager (in-doubt, possibly for days) makes every raise fail so:
// the failover hook reports "not settled" at each failover. PostgreSQL's settle waits
// only for transactions (prepared ones included) that hold a write lock on a guarded
// table (OpenTransactionsQuery).
//
// Decided (an over-refusal kept): which tables a prepared XA transaction wrote is
// visible only with the PROCESS privilege (information_schema.INNODB_TRX), so the raise
// waits for every XA transaction prepared at the raise, naming each as XA ROLLBACK
// takes it.
func TestRaiseIgnoresUnrelatedPreparedXA(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE audit_log (id BIGINT PRIMARY KEY, msg TEXT) ENGINE=InnoDB")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	xdb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := xdb.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	xid := "'rt25a_unrelated', 'b', 7"
	t.Cleanup(func() { _, _ = raw.Exec("XA ROLLBACK " + xid) })
	for _, s := range []string{"XA START " + xid, "INSERT INTO audit_log VALUES (1, 'x')", "XA END " + xid, "XA PREPARE " + xid} {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	_ = c.Raw(func(any) error { return driver.ErrBadConn }) // drop the session: the XA stays prepared
	c.Close()
	xdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Decided: the raise waits for every prepared XA transaction (which tables one wrote
	// is visible only with the PROCESS privilege); the error names it as XA ROLLBACK
	// takes it, and it ends by that statement.
	err = schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10)
	if !errors.Is(err, schema.ErrFloorUnsettled) || !strings.Contains(err.Error(), "X'72743235615f756e72656c61746564',X'62',7") {
		t.Fatalf("RaiseTokenFloor with an unrelated XA transaction prepared: %v; want ErrFloorUnsettled naming X'…',X'…',7", err)
	}
	if _, err := raw.Exec("XA ROLLBACK X'72743235615f756e72656c61746564',X'62',7"); err != nil {
		t.Fatalf("XA ROLLBACK of the XID as named: %v", err)
	}
	if err := schema.RaiseTokenFloor(context.Background(), raw, mysql.Dialect, 10); err != nil {
		t.Fatalf("RaiseTokenFloor after it ended: %v", err)
	}
}

// TestSettleErrorNamesUsableXID (cosmetic). When a raise gives up waiting for a
// prepared XA transaction it names it in SettleError.Open as "XA <data>", XA RECOVER's
// last column: gtrid and bqual run together, the formatID dropped (binary bytes would
// be printed raw). The operator told to "end them" cannot: for the XID
// ('rt25a_x', 'b', 7) the error says "XA rt25a_xb", and XA ROLLBACK 'rt25a_xb' fails
// with XAER_NOTA. Two distinct XIDs ('ab',”) and ('a','b') are also listed as one.
//
// Right behaviour: name the XID in the form XA COMMIT/ROLLBACK accept (XA RECOVER
// FORMAT='SQL' gives X'…',X'…',formatID), and key the wait on the whole XID.
func TestSettleErrorNamesUsableXID(t *testing.T) {
	dsn, raw := floorAccounts(t, 1)
	xdb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := xdb.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	xid := "'rt25a_x', 'b', 7"
	t.Cleanup(func() { _, _ = raw.Exec("XA ROLLBACK " + xid) })
	for _, s := range []string{"XA START " + xid, "UPDATE accounts SET fence_token = 8, version = version + 1, balance = 99 WHERE id = 1", "XA END " + xid, "XA PREPARE " + xid} {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	c.Close()
	xdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rerr := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10)
	var se *schema.SettleError
	if !errors.As(rerr, &se) || len(se.Open) != 1 {
		t.Fatalf("RaiseTokenFloor over a prepared XA: %v; want a *SettleError naming it", rerr)
	}
	name := strings.TrimPrefix(se.Open[0], "XA ")
	_, xerr := raw.Exec("XA ROLLBACK " + name)
	if xerr != nil {
		_, xerr2 := raw.Exec("XA ROLLBACK '" + name + "'")
		if xerr2 != nil {
			t.Errorf("SettleError names the prepared XA transaction %q; neither XA ROLLBACK %s (%v) nor XA ROLLBACK '%s' (%v) ends it; want the XID in a form XA ROLLBACK accepts", se.Open[0], name, xerr, name, xerr2)
		}
	}
}
