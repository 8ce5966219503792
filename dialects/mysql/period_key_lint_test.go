package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// checkProblems runs schema.Check on table and returns its problems, joined.
func checkProblems(t *testing.T, ctx context.Context, raw *sql.DB, table string) string {
	t.Helper()
	reports, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, r := range reports {
		problems = append(problems, r.Problems...)
	}
	return strings.Join(problems, "\n")
}

// TestWithoutOverlapsPrimaryKeyRefused: MariaDB's application-time period key
// `PRIMARY KEY (id, p WITHOUT OVERLAPS)` makes two rows one key when their periods
// overlap, but the tombstones compare the period's bounds with =: a row deleted under
// token 50 came back under token 40 with a period one day shorter (red-team rt40a
// F1). The lint refuses such a table: schema.Check reports it, and the lazy check
// refuses the pool's first guarded write with ErrSchema, nothing written.
func TestWithoutOverlapsPrimaryKeyRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE periods (id INT NOT NULL, s DATE NOT NULL, e DATE NOT NULL, PERIOD FOR p(s, e), v INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id, p WITHOUT OVERLAPS)) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "periods"})
	if p := checkProblems(t, ctx, raw, "periods"); !strings.Contains(p, "WITHOUT OVERLAPS") {
		t.Errorf("schema.Check does not report the period key; problems:\n%s", p)
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=periods")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO periods (id, s, e, v) VALUES (1, '2020-01-01', '2021-01-01', 1)")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded INSERT into a table keyed WITHOUT OVERLAPS: %v; want ErrSchema", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM periods").Scan(&n); err != nil || n != 0 {
		t.Errorf("rows after the refused INSERT: %d (%v); want 0", n, err)
	}
}

// TestPeriodWithoutOverlapsKeyElsewhereAccepted: no over-refusal — a primary key over
// a period's two columns in declaration order (id, s, e) is an ordinary key, equal
// exactly when its bounds are, and a period key that is a secondary UNIQUE key leaves
// the primary key, which the tombstones use, ordinary.
func TestPeriodWithoutOverlapsKeyElsewhereAccepted(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE plain_bounds (id INT NOT NULL, s DATE NOT NULL, e DATE NOT NULL, PERIOD FOR p(s, e), fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id, s, e)) ENGINE=InnoDB",
		"CREATE TABLE unique_period (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, s DATE NOT NULL, e DATE NOT NULL, PERIOD FOR p(s, e), fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE KEY u (k, p WITHOUT OVERLAPS)) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, table := range []string{"plain_bounds", "unique_period"} {
		fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: table})
		if p := checkProblems(t, ctx, raw, table); p != "" {
			t.Errorf("%s: schema.Check after Fix reports:\n%s", table, p)
		}
	}
}
