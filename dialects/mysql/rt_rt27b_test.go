package mysql_test

// Red-team rt27b: a second catalogue of hostile SQL against the fenced MariaDB 10.11 pool.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt27bPool makes accounts (rows 1 and 2 at token 10, version 1) and returns the raw
// and the fenced pool.
func rt27bPool(t *testing.T) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1), (2, 20, 10, 1)")
	fenced = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	return raw, fenced
}

// TestRTrt27bIndexHintOverRefused (over-refusal, fixed for the UPDATE; the claim's
// refusal now names the hint). MariaDB accepts index hints (USE /
// FORCE / IGNORE INDEX) after the table of a single-table UPDATE and of a SELECT … FOR
// UPDATE; both are ordinary, legitimate SQL (a hint only steers the optimizer, it
// changes neither the rows selected nor what is written). The planner refuses both with
// ErrUnsupported and a misleading reason: the UPDATE as "a multi-table UPDATE whose
// table list it cannot read", the claim as "a locking SELECT over a join, grouping or
// set operation". The plain driver runs both.
//
// Right behaviour: fence the single-table UPDATE (the CASE assignments appended to its
// SET list; the hint can stay where it is) and claim the SELECT (the claim's UPDATE
// may take the hint too: MariaDB's UPDATE accepts it), as without the hint. At the
// least, the refusal should name the index hint rather than a join.
func TestRTrt27bIndexHintOverRefused(t *testing.T) {
	raw, fenced := rt27bPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	// The raw server takes both shapes.
	if _, err := raw.ExecContext(ctx, "UPDATE accounts USE INDEX (PRIMARY) SET balance = balance WHERE id = 2"); err != nil {
		t.Fatalf("raw UPDATE with an index hint: %v", err)
	}
	for _, q := range []string{
		"UPDATE accounts USE INDEX (PRIMARY) SET balance = 11 WHERE id = 1",
		"UPDATE accounts FORCE INDEX (PRIMARY) SET balance = 11 WHERE id = 1",
	} {
		if _, err := fenced.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v; want it fenced (token 20 is newer than the row's 10)", q, err)
		}
	}
	for _, q := range []string{
		"SELECT id, balance FROM accounts FORCE INDEX (PRIMARY) WHERE id = 1 FOR UPDATE",
		"SELECT a.id, a.balance FROM accounts a USE INDEX (PRIMARY) WHERE a.id = 1 FOR UPDATE",
	} {
		tx, err := fenced.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			// Decided: a claim with an index hint stays refused, typed and named as such
			// (its claiming UPDATE might select other rows under a LIMIT).
			if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "index hint") {
				t.Errorf("%s: %v; want the row claimed, or a refusal naming the index hint", q, err)
			}
			tx.Rollback()
			continue
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := tx.Commit(); err != nil || n != 1 {
			t.Errorf("%s: %d rows, commit %v; want 1 row claimed", q, n, err)
		}
	}
}

// TestRTrt27bQualifiedFencingColumnInInsertList (over-refusal, untyped error). The
// wrapper replaces the caller's own items for the fencing columns (an ORM that maps
// them, design G4: "A statement may assign the token or version column itself"): an
// INSERT whose column list names fence_token/version unqualified runs with the
// wrapper's token and version 1, and so does an UPDATE SET or an ON DUPLICATE KEY
// UPDATE item written table- or database-qualified (accounts.fence_token = …). MariaDB
// also accepts qualified names in an INSERT's column list (`INSERT INTO accounts (id,
// accounts.fence_token) …`), but there the planner does not see the fencing column: it
// keeps the caller's item, appends its own, and the server answers with the raw,
// untyped "Error 1110: Column 'fence_token' specified twice". Nothing is written (no
// fail-open), but a statement the wrapper fences when written unqualified fails with a
// driver error instead of being fenced (or refused with a typed error).
//
// Right behaviour: recognise a qualified column name (table., db.table., any quoting)
// in the INSERT column list as the fencing column and replace it, as for the
// unqualified name; at least refuse it with ErrUnsupported before sending.
func TestRTrt27bQualifiedFencingColumnInInsertList(t *testing.T) {
	raw, fenced := rt27bPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	// The unqualified spelling is replaced (control).
	if _, err := fenced.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (3, 1, 999, 999)"); err != nil {
		t.Fatalf("control, unqualified mapped columns: %v", err)
	}
	for i, q := range []string{
		"INSERT INTO accounts (id, balance, accounts.fence_token) VALUES (4, 1, 999)",
		"INSERT INTO accounts (id, balance, `accounts`.`version`) VALUES (5, 1, 999)",
	} {
		_, err := fenced.ExecContext(ctx, q)
		var tok, ver int64
		row := raw.QueryRowContext(ctx, "SELECT fence_token, version FROM accounts WHERE id = ?", 4+i)
		if rerr := row.Scan(&tok, &ver); rerr == nil {
			if tok != 20 || ver != 1 {
				t.Errorf("%s: stored token %d version %d; want 20 and 1", q, tok, ver)
			}
			continue
		}
		if err == nil || !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s: %v; want the row inserted with token 20 and version 1 (the item replaced, as unqualified), or at least ErrUnsupported", q, err)
		}
	}
}

// TestRTrt27bSystemVersioningAsOfClaimReadsHistory (wrong value returned by a claim).
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
func TestRTrt27bSystemVersioningAsOfClaimReadsHistory(t *testing.T) {
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

// TestRTrt27bWsrepOnNotProtected (fail-open on Galera clusters, G16). The planner
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
func TestRTrt27bWsrepOnNotProtected(t *testing.T) {
	_, fenced := rt27bPool(t)
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

// TestRTrt27bSystemVersioningAsOfDSNClaimReadsHistory: F3 without any statement — the
// DSN parameter system_versioning_asof (go-sql-driver/mysql sends an unknown parameter
// as SET on every new connection) passes the session check, and every claim of the
// pool reads the table as of that time. Same right behaviour as
// TestRTrt27bSystemVersioningAsOfClaimReadsHistory: the session check refuses a
// session whose system_versioning_asof is not DEFAULT (a SessionError), or the claim
// reads the current rows.
func TestRTrt27bSystemVersioningAsOfDSNClaimReadsHistory(t *testing.T) {
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
