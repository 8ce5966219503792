package mysql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSystemVersioningAsOfClaimReadsCurrentRows (wrong value returned by a claim).
// MariaDB's session variable system_versioning_asof makes every SELECT of a
// system-versioned table that names no FOR SYSTEM_TIME read the table as of that
// time — SELECT … FOR UPDATE included — while UPDATE and DELETE still change the
// current rows. The wrapper neither protects the setting (SET SESSION
// system_versioning_asof = '…' passes on a pool with guarded tables, as would the DSN
// parameter of that name, which go-sql-driver/mysql sends as a SET) nor reads it in its
// session check, and the lint does not look at WITH SYSTEM VERSIONING. So a claim's
// fencing UPDATE stamps the current row, and its read returns the row as it was at
// the chosen time. Where that historical row carries the same token (the holder wrote
// it before, e.g. it claimed the row, then wrote balance 50), the count and the token
// restriction match and the claim returns the old balance (10) for a row whose
// current balance is 50: the caller computes its next write from a value that is not
// the row it locked. (Rows another token wrote since fail the count check instead:
// an ErrUnsupported that breaks the transaction.)
//
// Right behaviour: a claim returns the current rows it stamped. Refuse a change of
// system_versioning_asof to anything but DEFAULT on a pool with guarded tables
// (protectedSettings) and check it in the session check (a DSN parameter or
// init_connect), or have the claim's read name FOR SYSTEM_TIME AS OF CURRENT_TIMESTAMP /
// refuse claims on system-versioned guarded tables.
func TestSystemVersioningAsOfClaimReadsCurrentRows(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		"INSERT INTO accounts VALUES (1, 10, 20, 1)") // holder 20 claimed the row at balance 10
	time.Sleep(20 * time.Millisecond)
	var asof string
	if err := raw.QueryRow("SELECT CAST(NOW(6) AS CHAR)").Scan(&asof); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	testdb.Exec(t, raw, "UPDATE accounts SET balance = 50, version = 2 WHERE id = 1") // then wrote 50
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	tx, err := fenced.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET SESSION system_versioning_asof = '"+asof+"'"); err != nil {
		t.Logf("SET system_versioning_asof refused: %v (then the claim below runs on a clean session)", err)
	}
	var id, balance int64
	err = tx.QueryRowContext(ctx, "SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE").Scan(&id, &balance)
	if err == nil && balance != 50 {
		t.Errorf("claim of row 1 returned balance %d; the row's current balance is 50 (the claim read the table as of %s, system_versioning_asof)", balance, asof)
	} else if err != nil {
		t.Logf("claim: %v", err)
	}
}

// TestWsrepOnRefused (fail-open on Galera clusters, G14). The planner
// refuses, on a pool with guarded tables, a change of each session setting that keeps
// the session's writes from the replicas — sql_log_bin (MySQL/MariaDB),
// skip_replication, server_id, gtid_domain_id (MariaDB) — because a failover then
// forgets acknowledged fenced writes and a stale holder's token wins again. MariaDB's
// Galera switch has the same effect and is a session variable too: with SET SESSION
// wsrep_on = OFF (or SET STATEMENT wsrep_on = 0 FOR …), the session's writes are applied
// on the local node only and never replicated to the cluster. The wrapper passes all
// three spellings, and its session check does not read wsrep_on either (the
// replication check only notes the *global* wsrep_on). On a Galera node the fenced
// writes that follow report success and are lost on failover.
//
// Right behaviour: add wsrep_on to protectedSettings (safe values 1/ON/TRUE), so that
// SET [SESSION] wsrep_on = OFF, SET STATEMENT wsrep_on = … FOR and the like are refused
// with ErrUnsupported, and read @@SESSION.wsrep_on in the session check where the
// global value is ON (a DSN parameter or init_connect can set it too).
func TestWsrepOnRefused(t *testing.T) {
	_, fenced := mariaPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	// Control: the analogous binary-log switch is refused.
	if _, err := fenced.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control: SET SESSION sql_log_bin = 0: %v; want ErrUnsupported", err)
	}
	for _, q := range []string{
		"SET SESSION wsrep_on = 0",
		"SET SESSION wsrep_on = OFF",
		"SET STATEMENT wsrep_on = 0 FOR SELECT 1",
	} {
		c, err := fenced.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ExecContext(ctx, q)
		c.Raw(func(any) error { return driver.ErrBadConn }) // drop the connection either way
		c.Close()
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s: %v; want ErrUnsupported, as for sql_log_bin and skip_replication (on a Galera node the session's writes are never replicated)", q, err)
		}
	}
}

// TestSystemVersioningAsOfDSNClaimReadsCurrentRows: F3 without any statement — the
// DSN parameter system_versioning_asof (go-sql-driver/mysql sends an unknown parameter
// as SET on every new connection) passes the session check, and every claim of the
// pool reads the table as of that time. Same right behaviour as
// TestSystemVersioningAsOfClaimReadsCurrentRows: the session check refuses a
// session whose system_versioning_asof is not DEFAULT (a SessionError), or the claim
// reads the current rows.
func TestSystemVersioningAsOfDSNClaimReadsCurrentRows(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		"INSERT INTO accounts VALUES (1, 10, 20, 1)")
	time.Sleep(20 * time.Millisecond)
	var asof string
	if err := raw.QueryRow("SELECT CAST(NOW(6) AS CHAR)").Scan(&asof); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	testdb.Exec(t, raw, "UPDATE accounts SET balance = 50, version = 2 WHERE id = 1")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&system_versioning_asof="+url.QueryEscape("'"+asof+"'"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	tx, err := fenced.BeginTx(ctx, nil)
	if err != nil {
		t.Logf("BeginTx: %v (a refused session is a right answer)", err)
		return
	}
	defer tx.Rollback()
	var id, balance int64
	err = tx.QueryRowContext(ctx, "SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE").Scan(&id, &balance)
	if err == nil && balance != 50 {
		t.Errorf("claim of row 1 through a pool whose DSN sets system_versioning_asof returned balance %d; the row's current balance is 50", balance)
	} else if err != nil {
		t.Logf("claim: %v", err)
	}
}
