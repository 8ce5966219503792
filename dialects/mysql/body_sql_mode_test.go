package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A stored body is parsed under the sql_mode it was created with (TRIGGERS.SQL_MODE,
// ROUTINES.SQL_MODE, EVENTS.SQL_MODE), not the checking session's: under
// NO_BACKSLASH_ESCAPES '\' is a whole string, under ANSI_QUOTES "\" a whole
// identifier, while the default reading takes the quote after the backslash for an
// escaped one, so a statement after it stands in what the default reading takes for
// a string (red-team rt47a F1, its MySQL/MariaDB side). Every body reader judges the
// default reading and the stored mode's (bodyreadings.go) and keeps the worse verdict.

// createUnderMode runs stmts on one connection whose sql_mode is mode.
func createUnderMode(t *testing.T, dsn, mode string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	db := testdb.Open(t, "mysql", dsn)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range append([]string{"SET SESSION sql_mode = CONCAT_WS(',', @@SESSION.sql_mode, '" + mode + "')"}, stmts...) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestBodySQLModeTriggerHidesTombstoneWrite: a trigger on another table created under
// NO_BACKSLASH_ESCAPES whose DELETE of the tombstone table stands after '\' is a guard
// writer (the default reading took it for a string).
func TestBodySQLModeTriggerHidesTombstoneWrite(t *testing.T) {
	dsn, _, _ := gtInstall(t, "CREATE TABLE audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, msg TEXT) ENGINE=InnoDB")
	createUnderMode(t, dsn, "NO_BACKSLASH_ESCAPES",
		"CREATE TRIGGER audit_erase AFTER INSERT ON audit FOR EACH ROW BEGIN SET @a = '\\'; DELETE FROM fencedsql_tomb_accounts; -- '\nEND")
	// The server runs the hidden DELETE: a tombstone is gone after a write to audit.
	raw := testdb.Open(t, "mysql", dsn)
	testdb.Exec(t, raw, "INSERT INTO fencedsql_tomb_accounts (id, fence_token, deleted_at) VALUES (7, 1, NOW(6))", "INSERT INTO audit (msg) VALUES ('x')")
	if n := countRows(t, raw, "SELECT COUNT(*) FROM fencedsql_tomb_accounts"); n != 0 {
		t.Fatalf("the trigger kept %d tombstones: its DELETE did not run", n)
	}
	gtRefusedThenFixed(t, dsn, 100, "INSERT INTO accounts (id, balance) VALUES (1, 1)", "guard writer", "audit_erase")
}

// TestBodySQLModeRoutineHidesTableWrite: a procedure created under ANSI_QUOTES whose
// UPDATE of accounts stands after "\" (an identifier there, a string with an escaped
// quote in the default reading) is a routine door.
func TestBodySQLModeRoutineHidesTableWrite(t *testing.T) {
	dsn, _, _ := gtInstall(t)
	createUnderMode(t, dsn, "ANSI_QUOTES",
		"CREATE PROCEDURE zap() BEGIN SELECT 1 AS \"\\\" INTO @z; UPDATE accounts SET balance = 0, version = version + 1; -- \"\nEND")
	// The server runs the hidden UPDATE.
	raw := testdb.Open(t, "mysql", dsn)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance) VALUES (3, 5)", "CALL zap()")
	if n := countRows(t, raw, "SELECT COUNT(*) FROM accounts WHERE balance = 0"); n != 1 {
		t.Fatalf("after CALL zap(): %d rows with balance 0, want 1 (its UPDATE did not run)", n)
	}
	rep := gtReport(t, dsn)
	for _, p := range rep.Problems {
		if containsAll(p, "routine", "zap") {
			return
		}
	}
	t.Fatalf("schema.Check problems %q: want the procedure zap reported as a routine door", rep.Problems)
}

// TestBodySQLModeOtherTriggerAndEvent: the same hiding in a trigger on another table
// that writes accounts (NO_BACKSLASH_ESCAPES) and in an event that deletes tombstones
// (ANSI_QUOTES, and both modes together): each is reported.
func TestBodySQLModeOtherTriggerAndEvent(t *testing.T) {
	dsn, _, _ := gtInstall(t, "CREATE TABLE audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, msg TEXT) ENGINE=InnoDB")
	createUnderMode(t, dsn, "NO_BACKSLASH_ESCAPES",
		"CREATE TRIGGER audit_zap AFTER INSERT ON audit FOR EACH ROW BEGIN SET @a = '\\'; UPDATE accounts SET balance = 0, version = version + 1; -- '\nEND")
	createUnderMode(t, dsn, "ANSI_QUOTES",
		"CREATE EVENT ev_erase ON SCHEDULE EVERY 1 HOUR DISABLE DO BEGIN SELECT 1 AS \"\\\" INTO @z; DELETE FROM fencedsql_tomb_accounts; -- \"\nEND")
	createUnderMode(t, dsn, "ANSI_QUOTES,NO_BACKSLASH_ESCAPES",
		"CREATE EVENT ev_erase2 ON SCHEDULE EVERY 1 HOUR DISABLE DO BEGIN SELECT '\\' AS \"\\\" INTO @z; DELETE FROM fencedsql_tomb_accounts; -- \"\nEND")
	problems := strings.Join(gtReport(t, dsn).Problems, "\n")
	for _, want := range []string{"audit_zap", "ev_erase ", "ev_erase2"} {
		if !strings.Contains(problems, want) {
			t.Errorf("schema.Check problems %q: want %s reported", problems, want)
		}
	}
}

// TestBodySQLModeDefaultEscapesNoDoor: a default-mode procedure whose string holds an
// escaped quote and that only reads accounts is no door (its body is not judged under
// a mode it was not stored with).
func TestBodySQLModeDefaultEscapesNoDoor(t *testing.T) {
	dsn, raw, _ := gtInstall(t)
	testdb.Exec(t, raw, "CREATE PROCEDURE peek() BEGIN SELECT COUNT(*) INTO @n FROM accounts WHERE balance = LENGTH('it\\'s'); END")
	if probs := gtReport(t, dsn).Problems; len(probs) != 0 {
		t.Fatalf("schema.Check problems %q: want none", probs)
	}
}

func countRows(t *testing.T, db *sql.DB, q string) (n int) {
	t.Helper()
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
