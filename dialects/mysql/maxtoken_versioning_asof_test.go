package mysql_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// schema.MaxToken through a *sql.DB whose sessions carry system_versioning_asof (here
// the DSN parameter) would read a system-versioned guarded table as of that time and
// answer the token of then (10) although a row holds 50: it refuses the session with
// a *MaxTokenSessionError instead, named tables or not; on a plain session it answers
// 50, and a versioned tombstone table's tokens count too (red-team rt50b F4, G14).
func TestMaxTokenRefusesSessionReadingThePast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, dsn := triggerNamesSetup(t, "ledger", "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB WITH SYSTEM VERSIONING")
	time.Sleep(30 * time.Millisecond)
	var asof string
	if err := admin.QueryRowContext(ctx, "SELECT CAST(NOW(6) AS CHAR)").Scan(&asof); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE ledger SET balance = 5 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	tool := testdb.Open(t, "mysql", dsn+"&system_versioning_asof="+url.QueryEscape("'"+asof+"'"))
	for _, specs := range [][]schema.GuardSpec{nil, {{Table: "ledger"}}} {
		m, err := schema.MaxToken(ctx, tool, mysql.Dialect, specs...)
		var se *schema.MaxTokenSessionError
		if !errors.As(err, &se) {
			t.Errorf("MaxToken(%v) through a session with system_versioning_asof: %d, %v; want a *MaxTokenSessionError", specs, m, err)
		}
	}
	if m, err := schema.MaxToken(ctx, admin, mysql.Dialect); err != nil || m != 50 {
		t.Errorf("MaxToken on a plain session: %d, %v; want 50", m, err)
	}
	// A versioned tombstone table is read: the key deleted under 60. (Without tables,
	// MaxToken fails closed: the guard check reports the versioned tombstone table.)
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 60), "DELETE FROM ledger WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, admin, "ALTER TABLE fencedsql_tomb_ledger ADD SYSTEM VERSIONING")
	if m, err := schema.MaxToken(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "ledger"}); err != nil || m != 60 {
		t.Errorf("MaxToken with a versioned tombstone table holding 60: %d, %v; want 60", m, err)
	}
}
