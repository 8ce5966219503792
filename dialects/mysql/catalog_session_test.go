package mysql_test

// MariaDB session variables that change what the wrapper's own catalog reads return
// (red-team rt52b; catalogsession.go, recordreads.go).

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// lockViaNestedView: a locking read, with a token, through a view of a view of
// the guarded table must be refused (ErrUnsupported, dialect.ViewLockChecker), and a
// stale write after it must be refused, whatever the pool's session variables.
func lockViaNestedView(t *testing.T, params string) {
	raw, db, ctx := txEnv(t, params)
	for _, q := range []string{
		"CREATE VIEW nest_v1 AS SELECT id, balance FROM accounts",
		"CREATE VIEW nest_v2 AS SELECT id, balance FROM nest_v1",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	q := "SELECT id, balance FROM nest_v2 WHERE id = 1 FOR UPDATE"
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, q)
	if err == nil {
		rows.Close()
	}
	_ = tx.Commit()
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("%s with token 20 (params %q): err = %v, want ErrUnsupported (a locking read of a view of a view of a guarded table claims nothing)", q, params, err)
	}
	// What the unclaimed read lets through: an older holder's write after it.
	_, werr := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 10 WHERE id = 1")
	if err == nil && werr == nil {
		t.Errorf("token 10's UPDATE of row 1 after token 20's locking read of it went through")
	}
}

// MariaDB's max_recursive_iterations stops a recursive CTE silently (a warning, the
// rows found so far): ViewLockQuery's WITH RECURSIVE then sees only the view named.
func TestLockViaNestedViewMaxRecursiveIterations(t *testing.T) {
	lockViaNestedView(t, "max_recursive_iterations=0")
}

// Sessions the wrapper must refuse with a typed error or serve correctly
// (sessionOracles): a collation_connection that is not its character set's default
// made every guarded write fail with a raw "Illegal mix of collations"; sql_safe_updates
// failed schema.PurgeTombstones raw; under sql_select_limit=1 and EMPTY_STRING_IS_NULL
// schema.Check read a healthy guard as broken (now a *SessionError, as the pool's).
func TestSessionOraclesRefusedOrServed(t *testing.T) {
	for _, p := range []string{
		"sql_safe_updates=1", "sql_select_limit=1", "sql_mode='STRICT_TRANS_TABLES,EMPTY_STRING_IS_NULL'",
	} {
		t.Run(p, func(t *testing.T) { sessionOracles(t, p, false) })
	}
}

// The wrapper's catalog reads do not depend on collation_connection (catalogsession.go):
// under each, the lazy check passes, a fenced write and an absent-key claim are served,
// stale writes are refused, and schema.Check reads the installed guards as healthy.
func TestCatalogReadsUnderCollations(t *testing.T) {
	for _, c := range []string{"utf8mb4_unicode_ci", "utf8mb4_general_nopad_ci", "utf8mb4_unicode_520_ci", "utf8mb4_bin", "latin1_swedish_ci"} {
		p := "collation_connection='" + c + "'"
		t.Run(c, func(t *testing.T) { sessionOracles(t, p, true) })
	}
}

// catalogViaNestedView: an admin's view of a view of mysql.proc (which holds the
// absence recorder fencedsql_tombclaim_<table>): a write through it from the fenced
// pool must be refused (catalogViewsQuery, red-team rt37e), whatever the session. Under
// max_recursive_iterations=0 the pool reads only the views that name mysql.proc
// directly, the UPDATE of the second view goes through, it empties the recorder's body,
// and an older holder then inserts a key a newer one claimed absent.
func catalogViaNestedView(t *testing.T, params string) {
	dsn, admin, _ := absentMy(t)
	testdb.Exec(t, admin,
		"CREATE VIEW nest_pv1 AS SELECT db, name, type, body, body_utf8 FROM mysql.proc",
		"CREATE VIEW nest_pv2 AS SELECT db, name, type, body, body_utf8 FROM nest_pv1")
	p := "fenced_tables=acc,pair"
	if params != "" {
		p += "&" + params
	}
	// A pool of the application, running: its first claim passes its checks.
	app := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))
	claimAbsentMy(t, app, 3, true, "SELECT id FROM acc WHERE id = 40 FOR UPDATE")
	app.SetMaxIdleConns(0) // its next claim runs on a new connection (a fresh routine cache)
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, p))
	err := writeAs(db, 5, "UPDATE nest_pv2 SET body = 'BEGIN END', body_utf8 = 'BEGIN END' WHERE db = DATABASE() AND name LIKE '%tombclaim_acc'")
	if err == nil {
		t.Errorf("UPDATE of a view of a view of mysql.proc from the fenced pool (params %q) went through", params)
	}
	claimAbsentMy(t, app, 9, true, "SELECT id FROM acc WHERE id = 50 FOR UPDATE")
	if err := writeAs(app, 8, "INSERT INTO acc (id, balance) VALUES (50, 8)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("token 8's INSERT of key 50, claimed absent under 9: %v, want ErrFenced", err)
	}
}

func TestCatalogViaNestedViewMaxRecursiveIterations(t *testing.T) {
	catalogViaNestedView(t, "max_recursive_iterations=0")
}
