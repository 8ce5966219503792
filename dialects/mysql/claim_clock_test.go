package mysql_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestStatementClockWindow: a selection by MySQL's statement clock (NOW() is per
// statement) on a table maintaining updated_at — the stale-row reclaim pattern
// `WHERE updated_at <= NOW(6) - INTERVAL 8 SECOND`. The fencing UPDATE, slowed here by a
// trigger as a lock wait would in production, stamps row 1 and moves it out of the
// window; by the second statement row 2, stamped by the same holder before and so
// carrying its token, has become old enough. Restricted by the token only, the claim
// returned row 2 and the DELETE deleted it, with the counts matching (red-team rt16k
// F2). Now the claim and the DELETE are keyed (the read and the DELETE find only row 1,
// which has left the window: the count check refuses them, and the DELETE's own
// transaction rolls the stamp back). Nothing the statement did not select is returned
// or deleted.
func TestStatementClockWindow(t *testing.T) {
	t.Run("Claim", func(t *testing.T) {
		t.Parallel()
		dsn, ctx := clockWindowSetup(t)
		_, tx := tokenTx(t, dsn)
		rows, err := tx.QueryContext(ctx, "SELECT id FROM accounts WHERE updated_at <= NOW(6) - INTERVAL 8 SECOND FOR UPDATE")
		var got []int64
		if err == nil {
			got, err = scanIDs(rows)
		}
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("claim over the clock window: rows %v, err %v; want ErrUnsupported (row 1 stamped, then out of the window)", got, err)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		dsn, ctx := clockWindowSetup(t)
		fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
		_, err := fenced.ExecContext(ctx, "DELETE FROM accounts WHERE updated_at <= NOW(6) - INTERVAL 8 SECOND")
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("two-statement DELETE over the clock window: err %v, want ErrUnsupported", err)
		}
		raw := testdb.Open(t, "mysql", dsn)
		rows, err := raw.QueryContext(ctx, "SELECT id FROM accounts WHERE version = 1 ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		if left, err := scanIDs(rows); err != nil || !reflect.DeepEqual(left, []int64{1, 2}) {
			t.Fatalf("rows left unstamped: %v (err %v), want [1 2]", left, err)
		}
	})
}

// clockWindowSetup is TestStatementClockWindow's set-up (row 1 old and in the 8 s
// window, row 2 stamped earlier by holder 10 and 5 s short of it; a trigger slows the
// fencing UPDATE by 5 s, as a lock wait would: row 2 enters the window during it, row
// 1, stamped, stays out of it for 3 s after it). The 5 s before row 2 enters the window
// are the room the pool's first checks and the statement's start have; on a loaded
// two-core CI machine they took more than the 1.5 s they once had.
func clockWindowSetup(t *testing.T) (string, context.Context) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
		"CREATE TRIGGER slow BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.balance = NEW.balance + 0 * SLEEP(5)",
		"INSERT INTO accounts VALUES (1, 5, 10, 1, '2000-01-01'), (2, 5, 10, 1, NOW(6) - INTERVAL 3 SECOND)")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return dsn, fencedsql.WithToken(ctx, 10)
}

// TestClaimSessionTimestampClockReturnsOnlyStampedRow: @@timestamp (@@session.timestamp) is the statement's
// start time on MySQL/MariaDB, the same clock as NOW(), but clockSelection knows only
// the function names. The stale-row window of TestStatementClockWindow written with
// FROM_UNIXTIME(@@timestamp) instead of NOW(6): the claim is not keyed (no LIMIT, no
// known clock) and its token-only read returns row 2, which its UPDATE did not stamp
// (row 1 was stamped and left the window); the two-statement DELETE deletes row 2
// instead of row 1 with the counts matching.
func TestClaimSessionTimestampClockReturnsOnlyStampedRow(t *testing.T) {
	const window = "FROM_UNIXTIME(@@timestamp) - INTERVAL 8 SECOND"
	t.Run("Claim", func(t *testing.T) {
		t.Parallel()
		dsn, ctx := clockWindowSetup(t)
		_, tx := tokenTx(t, dsn)
		claimExact(t, ctx, tx, "SELECT id FROM accounts WHERE updated_at <= "+window+" FOR UPDATE", 1)
	})
}

// TestClaimStoredFunctionClockReturnsOnlyStampedRow: the statement's clock behind a stored function (or a
// view): NOW() inside a function is the calling statement's start time, so the two
// statements read different cut-offs, and no text check of the caller's statement sees
// it. The rt16k window written as `updated_at <= cutoff()`: the keyed claim's read
// finds only the row it stamped (here out of the window: ErrUnsupported).
func TestClaimStoredFunctionClockReturnsOnlyStampedRow(t *testing.T) {
	dsn, ctx := clockWindowSetup(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE FUNCTION cutoff() RETURNS DATETIME(6) NOT DETERMINISTIC RETURN NOW(6) - INTERVAL 8 SECOND")
	_, tx := tokenTx(t, dsn)
	claimExact(t, ctx, tx, "SELECT id FROM accounts WHERE updated_at <= cutoff() FOR UPDATE", 1)
}
