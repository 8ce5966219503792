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

// regressionGuardedFile makes a SQLite file with a guarded accounts table (guard and floor
// installed) and returns its DSN and a plain pool on it.
func regressionGuardedFile(t *testing.T, ctx context.Context) (string, *sql.DB) {
	t.Helper()
	file := "file:" + t.TempDir() + "/r.db?_pragma=busy_timeout(5000)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.ExecContext(ctx, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	return file, raw
}

// TestRegressionVerdictDroppedAfterTheFix (red-team rt31b F7): WithTokenSource's check
// caches its verdict per table for 10 s. The database's floor is 1000 and the service
// at 1: the write of lease 1 is explained as ErrTokenRegression. The operator raises
// the service's floor to 5000 and a new lease (5001) writes. The stale holder (token
// 1) writes again within the 10 s: it is refused by the floor (ErrBelowFloor) and NOT
// explained as a regression — the cached "behind" verdict is confirmed with LastToken
// before it is reported, and the service is no longer behind.
func TestRegressionVerdictDroppedAfterTheFix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file, raw := regressionGuardedFile(t, ctx)
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(10*time.Second))
	defer locks.Close(context.Background())
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&moderncsqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts"), fencedsql.WithTokenSource(locks))
	defer db.Close()

	stale, err := locks.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithLease(ctx, stale), "INSERT INTO accounts (id, balance) VALUES (1, 5)")
	if !errors.Is(err, fencedsql.ErrTokenRegression) {
		t.Fatalf("setup: first write under token %d: %v, want ErrTokenRegression", stale.Token(), err)
	}
	// The operator's fix: raise the service's floor above the database's.
	if err := locks.RaiseFloor(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	fresh, err := locks.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release(context.Background())
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, fresh), "INSERT INTO accounts (id, balance) VALUES (2, 5)"); err != nil {
		t.Fatalf("setup: write under the new token %d after the fix: %v", fresh.Token(), err)
	}
	last, _ := locks.LastToken(ctx)
	// The stale holder (token 1) writes again.
	_, err = db.ExecContext(fencedsql.WithToken(ctx, stale.Token()), "INSERT INTO accounts (id, balance) VALUES (3, 5)")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("stale write under token %d: %v, want ErrBelowFloor", stale.Token(), err)
	}
	var re *fencedsql.TokenRegressionError
	if errors.As(err, &re) {
		t.Fatalf("stale write under token %d after the service's floor was raised (its LastToken is now %d) is reported as a token regression "+
			"(\"service token %d, database token %d\"), a verdict cached from before the fix: %v", stale.Token(), last, re.ServiceToken, re.DatabaseToken, err)
	}
}
