package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// reported reports whether one of problems names object.
func reported(problems []string, object string) bool {
	for _, p := range problems {
		if strings.Contains(p, object) {
			return true
		}
	}
	return false
}

// TestOtherDatabaseLiteralDynamicSQLNotReported: a procedure or event in another
// database whose dynamic SQL is a literal naming its own tables (spelled like acc's
// guard tables: that database's, not acc's), and the server's own INVOKER routines in
// sys and mysql, are not reported for acc. (Another database's unreadable dynamic SQL
// is a Known open finding: red-team rt48b F1.)
func TestOtherDatabaseLiteralDynamicSQLNotReported(t *testing.T) {
	for _, c := range []struct{ name, create, drop string }{
		{"ProcLiteralOwnTable", "CREATE PROCEDURE fix48b_other.fix48b_run() BEGIN PREPARE s FROM 'DELETE FROM fencedsql_tomb_acc'; EXECUTE s; END", "DROP PROCEDURE IF EXISTS fix48b_other.fix48b_run"},
		{"EventLiteralOwnTable", "CREATE EVENT fix48b_other.fix48b_run ON SCHEDULE EVERY 1 HOUR DISABLE DO EXECUTE IMMEDIATE 'UPDATE fencedsql_floor SET floor = 0'", "DROP EVENT IF EXISTS fix48b_other.fix48b_run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, admin, _ := absentMy(t)
			if p := accCheckProblems(t, admin); reported(p, "sys.") || reported(p, "mysql.") {
				t.Fatalf("the server's own routines reported: %q", p)
			}
			testdb.Exec(t, admin, "CREATE DATABASE IF NOT EXISTS fix48b_other")
			t.Cleanup(func() { admin.Exec(c.drop); admin.Exec("DROP DATABASE IF EXISTS fix48b_other") }) //nolint:errcheck
			testdb.Exec(t, admin, c.drop, c.create)
			if p := accCheckProblems(t, admin); reported(p, "fix48b_run") {
				t.Fatalf("%s reported for acc: %q", c.create, p)
			}
		})
	}
}

// tombstones counts acc's tombstones.
func tombstones(t *testing.T, admin *sql.DB) int {
	t.Helper()
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM fencedsql_tomb_acc").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// callerPreparedCall runs, on one connection of admin, a tombstone of acc's key 48,
// the statements prep (the caller's preparation), and CALL fix48b_p(); it returns
// acc's tombstones left.
func callerPreparedCall(t *testing.T, admin *sql.DB, prep ...string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	qs := append([]string{"INSERT INTO acc (id, fence_token) VALUES (48, 5)", "DELETE FROM acc WHERE id = 48"}, prep...)
	for _, q := range append(qs, "CALL fix48b_p()") {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return tombstones(t, admin)
}

// TestExecuteOfCallersStatementIsDoor: a procedure that EXECUTEs a statement name it
// also PREPAREs from a harmless literal — but EXECUTEs it before the PREPARE, or with
// the PREPARE in a branch that does not run or after a LEAVE — runs the statement its
// CALLER prepared (prepared statements are the session's) with its DEFINER's rights:
// the caller's PREPARE s FROM 'DELETE FROM fencedsql_tomb_acc' deletes acc's
// tombstones through it. schema.Check reports it (red-team rt48b F2).
func TestExecuteOfCallersStatementIsDoor(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		{"ExecuteBeforePrepare", "BEGIN EXECUTE fix48b_s; PREPARE fix48b_s FROM 'SELECT 1'; END"},
		{"PrepareInDeadBranch", "BEGIN IF 1 = 0 THEN PREPARE fix48b_s FROM 'SELECT 1'; END IF; EXECUTE fix48b_s; END"},
		{"PrepareAfterLeave", "lbl: BEGIN EXECUTE fix48b_s; LEAVE lbl; PREPARE fix48b_s FROM 'SELECT 1'; END"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, admin, _ := absentMy(t)
			testdb.Exec(t, admin, "CREATE PROCEDURE fix48b_p() SQL SECURITY DEFINER "+c.body)
			t.Logf("tombstones after CALL: %d", callerPreparedCall(t, admin, "PREPARE fix48b_s FROM 'DELETE FROM fencedsql_tomb_acc'"))
			if p := accCheckProblems(t, admin); !reported(p, "fix48b_p") {
				t.Fatalf("%s: not reported by schema.Check (problems: %q)", c.body, p)
			}
		})
	}
}

// TestPrepareAfterConditionNamedXAIsDoor: a handler for a condition the body names xa
// (or deallocate) has a PREPARE as its action — DECLARE CONTINUE HANDLER FOR xa
// PREPARE s FROM @q — which was taken for XA PREPARE (DEALLOCATE PREPARE) and skipped;
// SIGNAL xa re-prepares s from the caller's variable and EXECUTE s ran it with the
// DEFINER's rights, deleting acc's tombstones. schema.Check reports it (red-team
// rt48b F3).
func TestPrepareAfterConditionNamedXAIsDoor(t *testing.T) {
	for _, cond := range []string{"xa", "deallocate"} {
		t.Run(cond, func(t *testing.T) {
			_, admin, _ := absentMy(t)
			testdb.Exec(t, admin, "CREATE PROCEDURE fix48b_p() SQL SECURITY DEFINER BEGIN "+
				"DECLARE "+cond+" CONDITION FOR SQLSTATE '45048'; "+
				"DECLARE CONTINUE HANDLER FOR "+cond+" PREPARE fix48b_s FROM @fix48b_q; "+
				"PREPARE fix48b_s FROM 'SELECT 1'; SIGNAL "+cond+"; EXECUTE fix48b_s; END")
			t.Logf("tombstones after CALL: %d", callerPreparedCall(t, admin, "SET @fix48b_q = 'DELETE FROM fencedsql_tomb_acc'"))
			if p := accCheckProblems(t, admin); !reported(p, "fix48b_p") {
				t.Fatalf("not reported by schema.Check (problems: %q)", p)
			}
		})
	}
}
