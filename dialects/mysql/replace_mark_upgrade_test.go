package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestReplaceMarkUpgradedFromPrevious: a tombstone guard whose REPLACE mark is the
// previous version's (mark version 1: the database's name converted to ascii, which
// failed in a database named with a non-ASCII letter; mark.go) is reported by
// schema.Check as not installed, with a Fix, and not as a changed guard trigger (a
// door); until the Fix a running pool keeps writing beside it and stale writes and
// resurrections stay refused (a stale UPDATE, a stale re-insert of a key the pool
// deleted, of a key a REPLACE displaced). The Fix, run statement by statement while a
// plain connection REPLACEs and a pool deletes after each statement, leaves no moment
// in which a displaced or deleted key is recorded below its deleter's token: each such
// write either fails (the mixed versions' REPLACE: GuardSQLState, undone) or records
// the key so that holder 30 cannot put it back. After the Fix the guard is this
// version's (HEX(DATABASE())) and schema.Check reports nothing.
func TestReplaceMarkUpgradedFromPrevious(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, dsn := replaceSetup(t)
	testdb.Exec(t, admin, mysql.PreviousTombstoneTriggerDDL(dialect.TableName{Name: "ledger"}, []dialect.KeyColumn{{Name: "id", Type: "int(11)"}}, "fence_token")...)
	repBody := func() string {
		var body string
		if err := admin.QueryRowContext(ctx, "SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = 'fencedsql_tombrep_ledger'").Scan(&body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	if b := repBody(); strings.Contains(b, "HEX(DATABASE())") || !strings.Contains(b, "'/', DATABASE())") {
		t.Fatalf("the previous REPLACE mark is not installed: %s", b)
	}

	rep := triggerNamesReport(t, admin, "ledger")
	if rep.Tombstoned || !strings.Contains(strings.Join(rep.Fix, "\n"), "fencedsql_tombrep_ledger` BEFORE INSERT ON") {
		t.Fatalf("the previous version's tombstone guard: Tombstoned=%v Fix=%q, want it reported with a Fix re-creating the REPLACE mark", rep.Tombstoned, rep.Fix)
	}
	for _, p := range rep.Problems {
		if strings.Contains(p, "not the body this version installs") {
			t.Errorf("the previous version's trigger reported as a changed guard trigger (a door): %s", p)
		}
	}

	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
	exec := func(tok uint64, q string, args ...any) error {
		_, err := fenced.ExecContext(fencedsql.WithToken(ctx, tok), q, args...)
		return err
	}
	count := func(q string, args ...any) int {
		var n int
		if err := admin.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Beside the previous version: the pool writes, and refuses the stale.
	if err := exec(50, "UPDATE ledger SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("fenced UPDATE beside the previous version's tombstone guard: %v", err)
	}
	if err := exec(30, "UPDATE ledger SET balance = 666 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale UPDATE (30) after 50 beside the previous version: err %v, want ErrFenced", err)
	}
	if err := exec(50, "DELETE FROM ledger WHERE id = 2"); err != nil {
		t.Fatalf("fenced DELETE beside the previous version's tombstone guard: %v", err)
	}
	if err := exec(30, "INSERT INTO ledger (id, balance) VALUES (2, 666)"); !errors.Is(err, fencedsql.ErrFenced) || count("SELECT COUNT(*) FROM ledger WHERE id = 2") != 0 {
		t.Errorf("stale re-insert (30) of key 2 deleted under 50, beside the previous version: err %v, want ErrFenced and no row", err)
	}
	testdb.Exec(t, admin, "REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (5, 'x@example.com', 1, 50, 1)")
	if tok := tombstoneToken(t, admin, 3); tok != 50 {
		t.Errorf("key 3, displaced by a REPLACE under 50 beside the previous version, recorded at %d", tok)
	}
	wantStaleReinsertRefused(t, admin, 3)

	// The Fix, one statement at a time (as -apply runs it), and after each: a REPLACE
	// under 60 displacing a row of token 10, then the pool deleting a row under 60.
	conn := testdb.Open(t, "mysql", dsn) // a plain connection beside the installer's
	refused := 0
	for i, stmt := range rep.Fix {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("Fix statement %d %s: %v", i, stmt, err)
		}
		old, displacer, email := 1000+i, 2000+i, fmt.Sprintf("e%d@example.com", i)
		if _, err := conn.ExecContext(ctx, "INSERT INTO ledger (id, email, balance, fence_token, version) VALUES (?, ?, 1, 10, 1)", old, email); err != nil {
			t.Fatalf("after Fix statement %d: a new row %d under 10: %v", i, old, err)
		}
		if _, err := conn.ExecContext(ctx, "REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (?, ?, 1, 60, 1)", displacer, email); err != nil {
			refused++
			t.Logf("after Fix statement %d (%.60s…): the REPLACE displacing row %d refused: %v", i, stmt, old, err)
			if count("SELECT COUNT(*) FROM ledger WHERE id = ? AND fence_token = 10", old) != 1 || count("SELECT COUNT(*) FROM ledger WHERE id = ?", displacer) != 0 {
				t.Errorf("after Fix statement %d: the refused REPLACE was not undone", i)
			}
		} else {
			if tok := tombstoneToken(t, admin, old); tok < 60 {
				t.Errorf("after Fix statement %d (%s): key %d, displaced by a REPLACE under 60, recorded at %d", i, stmt, old, tok)
			}
			wantStaleReinsertRefused(t, admin, old)
		}
		gone := old
		if count("SELECT COUNT(*) FROM ledger WHERE id = ?", old) == 0 {
			gone = displacer
		}
		if err := exec(60, "DELETE FROM ledger WHERE id = ?", gone); err != nil {
			// A pool may see the shadow trigger and refuse the table for a moment.
			t.Logf("after Fix statement %d: the fenced DELETE of key %d refused: %v", i, gone, err)
			continue
		}
		err := exec(30, "INSERT INTO ledger (id, balance) VALUES (?, 666)", gone)
		if !errors.Is(err, fencedsql.ErrFenced) || count("SELECT COUNT(*) FROM ledger WHERE id = ?", gone) != 0 {
			t.Errorf("after Fix statement %d (%s): stale re-insert (30) of key %d deleted under 60: err %v, want ErrFenced and no row", i, stmt, gone, err)
		}
	}
	t.Logf("%d of %d REPLACEs refused during the upgrade", refused, len(rep.Fix))

	if rep := triggerNamesReport(t, admin, "ledger"); !rep.OK() || !rep.Tombstoned || len(rep.Fix) > 0 {
		t.Fatalf("after the Fix: %+v", rep)
	}
	if b := repBody(); !strings.Contains(b, "HEX(DATABASE())") {
		t.Errorf("after the Fix the REPLACE mark is not this version's: %s", b)
	}
	testdb.Exec(t, admin, "INSERT INTO ledger (id, email, balance, fence_token, version) VALUES (7, 'y@example.com', 1, 10, 1)",
		"REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (8, 'y@example.com', 1, 50, 1)")
	if tok := tombstoneToken(t, admin, 7); tok != 50 {
		t.Errorf("after the Fix: key 7, displaced by a REPLACE under 50, recorded at %d", tok)
	}
}
