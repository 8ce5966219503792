package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseFloorUnsettledExit: -raise-floor whose -timeout ends while a transaction
// that wrote a guarded table before the raise is still open has raised the floor but
// cannot say that no write judged under the old floor will commit: it exits 3 (not 1,
// "nothing raised"), names the open session, and the floor reads the new value; run
// again after that transaction ended, it exits 0.
func TestRaiseFloorUnsettledExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	writer, err := db.BeginTx(fencedsql.WithToken(ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback() //nolint:errcheck
	if _, err := writer.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	base := []string{"-driver", "postgres", "-dsn", dsn}
	// The timeout covers the raise itself as well as the wait for the writer: 5 s,
	// because on a loaded two-core machine the raise alone has taken more than 500 ms
	// (the command then exits 1, nothing raised, and the test checks nothing).
	code, out, errOut := runCmd(t, append(base, "-timeout", "5s", "-raise-floor", "10")...)
	if code != exitUnsettled || out != "" || !strings.Contains(errOut, "have not ended") {
		t.Fatalf("-raise-floor with a writer open: exit %d, stdout %q, stderr %q; want exit %d (raised, unsettled) naming the open session", code, out, errOut, exitUnsettled)
	}
	var floor int64
	if err := raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor); err != nil || floor != 10 {
		t.Fatalf("floor after the unsettled raise = %d, %v; want 10 (raised)", floor, err)
	}
	if err := writer.Rollback(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, append(base, "-raise-floor", "10")...); code != exitOK || !strings.HasPrefix(out, "10\n") {
		t.Fatalf("-raise-floor again after the writer ended: exit %d, stdout %q, stderr %q; want 0 and the floor", code, out, errOut)
	}
}
