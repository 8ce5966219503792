package mysql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	gomysql "github.com/go-sql-driver/mysql"
)

// Red-team rt28a (F1, F2, F5): dynamic statements that end the wrapper's transaction
// and begin another, or begin one outside any (the savepoint that marks the
// transaction, dialect.TxMarker), and a DSN parameter contradicting an option given
// in code.

// TestCallOpeningTxOutsideWrapperTxDetected (F2: acknowledged write never committed; the
// autocommit=0 / completion_type=CHAIN class G11 protects against). With
// WithDynamicSQL(true) (fenced_allow=dynamic_sql), a CALL *outside* a wrapper
// transaction of a procedure that runs START TRANSACTION left the session inside a
// transaction the wrapper did not know of (@@autocommit is still 1, so the session
// check passed): the next fenced autocommit UPDATE on that connection reported
// success but was not committed, and was lost when the connection ended (or committed
// later by whatever ended that transaction, outside any lease check).
//
// Decided behaviour: after a dynamic statement outside a wrapper transaction the
// wrapper sets and releases a savepoint (the release succeeds only inside a
// transaction): the CALL fails (ErrUnsupported, outcome Unknown), the stray
// transaction is rolled back, and the connection is discarded — on a *sql.Conn its
// next statement answers driver.ErrBadConn, nothing sent; on the pool the next write
// runs on a fresh connection and is committed.
func TestCallOpeningTxOutsideWrapperTxDetected(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1), (2, 20, 10, 1)",
		"CREATE PROCEDURE rt28a_open() BEGIN START TRANSACTION; END",
		"CREATE PROCEDURE rt28a_plain() BEGIN SELECT 1 INTO @rt28a_x; END")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
	fenced.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	// A procedure that leaves no transaction open passes, on the same connection.
	if _, err := fenced.ExecContext(ctx, "CALL rt28a_plain()"); err != nil {
		t.Fatalf("CALL of a procedure that leaves no transaction: %v", err)
	}
	_, err := fenced.ExecContext(ctx, "CALL rt28a_open()")
	if !errors.Is(err, fencedsql.ErrUnsupported) || fencedsql.CommitOutcome(err) != fencedsql.Unknown {
		t.Fatalf("CALL that leaves a transaction open outside a wrapper transaction: %v (outcome %v), want ErrUnsupported with outcome Unknown", err, fencedsql.CommitOutcome(err))
	}
	_, uerr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 99 WHERE id = 1")
	var seen int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if uerr != nil || seen != 99 {
		t.Errorf("the fenced autocommit UPDATE after CALL rt28a_open(): err = %v, another session reads balance %d (want nil and 99): "+
			"the write sits in a transaction the wrapper does not know of", uerr, seen)
	}

	// On a *sql.Conn: the connection is unusable after it.
	conn, err := fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CALL rt28a_open()"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("CALL on a sql.Conn: %v, want ErrUnsupported", err)
	}
	_, err = conn.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 98 WHERE id = 1")
	if !errors.Is(err, driver.ErrBadConn) {
		t.Errorf("UPDATE on the sql.Conn after the stray transaction: %v, want driver.ErrBadConn (nothing sent)", err)
	}
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if seen != 99 {
		t.Errorf("balance %d after the refused UPDATE, want 99", seen)
	}
}

// callLostLease is a lease that can be lost on demand.
type callLostLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *callLostLease) Token() uint64         { return l.tok }
func (l *callLostLease) Lost() <-chan struct{} { return l.lost }
func (l *callLostLease) Err() error {
	select {
	case <-l.lost:
		return errLeaseGone
	default:
		return nil
	}
}

var errLeaseGone = lockclient.ErrLeaseLost

// TestCallCommittingAndReopeningTxDetected (data change on error: Commit reports
// NotCommitted for a committed write). Inside a wrapper transaction, a dynamic
// statement allowed by WithDynamicSQL(true) is followed by the @@in_transaction check
// (watchDynamic, red-team rt10x F4): a CALL that COMMITs is caught because the session
// is left in autocommit. A procedure that COMMITs and then runs START TRANSACTION
// leaves @@in_transaction = 1, so the wrapper believes its transaction is intact. The
// fenced write made before the CALL was committed by the procedure; the lease is then
// lost and tx.Commit refuses with ErrLeaseLost / NotCommitted, rolling back only what
// came after the CALL — but balance 99 is in the table for every session.
//
// Right behaviour: the wrapper cannot tell from @@in_transaction alone that its
// transaction survived a dynamic statement; compare a transaction identity taken
// before and after (MariaDB: the InnoDB trx id from information_schema.innodb_trx for
// CONNECTION_ID(), or a session variable set at BeginTx that a COMMIT cannot reset —
// e.g. an XID or @@last_insert_id trick is not enough), or treat every dynamic
// statement inside a transaction as ending it with an Unknown outcome. At the least
// Commit must report Unknown (ErrCommitUnknown), never NotCommitted, after a dynamic
// statement ran in the transaction.
func TestCallCommittingAndReopeningTxDetected(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1), (2, 20, 10, 1)",
		"CREATE PROCEDURE rt28a_reopen() BEGIN COMMIT; START TRANSACTION; END")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
	fenced.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	lease := &callLostLease{tok: 20, lost: make(chan struct{})}
	lctx := fencedsql.WithLease(ctx, lease)
	tx, err := fenced.BeginTx(lctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(lctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(lctx, "CALL rt28a_reopen()"); err != nil {
		t.Logf("CALL: %v", err)
	}
	close(lease.lost) // the lease is lost before Commit
	cerr := tx.Commit()
	var seen int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if fencedsql.CommitOutcome(cerr) != fencedsql.Unknown {
		t.Errorf("Commit after a CALL that committed and began another transaction: %v (outcome %v), want outcome Unknown", cerr, fencedsql.CommitOutcome(cerr))
	}
	if seen == 99 && fencedsql.CommitOutcome(cerr) == fencedsql.NotCommitted {
		t.Errorf("Commit after the lease was lost: %v (outcome NotCommitted), yet balance 99 was committed by the procedure's COMMIT: "+
			"the wrapper took the procedure's new transaction for its own", cerr)
	}
}

// TestDSNContradictingSchemaCheckOptionRefused (fail-open through a configuration
// conflict). A driver registered with fencedsql.WithSchemaCheck(true) — the code
// insisting on the session checks — opened with a DSN that says
// fenced_schema_check=false (a DSN copied from a test set-up, as the WithSchemaCheck
// doc warns) runs with the checks OFF: the DSN's parameters apply after the
// registration's options, silently. The DSN's own sql_mode=” (non-strict) then goes
// unchecked, and a stale write (token 5 under the row's 10) is not refused: MariaDB
// stores the NULL the fence computes as 0, with a warning, and the stale balance
// lands. Two explicit settings that disagree on a safety check are a configuration
// the wrapper cannot honour both of.
//
// Right behaviour: a DSN parameter that contradicts an option given in code
// (fenced_schema_check=false against WithSchemaCheck(true); likewise fenced_strict)
// is a ConfigError at Open (G13: "a configuration the wrapper cannot honour is an
// error at open"), or the safer of the two wins; the stale write fails with ErrFenced.
func TestDSNContradictingSchemaCheckOptionRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1)")
	fencedsql.Register("rt28a-mysql-checked", &gomysql.MySQLDriver{}, fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.WithSchemaCheck(true))
	db, err := sql.Open("rt28a-mysql-checked", dsn+"&fenced_tables=accounts&fenced_schema_check=false&sql_mode=%27%27")
	if err != nil {
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("Open: %v, want a *fencedsql.ConfigError", err)
		}
		return // refused: the decided behaviour
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	_, werr := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 666 WHERE id = 1")
	var bal, tok int64
	if err := db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if werr == nil || bal == 666 {
		t.Errorf("stale write (token 5 < 10) on a pool registered WithSchemaCheck(true) whose DSN says fenced_schema_check=false: err = %v, row now balance %d, fence_token %d; "+
			"want ErrFenced (or a ConfigError at Open): the DSN silently switched the session check off", werr, bal, tok)
	}
}

// TestCallRollingBackAndReopeningTxDetected (success reported for a write that was rolled
// back): F1's mirror image. A procedure that runs `ROLLBACK; START TRANSACTION` inside
// a wrapper transaction leaves @@in_transaction = 1: the wrapper goes on, and Commit
// answers nil (Committed) although the fenced UPDATE made before the CALL was rolled
// back.
//
// Right behaviour: as for F1 — a dynamic statement after which the wrapper cannot
// show its transaction is the same one ends it: Commit fails with an Unknown (or
// NotCommitted) outcome, never nil.
func TestCallRollingBackAndReopeningTxDetected(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1), (2, 20, 10, 1)",
		"CREATE PROCEDURE rt28a_undo() BEGIN ROLLBACK; START TRANSACTION; END")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
	fenced.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	lctx := fencedsql.WithToken(ctx, 20)
	tx, err := fenced.BeginTx(lctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(lctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, callErr := tx.ExecContext(lctx, "CALL rt28a_undo()")
	cerr := tx.Commit()
	var seen int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if callErr == nil || cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.Unknown {
		t.Errorf("CALL that rolled back and began another transaction: CALL err = %v, Commit err = %v (outcome %v), want both errors, outcome Unknown", callErr, cerr, fencedsql.CommitOutcome(cerr))
	}
	if callErr == nil && cerr == nil && seen != 99 {
		t.Errorf("CALL and Commit both succeeded, but balance is %d (want 99, or an error): the procedure rolled the wrapper's transaction back and opened another", seen)
	}
}

// TestCallRecreatingWrapperSavepointDetected (fail-open, needs a procedure that knows the
// wrapper's naming). The savepoint that marks the transaction around a dynamic statement
// (markDynamic) is named fencedsql_dyn_<n>, n counting the connection's dynamic
// statements from 1: predictable. A procedure that runs COMMIT; START TRANSACTION;
// SAVEPOINT fencedsql_dyn_1 (or loops over a few numbers) leaves a savepoint of that
// name in the new transaction, so the wrapper's RELEASE succeeds, @@in_transaction is 1,
// and the wrapper believes its transaction intact: the fenced UPDATE made before the CALL
// is committed, yet tx.Rollback answers nil (the caller believes nothing was written).
//
// Right behaviour: the marker cannot be recreated by the statement it judges — a name
// with a per-connection random part (crypto/rand), so that a procedure cannot name it;
// the CALL fails with outcome Unknown and Rollback reports Unknown.
func TestCallRecreatingWrapperSavepointDetected(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1)",
		"CREATE PROCEDURE rt30a_reopen() BEGIN COMMIT; START TRANSACTION; SAVEPOINT fencedsql_dyn_1; SAVEPOINT fencedsql_dyn_2; SAVEPOINT fencedsql_dyn_3; END")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
	fenced.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	tctx := fencedsql.WithToken(ctx, 20)
	tx, err := fenced.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(tctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, cerr := tx.ExecContext(tctx, "CALL rt30a_reopen()")
	rerr := tx.Rollback()
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if bal == 99 && cerr == nil && rerr == nil {
		t.Errorf("the CALL that committed and re-created the wrapper's savepoint by name passed (err nil), Rollback answered nil, yet balance 99 is committed: want the CALL refused with outcome Unknown")
	}
}
