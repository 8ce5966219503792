package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The REPLACE mark (dialects/mysql/replacemark.go, red-team rt37a F1): a REPLACE by
// the newest holder that deletes a row of another key through a secondary UNIQUE index
// records that row's tombstone at the REPLACE's token, so an older holder cannot put
// the key back, on any connection.

const replaceLedger = "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, email VARCHAR(40) NULL UNIQUE, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"

// replaceSetup is a guarded and tombstoned ledger whose rows 1..3 carry token 10, row 3
// the e-mail x@example.com; the admin connection is a plain one (one connection).
func replaceSetup(t *testing.T) (*sql.DB, string) {
	t.Helper()
	admin, dsn := triggerNamesSetup(t, "ledger", replaceLedger)
	if rep := triggerNamesReport(t, admin, "ledger"); !rep.OK() || !rep.Guarded || !rep.Tombstoned {
		t.Fatalf("ledger not guarded: %+v", rep)
	}
	testdb.Exec(t, admin, "UPDATE ledger SET email = 'x@example.com', version = version + 1 WHERE id = 3")
	return admin, dsn
}

func tombstoneToken(t *testing.T, db *sql.DB, id int) int64 {
	t.Helper()
	var tok int64
	if err := db.QueryRow("SELECT fence_token FROM fencedsql_tomb_ledger WHERE id = ?", id).Scan(&tok); err != nil {
		t.Fatalf("tombstone of key %d: %v", id, err)
	}
	return tok
}

// wantStaleReinsertRefused inserts key id under token 30 on db and wants the tombstone
// guard's refusal (1048 on the token column) and no row.
func wantStaleReinsertRefused(t *testing.T, db *sql.DB, id int) {
	t.Helper()
	_, err := db.Exec("INSERT INTO ledger (id, balance, fence_token, version) VALUES (?, 666, 30, 1)", id)
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1048 {
		t.Errorf("stale re-insert of key %d under token 30: err = %v, want the tombstone guard's 1048", id, err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM ledger WHERE id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("key %d, deleted under token 50, came back under token 30", id)
	}
}

// TestReplaceThroughUniqueIndexRecordsDisplacingToken: each statement that replaces
// (REPLACE … VALUES, REPLACE … SELECT, LOAD DATA … REPLACE), run on a plain connection
// by holder 50 with row 5 onto the e-mail of row 3 (token 10), records key 3 at 50,
// and a holder between the two (30) cannot re-insert it.
func TestReplaceThroughUniqueIndexRecordsDisplacingToken(t *testing.T) {
	gomysql.RegisterReaderHandler("fencedsql_replace_row", func() io.Reader {
		return strings.NewReader("5\tx@example.com\t1\t50\t1\n")
	})
	defer gomysql.DeregisterReaderHandler("fencedsql_replace_row")
	for _, tc := range []struct{ name, stmt string }{
		{"REPLACE VALUES", "REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (5, 'x@example.com', 1, 50, 1)"},
		{"REPLACE SELECT", "REPLACE INTO ledger (id, email, balance, fence_token, version) SELECT 5, 'x@example.com', 1, 50, 1 FROM DUAL"},
		{"LOAD DATA REPLACE", "LOAD DATA LOCAL INFILE 'Reader::fencedsql_replace_row' REPLACE INTO TABLE ledger (id, email, balance, fence_token, version)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin, _ := replaceSetup(t)
			if _, err := admin.Exec(tc.stmt); err != nil {
				t.Fatalf("%s under token 50: %v", tc.name, err)
			}
			if tok := tombstoneToken(t, admin, 3); tok != 50 {
				t.Errorf("key 3, displaced by a write under token 50, recorded at %d", tok)
			}
			wantStaleReinsertRefused(t, admin, 3)
		})
	}
}

// TestReplaceDisplacingTwoRowsRecordsBoth: one row that collides with one row on the
// primary key and another on the e-mail records both at its token when greater.
func TestReplaceDisplacingTwoRowsRecordsBoth(t *testing.T) {
	admin, _ := replaceSetup(t)
	testdb.Exec(t, admin, "REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (2, 'x@example.com', 1, 50, 1)")
	if a, b := tombstoneToken(t, admin, 2), tombstoneToken(t, admin, 3); a != 50 || b != 50 {
		t.Errorf("tombstones of keys 2 and 3 = %d, %d, want 50 each", a, b)
	}
	wantStaleReinsertRefused(t, admin, 3)
	// A REPLACE under an older token than the row it displaces records the row's own.
	testdb.Exec(t, admin, "UPDATE ledger SET email = 'y@example.com', fence_token = 70, version = version + 1 WHERE id = 1",
		"REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (6, 'y@example.com', 1, 60, 1)")
	if tok := tombstoneToken(t, admin, 1); tok != 70 {
		t.Errorf("key 1 (token 70) displaced under token 60: recorded at %d, want 70", tok)
	}
}

// TestReplaceWaitingForConcurrentRowRecordsItsToken: a REPLACE that waits for another
// transaction's row on the e-mail index, and deletes it once that commits, records it at
// the REPLACE's token (the mark travels with the deletion, not with a read before it).
func TestReplaceWaitingForConcurrentRowRecordsItsToken(t *testing.T) {
	ctx := context.Background()
	admin, dsn := replaceSetup(t)
	testdb.Exec(t, admin, "UPDATE ledger SET email = NULL, version = version + 1 WHERE id = 3")
	other := testdb.Open(t, "mysql", dsn)
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("UPDATE ledger SET email = 'x@example.com', version = version + 1 WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := admin.Exec("REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (5, 'x@example.com', 1, 50, 1)")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the REPLACE did not wait for the uncommitted row: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("REPLACE under token 50: %v", err)
	}
	if tok := tombstoneToken(t, admin, 3); tok != 50 {
		t.Errorf("key 3, displaced after a wait by a write under token 50, recorded at %d", tok)
	}
	wantStaleReinsertRefused(t, admin, 3)
}

// TestReplaceMarkNotReadByLaterStatements: the mark names its statement; a DELETE on
// the same connection after an INSERT, or after an INSERT that failed on a duplicate
// key, records the row's own token (no over-refusal of ordinary statements).
func TestReplaceMarkNotReadByLaterStatements(t *testing.T) {
	admin, _ := replaceSetup(t)
	testdb.Exec(t, admin, "INSERT INTO ledger (id, balance, fence_token, version) VALUES (7, 0, 50, 1)",
		"DELETE FROM ledger WHERE id = 1")
	if _, err := admin.Exec("INSERT INTO ledger (id, email, balance, fence_token, version) VALUES (8, 'x@example.com', 0, 60, 1)"); err == nil {
		t.Fatal("a duplicate e-mail was inserted")
	}
	testdb.Exec(t, admin, "INSERT IGNORE INTO ledger (id, email, balance, fence_token, version) VALUES (9, 'x@example.com', 0, 60, 1)",
		"DELETE FROM ledger WHERE id = 2")
	if a, b := tombstoneToken(t, admin, 1), tombstoneToken(t, admin, 2); a != 10 || b != 10 {
		t.Errorf("keys 1 and 2 (token 10) deleted after INSERTs under 50 and 60: recorded at %d, %d, want 10", a, b)
	}
}

// TestReplaceMarkLostRefusesTheRow: a user's trigger that sets timestamp while a
// REPLACE deletes the row it displaces makes the tombstone miss the mark; the INSERT
// trigger refuses the row (the guard's SQLSTATE), and nothing changes. A plain INSERT
// under the same trigger (nothing deleted) is not refused.
func TestReplaceMarkLostRefusesTheRow(t *testing.T) {
	admin, _ := replaceSetup(t)
	testdb.Exec(t, admin, "CREATE TRIGGER audit_ts BEFORE DELETE ON ledger FOR EACH ROW SET timestamp = 1234567")
	_, err := admin.Exec("REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (5, 'x@example.com', 1, 50, 1)")
	if !mysql.IsGuardError(err) || !strings.Contains(err.Error(), "lost its token") {
		t.Fatalf("REPLACE whose displaced row's tombstone missed the mark: err = %v, want the guard's refusal", err)
	}
	var rows, tombs int
	if err := admin.QueryRow("SELECT (SELECT COUNT(*) FROM ledger WHERE id IN (3, 5)), (SELECT COUNT(*) FROM fencedsql_tomb_ledger)").Scan(&rows, &tombs); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || tombs != 0 {
		t.Errorf("the refused REPLACE changed something: rows 3 and 5: %d, tombstones: %d", rows, tombs)
	}
	testdb.Exec(t, admin, "SET timestamp = DEFAULT", "INSERT INTO ledger (id, email, balance, fence_token, version) VALUES (6, 'z@example.com', 1, 50, 1)")
}

// TestReplaceMarkTriggerIsPartOfTheGuard: the REPLACE mark's trigger is the tombstone
// guard's: schema.Check reports the guard not installed without it (its Fix re-creates
// it), and a trigger of its name with another body — one that assigns the token, as a
// BEFORE INSERT trigger may — is a door that schema.Check reports and the lazy check
// refuses, while the fenced pool writes beside the trigger as installed.
func TestReplaceMarkTriggerIsPartOfTheGuard(t *testing.T) {
	ctx := context.Background()
	admin, dsn := replaceSetup(t)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO ledger (id, balance) VALUES (10, 1)"); err != nil {
		t.Fatalf("fenced INSERT beside the guard as installed: %v", err)
	}

	testdb.Exec(t, admin, "DROP TRIGGER fencedsql_tombrep_ledger")
	rep := triggerNamesReport(t, admin, "ledger")
	if rep.Tombstoned || !strings.Contains(strings.Join(rep.Fix, "\n"), "fencedsql_tombrep_ledger` BEFORE INSERT ON") {
		t.Fatalf("without its REPLACE mark the tombstone guard is reported installed: Tombstoned=%v fix=%q", rep.Tombstoned, rep.Fix)
	}
	testdb.Exec(t, admin, rep.Fix...)
	if rep := triggerNamesReport(t, admin, "ledger"); !rep.OK() || !rep.Tombstoned {
		t.Fatalf("after the Fix: %+v", rep)
	}

	testdb.Exec(t, admin, "DROP TRIGGER fencedsql_tombrep_ledger",
		"CREATE TRIGGER fencedsql_tombrep_ledger BEFORE INSERT ON ledger FOR EACH ROW SET NEW.fence_token = 99")
	rep = triggerNamesReport(t, admin, "ledger")
	if rep.OK() || !strings.Contains(strings.Join(rep.Problems, " "), "fencedsql_tombrep_ledger") {
		t.Errorf("a forged REPLACE-mark trigger: schema.Check problems = %q, want it reported", rep.Problems)
	}
	fresh := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO ledger (id, balance) VALUES (11, 1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("fenced INSERT beside a forged REPLACE-mark trigger: err = %v, want ErrSchema", err)
	}
}

// TestReplaceMarkOfNamesakeInOtherDatabase (red-team rt39b F2): two guarded tables
// named ledger in two databases share the REPLACE mark's variable name. A user's
// BEFORE INSERT trigger on A.ledger copies the row about to be displaced into B.ledger,
// whose mark trigger overwrote the mark with that row's token (10), and A's tombstone
// recorded key 3 at 10 instead of 50. The mark now names its trigger's database: A's
// tombstone trigger reads no mark of its own, and the REPLACE is refused (the row's
// mark was lost) or records 50; either way holder 30 cannot put key 3 back.
func TestReplaceMarkOfNamesakeInOtherDatabase(t *testing.T) {
	adminA, _ := replaceSetup(t)
	adminB, _ := replaceSetup(t)
	var dbB string
	if err := adminB.QueryRow("SELECT DATABASE()").Scan(&dbB); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, adminA, "CREATE TRIGGER archive BEFORE INSERT ON ledger FOR EACH ROW "+
		"INSERT INTO `"+dbB+"`.ledger (id, email, balance, fence_token, version) "+
		"SELECT id + 100, NULL, balance, fence_token, version FROM ledger WHERE email = NEW.email")
	_, err := adminA.Exec("REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (5, 'x@example.com', 1, 50, 1)")
	if err == nil {
		if tok := tombstoneToken(t, adminA, 3); tok != 50 {
			t.Errorf("key 3, displaced by a write under token 50, recorded at %d", tok)
		}
		wantStaleReinsertRefused(t, adminA, 3)
		return
	}
	var n int
	if qerr := adminA.QueryRow("SELECT COUNT(*) FROM ledger WHERE id = 3 AND fence_token = 10").Scan(&n); qerr != nil || n != 1 {
		t.Fatalf("the refused REPLACE (%v) changed key 3: %d rows, %v", err, n, qerr)
	}
	t.Logf("REPLACE refused: %v", err)
}
