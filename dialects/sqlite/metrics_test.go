package sqlite_test

import (
	"context"
	"errors"
	"testing"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/metrictest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Scripted events and the exact counts they must produce.
func TestMetrics(t *testing.T) {
	mr := metrictest.New(t)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, testdb.SQLite(t)),
		fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"), fencedsql.WithMeterProvider(mr), fencedsql.WithDDL(true))
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 8), "INSERT INTO accounts (id, balance) VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 7), "UPDATE accounts SET balance = 1 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE accounts SET (balance, fence_token) = (1, 1)")
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 9), "INSERT INTO accounts (id, balance) VALUES (1, 0)")
	if !errors.Is(err, fencedsql.ErrDuplicate) {
		t.Fatal(err)
	}
	table := fencedsql.AttrDBTable.String("accounts")
	sys := fencedsql.AttrDBSystem.String("sqlite")
	for name, want := range map[string]int64{
		fencedsql.MetricFencedRejections: 1,
		fencedsql.MetricNoToken:          1,
		fencedsql.MetricUnsupported:      1,
		fencedsql.MetricUniqueViolations: 1,
	} {
		if got := mr.Sum(t, name, table, sys); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if hits := mr.Sum(t, fencedsql.MetricRewriteCache, fencedsql.AttrCacheResult.String("hit")); hits < 1 {
		t.Errorf("rewrite cache hits = %d", hits)
	}
}
