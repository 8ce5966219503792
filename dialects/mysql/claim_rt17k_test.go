package mysql_test

// Claims whose second statement selected differently from their fencing UPDATE, found
// by red-team pass rt17k (each returned a row the claim did not stamp, with the counts
// matching). Every MySQL/MariaDB claim is now keyed, and ENUM/SET keys are recorded by
// their number: each claim returns the rows it stamped or fails with ErrUnsupported.

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimRT17kSessionTimestampClock: @@timestamp (@@session.timestamp) is the statement's
// start time on MySQL/MariaDB, the same clock as NOW(), but clockSelection knows only
// the function names. The stale-row window of TestStatementClockWindow written with
// FROM_UNIXTIME(@@timestamp) instead of NOW(6): the claim is not keyed (no LIMIT, no
// known clock) and its token-only read returns row 2, which its UPDATE did not stamp
// (row 1 was stamped and left the window); the two-statement DELETE deletes row 2
// instead of row 1 with the counts matching.
func TestClaimRT17kSessionTimestampClock(t *testing.T) {
	const window = "FROM_UNIXTIME(@@timestamp) - INTERVAL 3 SECOND"
	t.Run("Claim", func(t *testing.T) {
		t.Parallel()
		dsn, ctx := clockWindowSetup(t)
		_, tx := tokenTx(t, dsn)
		claimExact(t, ctx, tx, "SELECT id FROM accounts WHERE updated_at <= "+window+" FOR UPDATE", 1)
	})
}

// TestClaimRT17kEnumErrorValueKey: an ENUM primary key whose list holds the empty string
// has two stored values that read as ” — the member ” (index 1) and the error value
// (index 0, stored by a non-strict INSERT) — and keyPart's QUOTE() text is the same for
// both, so the keyed claim's record does not tell them apart. Holder 10 wrote the
// index-0 row before (it carries token 10, older updated_at); the claim stamps the
// member-” row, and its keyed read (ORDER BY updated_at LIMIT 1, restricted to the
// key text and the token) returns the index-0 row, which it did not stamp, with the
// counts matching.
func TestClaimRT17kEnumErrorValueKey(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"SET SESSION sql_mode = ''",
		"CREATE TABLE accounts (e ENUM('', 'a') NOT NULL, n INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (e)) ENGINE=InnoDB",
		// n = 1: the error value (index 0), stamped by holder 10 before; n = 2: the member ''.
		"INSERT INTO accounts VALUES ('bogus', 1, 5, 10, 1, '2001-01-01'), ('', 2, 5, 0, 0, '2000-01-01')")
	raw := testdb.Open(t, "mysql", dsn)
	var idx0, idx1 int64
	if err := raw.QueryRow("SELECT SUM(e + 0 = 0), SUM(e + 0 = 1) FROM accounts").Scan(&idx0, &idx1); err != nil || idx0 != 1 || idx1 != 1 {
		t.Skipf("set-up: index-0 rows %d, index-1 rows %d, %v", idx0, idx1, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	// The plain read's row is n = 2 (the oldest updated_at).
	claimExact(t, ctx, tx, "SELECT n FROM accounts WHERE balance < 50 ORDER BY updated_at LIMIT 1 FOR UPDATE", 2)
}

// TestClaimRT17kSelfAggregateClaim: the claim form of TestClaimRT17kSelfAggregateOverOnUpdateColumn.
// Without a LIMIT and without a known clock the claim is not keyed: its read,
// restricted to the token, takes MIN() again after the UPDATE moved row 1 to the
// newest, and returns row 2, which the claim did not stamp.
func TestClaimRT17kSelfAggregateClaim(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 5, 0, 0, '2000-01-01'), (2, 5, 10, 1, '2001-01-01'), (3, 5, 10, 1, '2002-01-01')")
	ctx, tx := tokenTx(t, dsn)
	claimExact(t, ctx, tx, "SELECT id FROM accounts WHERE updated_at = (SELECT MIN(u) FROM (SELECT updated_at AS u FROM accounts) AS x) FOR UPDATE", 1)
}

// TestClaimRT17kSetKeyText: the SET form of TestClaimRT17kEnumErrorValueKey, in strict mode: with
// a ” member, SET(”, 'a') values 2 ({a}) and 3 ({”, a}) both read 'a' (and 0, 1
// both ”), so their QUOTE() key texts are equal. The claim stamps n = 2 (value 3, the
// oldest); its keyed read returns n = 1 (value 2), stamped by holder 10 before.
func TestClaimRT17kSetKeyText(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (e SET('', 'a') NOT NULL, n INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (e)) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (2, 1, 5, 10, 1, '2001-01-01'), (3, 2, 5, 0, 0, '2000-01-01')")
	ctx, tx := tokenTx(t, dsn)
	claimExact(t, ctx, tx, "SELECT n FROM accounts WHERE balance < 50 ORDER BY updated_at LIMIT 1 FOR UPDATE", 2)
}

// TestClaimRT17kStoredFunctionClock: the statement's clock behind a stored function (or a
// view): NOW() inside a function is the calling statement's start time, so the two
// statements read different cut-offs, and no text check of the caller's statement sees
// it. The rt16k window written as `updated_at <= cutoff()`: the keyed claim's read
// finds only the row it stamped (here out of the window: ErrUnsupported).
func TestClaimRT17kStoredFunctionClock(t *testing.T) {
	dsn, ctx := clockWindowSetup(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE FUNCTION cutoff() RETURNS DATETIME(6) NOT DETERMINISTIC RETURN NOW(6) - INTERVAL 3 SECOND")
	_, tx := tokenTx(t, dsn)
	claimExact(t, ctx, tx, "SELECT id FROM accounts WHERE updated_at <= cutoff() FOR UPDATE", 1)
}

// claimExact runs the claim q in tx: it must return exactly the row it stamped
// (stamped) or fail with ErrUnsupported (the count check: the stamped row left the
// selection), never another row.
func claimExact(t *testing.T, ctx context.Context, tx *sql.Tx, q string, stamped int64) {
	t.Helper()
	rows, err := tx.QueryContext(ctx, q)
	var got []int64
	if err == nil {
		got, err = scanIDs(rows)
	}
	switch {
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Fatalf("claim %s: %v, want the rows it stamped or ErrUnsupported", q, err)
	case err == nil && !reflect.DeepEqual(got, []int64{stamped}):
		t.Fatalf("claim %s returned rows %v; it stamped [%d] only (a row it did not stamp returned)", q, got, stamped)
	}
}
