package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// A write refused by the token floor while WithTokenSource shows the lock service
// behind the database (its LastToken below the floor − 1, which schema.MaxToken counts
// as accepted: the switch procedure half done, the database's floor raised and the new
// service not) is explained as ErrTokenRegression, as a row-fenced write is, and stays
// a *BelowFloorError.
func TestBelowFloorExplainedAsRegression(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := "file:" + t.TempDir() + "/r.db?_pragma=busy_timeout(5000)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(10*time.Second))
	defer locks.Close(context.Background())
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&moderncsqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts"), fencedsql.WithTokenSource(locks))
	defer db.Close()
	lease, err := locks.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	_, err = db.ExecContext(fencedsql.WithLease(ctx, lease), "INSERT INTO accounts (id, balance) VALUES (2, 5)")
	var bf *fencedsql.BelowFloorError
	var re *fencedsql.TokenRegressionError
	if !errors.Is(err, fencedsql.ErrTokenRegression) || !errors.As(err, &re) || !errors.As(err, &bf) ||
		!errors.Is(err, fencedsql.ErrBelowFloor) || !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("write under token %d below the floor 1000, lock service behind it: %v, want a *TokenRegressionError wrapping a *BelowFloorError", lease.Token(), err)
	}
	if re.DatabaseToken != 999 || re.ServiceToken != lease.Token() {
		t.Fatalf("TokenRegressionError: database token %d, service token %d; want 999 (the floor − 1) and %d", re.DatabaseToken, re.ServiceToken, lease.Token())
	}
}
