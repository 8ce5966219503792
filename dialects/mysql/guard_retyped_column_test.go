package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The guard compares the token and the version as integers whatever the columns'
// declared types: after a migration on a plain connection retypes one VARCHAR (MySQL
// and MariaDB allow it; the triggers name the columns), a raw UPDATE lowering the
// token 10 -> 5, or the version 10 -> 9, is still refused ('5' < '10' is false as
// text), while one that advances both passes (red-team rt49d F1). schema.Check and
// the pools refuse the retyped table anyway; this is the guard's own line, for
// writers that bypass the wrapper.
func TestGuardComparesNumericallyAfterColumnRetyped(t *testing.T) {
	for _, c := range []struct{ name, alter, stale string }{
		{"Token", "ALTER TABLE accounts MODIFY fence_token VARCHAR(20) NOT NULL DEFAULT '0'",
			"UPDATE accounts SET balance = 77, fence_token = '5', version = version + 1 WHERE id = 1"},
		{"Version", "ALTER TABLE accounts MODIFY version VARCHAR(20) NOT NULL DEFAULT '0'",
			"UPDATE accounts SET balance = 77, version = '9' WHERE id = 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, raw := guardedAccountsRow(t)
			testdb.Exec(t, raw, c.alter)
			_, err := raw.ExecContext(ctx, c.stale)
			var b int64
			if qerr := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&b); qerr != nil {
				t.Fatal(qerr)
			}
			if b != 1 || !mysql.IsGuardError(err) {
				t.Fatalf("after %s, raw %s: err %v, balance %d; want the guard's refusal, balance 1", c.alter, c.stale, err, b)
			}
			if _, err := raw.ExecContext(ctx, "UPDATE accounts SET balance = 88, fence_token = 20, version = 11 WHERE id = 1"); err != nil {
				t.Fatalf("raw UPDATE advancing token and version after %s: %v", c.alter, err)
			}
		})
	}
}

// A guard installed by a release that compared the columns in their declared type
// (without the marker "fencedsql guard v2") is not the body this release installs:
// schema.Check names it one of an earlier version (a problem, with the statements
// that re-create it), and after its Fix the table is clean. The pools
// refuse the table until then, like any changed guard.
func TestGuardWithoutNumericComparisonReported(t *testing.T) {
	ctx, raw := guardedAccountsRow(t)
	// The previous release's guard: the same text without the marker and the CASTs.
	old := strings.NewReplacer("  /* fencedsql guard v2 */\n", "", "CAST(", "", " AS SIGNED)", "")
	for _, s := range mysql.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version") {
		if strings.Contains(s, "fencedsql_guard_") {
			testdb.Exec(t, raw, old.Replace(s))
		}
	}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() || !strings.Contains(strings.Join(reps[0].Problems, "; "), "installed by an earlier version") || len(reps[0].Fix) == 0 {
		t.Fatalf("the previous guard: problems %q fix %q; want it reported with its re-creation", reps[0].Problems, reps[0].Fix)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err = schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() {
		t.Fatalf("after the fix: %v %q", err, reps[0].Problems)
	}
}

// guardedAccountsRow creates accounts with row 1 (balance 1, token 10, version 10) and
// installs its guards (schema.Check's Fix); it returns a context and a one-connection
// plain pool.
func guardedAccountsRow(t *testing.T) (context.Context, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", testdb.MySQL(t),
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 1, 10, 10)")
	raw.SetMaxOpenConns(1)
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	return ctx, raw
}
