package fencedsql_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// hungTokenSource is a lock service that does not answer: LastToken waits for its
// context.
type hungTokenSource struct{}

func (hungTokenSource) LastToken(ctx context.Context) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestFencedErrorPromptWithHungTokenSource (red-team rt44f F4): with WithTokenSource and
// a lock service that does not answer — exactly when stale holders appear — a stale
// write's ErrFenced comes back within the statement's 500 ms deadline (the look-up
// runs under its context), two tables' fenced writes do not queue behind one another
// (no pool-wide mutex held across the look-up), and, the look-up having failed, the
// next ErrFenced of the table, under no deadline at all, does not ask again
// (regressionBackoff). It was 5 s, then 10 s for the second table.
func TestFencedErrorPromptWithHungTokenSource(t *testing.T) {
	dsn := testdb.SQLite(t)
	testdb.Open(t, "sqlite", dsn,
		`CREATE TABLE hung_a (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)`,
		`CREATE TABLE hung_b (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)`,
		`INSERT INTO hung_a (id, balance, fence_token) VALUES (1, 1, 9)`,
		`INSERT INTO hung_b (id, balance, fence_token) VALUES (1, 1, 9)`)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, dsn), fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("hung_a"), fencedsql.Guard("hung_b"), fencedsql.WithTokenSource(hungTokenSource{}))
	defer db.Close()
	var wg sync.WaitGroup
	for _, table := range []string{"hung_a", "hung_b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(fencedsql.WithToken(context.Background(), 5), 500*time.Millisecond)
			defer cancel()
			t0 := time.Now()
			_, err := db.ExecContext(ctx, `UPDATE `+table+` SET balance = 2 WHERE id = 1`)
			took := time.Since(t0)
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("%s: stale write: %v", table, err)
			}
			if took > 2*time.Second {
				t.Errorf("%s: ErrFenced came back after %v, past the statement's 500 ms deadline (the lock service does not answer)", table, took)
			}
		}()
	}
	wg.Wait()
	t0 := time.Now()
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), `UPDATE hung_a SET balance = 2 WHERE id = 1`)
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale write: %v", err)
	}
	if took := time.Since(t0); took > time.Second {
		t.Errorf("ErrFenced without a deadline came back after %v: the failed look-up was asked again", took)
	}
}
