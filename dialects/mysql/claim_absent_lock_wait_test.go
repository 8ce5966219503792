package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// claimAbsentLockWaitSetup makes acc, guarded with tombstones, and returns its DSN and
// the raw pool.
func claimAbsentLockWaitSetup(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	fencetest.Guard(t, context.Background(), admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	return dsn, admin
}

// claimAbsent claims key (a locking read that finds no row records the absence) in tx:
// nil when no row.
func claimAbsent(ctx context.Context, tx *sql.Tx, key int64) error {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// wantClaimConflictOver reports err unless it is ErrClaimConflict wrapping the server's
// error number.
func wantClaimConflictOver(t *testing.T, what string, err error, number uint16) {
	t.Helper()
	var me *gomysql.MySQLError
	if !errors.Is(err, fencedsql.ErrClaimConflict) || !errors.As(err, &me) || me.Number != number {
		t.Errorf("%s: %T %v; want ErrClaimConflict wrapping the server's %d", what, err, err, number)
	}
}

// TestClaimOfAbsentKeyRecordLockWait (red-team rt64b F1): a claim of an absent key while
// another holder's claim of it is open (its record of the absence uncommitted) waits in
// its own record for that tombstone row; the plain locking read of the key returns no
// row at once. When innodb_lock_wait_timeout runs out the claim fails with
// ErrClaimConflict (retry the transaction) wrapping the server's 1205, not the raw 1205,
// under every isolation level; Commit then commits nothing.
func TestClaimOfAbsentKeyRecordLockWait(t *testing.T) {
	dsn, admin := claimAbsentLockWaitSetup(t)
	for i, iso := range []string{"READ-COMMITTED", "READ-UNCOMMITTED", "REPEATABLE-READ"} {
		t.Run(iso, func(t *testing.T) {
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc&innodb_lock_wait_timeout=1&tx_isolation=%27"+iso+"%27")
			ctx := context.Background()
			key := int64(4242 + i)
			a, b := fencedsql.WithToken(ctx, 50), fencedsql.WithToken(ctx, 60)
			atx, err := db.BeginTx(a, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer atx.Rollback() //nolint:errcheck
			if err := claimAbsent(a, atx, key); err != nil {
				t.Fatalf("claim under 50: %v", err)
			}
			btx, err := db.BeginTx(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer btx.Rollback() //nolint:errcheck
			wantClaimConflictOver(t, "claim under 60 while the claim under 50 is open", claimAbsent(b, btx, key), 1205)
			if err := btx.Commit(); err == nil {
				t.Error("Commit after the claim conflict: nil; want the transaction rolled back")
			}
			if err := atx.Commit(); err != nil {
				t.Fatalf("the claim under 50 commits: %v", err)
			}
			var tok int64
			if err := admin.QueryRow("SELECT fence_token FROM fencedsql_tomb_acc WHERE id = ?", key).Scan(&tok); err != nil || tok != 50 {
				t.Errorf("the key's record: token %d, %v; want 50 (the claim under 60 recorded nothing)", tok, err)
			}
		})
	}
}

// TestClaimsOfAbsentKeysDeadlock (red-team rt64b F2): under READ COMMITTED two
// transactions claim two absent keys in opposite orders. Plain locking reads of absent
// keys take no lock there and cannot deadlock; the claims' records lock the keys'
// tombstone rows, so the second pair deadlocks, and InnoDB's victim fails with
// ErrClaimConflict wrapping the server's 1213 (not the raw 1213); the other claims.
func TestClaimsOfAbsentKeysDeadlock(t *testing.T) {
	dsn, _ := claimAbsentLockWaitSetup(t)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc&innodb_lock_wait_timeout=10&tx_isolation=%27READ-COMMITTED%27")
	ctx := context.Background()
	a, b := fencedsql.WithToken(ctx, 50), fencedsql.WithToken(ctx, 60)
	atx, err := db.BeginTx(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer atx.Rollback() //nolint:errcheck
	btx, err := db.BeginTx(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer btx.Rollback() //nolint:errcheck
	if err := claimAbsent(a, atx, 1); err != nil {
		t.Fatal(err)
	}
	if err := claimAbsent(b, btx, 2); err != nil {
		t.Fatal(err)
	}
	errA := make(chan error, 1)
	go func() { errA <- claimAbsent(a, atx, 2) }()
	time.Sleep(300 * time.Millisecond)
	errB := claimAbsent(b, btx, 1)
	eA := <-errA
	switch {
	case eA == nil && errB != nil:
		wantClaimConflictOver(t, "the deadlock's victim (60, claiming 1)", errB, 1213)
	case errB == nil && eA != nil:
		wantClaimConflictOver(t, "the deadlock's victim (50, claiming 2)", eA, 1213)
	default:
		t.Errorf("claims crosswise: %v / %v; want one deadlock victim", eA, errB)
	}
}
