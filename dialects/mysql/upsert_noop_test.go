package mysql_test

import (
	"context"
	"errors"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestSelfAssignmentFoldTwinFenced: the no-op form of ON DUPLICATE KEY UPDATE is
// chosen by selfAssignments, which compares the two column names with
// strings.EqualFold (Unicode simple folding). MariaDB reads column names with its
// own case-insensitive comparison, under which the long s (U+017F) and s are two
// columns (also µ/μ, ς/σ, ϑ/θ and ~500 other pairs). "s = ſ" is judged a
// self-assignment and sent as the caller wrote it, with no fencing in the conflict
// branch: a stale holder overwrites s with ſ's value.
func TestSelfAssignmentFoldTwinFenced(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id BIGINT PRIMARY KEY, s BIGINT NOT NULL DEFAULT 0, `\u017f` BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO acc (id, s, `\u017f`, fence_token, version) VALUES (1, 100, 7, 50, 3)",
	)
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10),
		"INSERT INTO acc (id, s) VALUES (1, 0) ON DUPLICATE KEY UPDATE s = `\u017f`")
	var k, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT s, fence_token FROM acc WHERE id = 1").Scan(&k, &tok); err != nil {
		t.Fatal(err)
	}
	if k != 100 {
		t.Errorf("stale token 10 (row token %d) wrote s = %d through a 'self-assignment' s = ſ (long s, U+017F); err %v", tok, k, err)
	}
	if err != nil && !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("err %v", err)
	}
}

// TestNoopUpsertWithUserTriggerFenced: the no-op form of a self-assignment ON DUPLICATE
// KEY UPDATE (sent where the table's guard is not installed) is sent as written, with
// no fence. But MariaDB runs the table's BEFORE UPDATE triggers for the duplicate row
// even when the assignments change nothing (the reason the stamped form exists), and a
// user trigger that sets a column (an updated_at touch, a counter) makes it a real
// UPDATE of the row: a stale holder's "insert if absent" writes the row, where the
// same holder's UPDATE is refused (ErrFenced) and fires nothing.
func TestNoopUpsertWithUserTriggerFenced(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, touched BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TRIGGER acc_touch BEFORE UPDATE ON acc FOR EACH ROW SET NEW.touched = OLD.touched + 1",
		"INSERT INTO acc (id, balance, fence_token, version) VALUES (1, 100, 50, 3)",
	)
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
	stale := fencedsql.WithToken(ctx, 10)
	if _, err := db.ExecContext(stale, "UPDATE acc SET balance = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v, want ErrFenced", err)
	}
	touched := func() int64 {
		var n int64
		if err := raw.QueryRowContext(ctx, "SELECT touched FROM acc WHERE id = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := touched(); n != 0 {
		t.Fatalf("touched after the refused UPDATE: %d", n)
	}
	res, err := db.ExecContext(stale, "INSERT INTO `acc` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id`=`id`", 1, 9)
	var rows int64
	if err == nil {
		rows, _ = res.RowsAffected()
	}
	if n := touched(); n != 0 {
		t.Errorf("stale token 10 (row token 50): the no-op upsert updated the row through its BEFORE UPDATE trigger (touched %d, %d rows affected, err %v)", n, rows, err)
	}
}
