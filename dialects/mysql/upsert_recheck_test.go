package mysql_test

import (
	"context"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The choice between the do-nothing and the
// stamped form of a self-assignment ON DUPLICATE KEY UPDATE (conn.conflictForm) is a
// tableVerdict cached in core.guardInstalled, which now expires with WithSchemaRecheck (a
// red-team pass: only an error of the no-op form dropped it, doubtConflictForm). A BEFORE UPDATE user
// trigger added while the pool runs (an updated_at touch: not a door, the lazy check
// passes it) therefore keeps getting the unfenced do-nothing form for the pool's life,
// even after the re-check interval: the trigger runs for the duplicate row and a stale
// holder's "insert if absent" writes the newer holder's row — the fail-open
// TestNoopUpsertWithUserTriggerFenced covers for a trigger present at pool start.
func TestNoopUpsertVerdictRechecked(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := testdb.Open(t, "mysql", dsn)
	raw.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, touched BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, dsn), fencedsql.WithDialect(mysql.Dialect),
		fencedsql.Guard("acc"), fencedsql.WithSchemaRecheck(200*time.Millisecond))
	defer db.Close()
	upsert := "INSERT INTO `acc` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id`=`id`"
	// The newer holder (token 50) inserts the row through the do-nothing upsert: the
	// pool now holds "no BEFORE UPDATE trigger" for acc.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), upsert, 1, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), upsert, 1, 100); err != nil {
		t.Fatal(err)
	}
	// A migration adds an updated_at-style touch trigger.
	if _, err := raw.ExecContext(ctx, "CREATE TRIGGER acc_touch BEFORE UPDATE ON acc FOR EACH ROW SET NEW.touched = OLD.touched + 1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // past WithSchemaRecheck
	stale := fencedsql.WithToken(ctx, 10)
	// The stale holder's plain UPDATE is refused (and runs the lazy re-check, which
	// passes the trigger: it is not a door).
	if _, err := db.ExecContext(stale, "UPDATE acc SET balance = 1 WHERE id = 1"); err == nil {
		t.Fatalf("stale UPDATE accepted")
	}
	var touched0 int64
	if err := raw.QueryRowContext(ctx, "SELECT touched FROM acc WHERE id = 1").Scan(&touched0); err != nil {
		t.Fatal(err)
	}
	res, err := db.ExecContext(stale, upsert, 1, 9)
	var rows int64
	if err == nil {
		rows, _ = res.RowsAffected()
	}
	var touched, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT touched, fence_token FROM acc WHERE id = 1").Scan(&touched, &tok); err != nil {
		t.Fatal(err)
	}
	if touched != touched0 {
		t.Errorf("stale token 10 (row token %d), trigger added under the running pool, past WithSchemaRecheck: the do-nothing upsert updated the row through the trigger (touched %d -> %d, %d rows affected, err %v); a fresh pool sends the stamped form (TestNoopUpsertWithUserTriggerFenced)", tok, touched0, touched, rows, err)
	}
}
