package postgres_test

// DELETEs run as two statements (no guard installed) keyed by row locator: the
// fencing UPDATE records the ctids it wrote and the DELETE is restricted to them.
// Each condition below selects differently the second time — an aggregate over a
// column a trigger maintains, a function reading clock_timestamp() — with a row the
// same holder stamped before ready to take the stamped row's place. Restricted by the
// token only, the counts matched and that row was deleted. The DELETE must delete
// exactly the rows its UPDATE stamped, or fail with ErrUnsupported and change nothing.

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const locatedTable = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT '2000-01-01')`

// touchUpdated maintains updated_at by the wall clock, slowly (as a lock wait would).
const touchUpdated = `CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(NEW.balance / 1000.0); NEW.updated_at := clock_timestamp(); RETURN NEW; END $$;
CREATE TRIGGER touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch()`

func TestLocatedDeleteSelectionClasses(t *testing.T) {
	fencetest.RunDeleteCases(t, []fencetest.DeleteTableCase{
		{Name: "AggregateOverTriggerColumn", Setup: []string{locatedTable, touchUpdated,
			`INSERT INTO accounts VALUES (1, 5, 0, 0, '2000-01-01'), (2, 5, 10, 1, '2001-01-01'), (3, 5, 10, 1, '2002-01-01')`},
			Del: "DELETE FROM accounts WHERE updated_at = (SELECT min(updated_at) FROM accounts)", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		// balance 2000: the trigger sleeps 2 s; row 2 was stamped 2.5 s ago.
		{Name: "FunctionReadingTheClock", Setup: []string{locatedTable, touchUpdated,
			`CREATE FUNCTION cutoff() RETURNS timestamptz VOLATILE LANGUAGE sql AS $$ SELECT clock_timestamp() - interval '3 seconds' $$`,
			// Row 2 first in the heap: the UPDATE's volatile cutoff() is read per row, and
			// row 2 must be judged before row 1's trigger sleeps.
			`INSERT INTO accounts VALUES (2, 2000, 10, 1, clock_timestamp() - interval '2.5 seconds'), (1, 2000, 10, 1, '2000-01-01')`},
			Del: "DELETE FROM accounts WHERE updated_at <= cutoff()", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "ByKey", Setup: []string{locatedTable, `INSERT INTO accounts VALUES (1, 5, 0, 0), (2, 5, 10, 1)`},
			Del: "DELETE FROM accounts WHERE id = 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		{Name: "ManyRows", Setup: []string{locatedTable, touchUpdated,
			`INSERT INTO accounts SELECT g, 1, 0, 0 FROM generate_series(1, 300) AS g`, `INSERT INTO accounts VALUES (1000, 50, 10, 1)`},
			Del: "DELETE FROM accounts WHERE balance < 10", DeleteCase: fencetest.DeleteCase{Stamped: fencetest.Seq(1, 300), Run: true}},
		{Name: "Aliased", Setup: []string{locatedTable, `INSERT INTO accounts VALUES (1, 5, 0, 0), (2, 9, 10, 1)`},
			Del: "DELETE FROM ONLY accounts AS a WHERE a.balance < 6", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		{Name: "Returning", Setup: []string{locatedTable, `INSERT INTO accounts VALUES (1, 5, 0, 0), (2, 9, 10, 1)`},
			Del: "DELETE FROM accounts WHERE balance < 6 RETURNING id", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
	}, func(t *testing.T, setup []string) (raw, fenced *sql.DB) {
		dsn := testdb.Postgres(t)
		return testdb.Open(t, "pgx", dsn, setup...), testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	})
}

// TestLocatedDeleteColumnGrants: a role granted SELECT on the table's columns, not the
// whole table (least privilege), may not read ctid. Its two-statement DELETE takes the
// token-only form (the locator verdict is no) and runs, as before the located form;
// it failed with the server's raw "permission denied" (red-team rt18d F5).
func TestLocatedDeleteColumnGrants(t *testing.T) {
	role := fmt.Sprintf("fsql_colgrant_%d", time.Now().UnixNano()%1_000_000_000)
	dsn := testdb.Postgres(t)
	admin := testdb.Open(t, "pgx", dsn, locatedTable,
		`INSERT INTO accounts VALUES (1, 5, 0, 0, '2000-01-01'), (2, 5, 10, 1, '2001-01-01')`,
		`CREATE ROLE `+role+` LOGIN PASSWORD 'x'`,
		`GRANT SELECT (id, balance, fence_token, version, updated_at), UPDATE, DELETE ON accounts TO `+role)
	t.Cleanup(func() {
		_, _ = admin.Exec("REVOKE ALL ON accounts FROM " + role)
		_, _ = admin.Exec("DROP ROLE IF EXISTS " + role)
	})
	appDSN := strings.Replace(dsn, "fenced:fenced@", role+":x@", 1)
	if appDSN == dsn {
		t.Fatalf("set-up: the DSN has no fenced:fenced@ to replace")
	}
	fenced := testdb.Open(t, "fenced-pgx", appDSN+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatalf("DELETE as a role with column SELECT grants: %v", err)
	}
	if got := fencetest.IDs(t, admin); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("rows %v, want [2]", got)
	}
}
