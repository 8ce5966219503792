package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFenceFunctionReplacedKeepingMarker (red-team rt59a F1, fail-open): MariaDB's
// one-statement fenced DELETE calls the fence function fencedsql_fence_<t>, which
// DeleteFenceQuery trusted by name and COMMENT alone. A function re-created by the
// routines' owner with the same COMMENT and a body that no longer compares the token
// left schema.Check OK, and a fresh pool's DELETE under token 20 removed a row written
// under 50. The fence function is now compared whole (fenceFunction, fencefunc.go):
// Check reports it and the lazy check refuses the table. Generator: the replacement
// keeps or drops each of the function's three checks.
func TestFenceFunctionReplacedKeepingMarker(t *testing.T) {
	const installSig = "(cur BIGINT, tok BIGINT, fl BIGINT) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER"
	// Each replacement: its signature and characteristics ("" the install's) and its
	// body ("" the install's).
	cases := map[string][2]string{
		"returnsOne":       {"", "RETURN 1"},
		"floorAndMarkOnly": {"", "BEGIN IF fl IS NULL OR tok < fl THEN SIGNAL SQLSTATE '45000'; END IF; IF NOT (SUBSTRING_INDEX(@fencedsql_delete_mark, '/', -1) <=> CONCAT(@@timestamp)) THEN SIGNAL SQLSTATE 'FNCD3'; END IF; RETURN 1; END"},
		"tokenPlusOne":     {"", "BEGIN IF cur IS NULL OR cur > tok + 100 THEN SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''fence_token'' cannot be null'; END IF; RETURN 1; END"},
		"paramsSwapped":    {"(tok BIGINT, cur BIGINT, fl BIGINT) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER", ""},
		"doubleParams":     {"(cur DOUBLE, tok DOUBLE, fl DOUBLE) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER", ""},
		"securityDefiner":  {"(cur BIGINT, tok BIGINT, fl BIGINT) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY DEFINER", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			admin, dsn := replaceSetup(t)
			testdb.Exec(t, admin, "UPDATE ledger SET fence_token = 50, version = version + 1 WHERE id = 1")
			var comment, installed string
			if err := admin.QueryRow("SELECT ROUTINE_COMMENT, ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'fencedsql_fence_ledger'").Scan(&comment, &installed); err != nil {
				t.Fatalf("fence function: %v", err)
			}
			sig, body := c[0], c[1]
			if sig == "" {
				sig = installSig
			}
			if body == "" {
				body = installed
			}
			testdb.Exec(t, admin, "DROP FUNCTION fencedsql_fence_ledger",
				"CREATE FUNCTION fencedsql_fence_ledger"+sig+" COMMENT '"+comment+"' "+body)
			rep := triggerNamesReport(t, admin, "ledger")
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
			_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1")
			var n int
			if qerr := admin.QueryRow("SELECT COUNT(*) FROM ledger WHERE id = 1").Scan(&n); qerr != nil {
				t.Fatal(qerr)
			}
			if n == 0 || rep.OK() {
				t.Fatalf("fence function re-created with its marker as %s %q: schema.Check OK=%v problems=%q; stale DELETE (token 20) of a row at token 50: err=%v, row left=%d (want Check to report the changed fence function and the DELETE refused)",
					sig, body, rep.OK(), rep.Problems, err, n)
			}
			if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("stale DELETE: %v, want ErrFenced or ErrSchema", err)
			}
			// The Fix converges: Check OK again, and the stale DELETE is fenced.
			testdb.Exec(t, admin, rep.Fix...)
			if again := triggerNamesReport(t, admin, "ledger"); !again.OK() {
				t.Fatalf("after the Fix: Check problems %q", again.Problems)
			}
			fresh := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
			if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("after the Fix, stale DELETE: %v, want ErrFenced", err)
			}
		})
	}
}
