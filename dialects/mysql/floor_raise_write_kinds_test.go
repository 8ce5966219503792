package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// raiseAcrossOpenWrite: a holder of token 8 makes a guarded write (statements joined
// with ";") in a transaction of isolation iso, RaiseTokenFloor(10) runs, then the
// holder commits. It reports whether the raise returned before the commit, the
// commit's error, and the write's effect left ("" for none): row 1 stamped 8, row 7
// inserted at 8, or row 1 deleted.
func raiseAcrossOpenWrite(t *testing.T, iso sql.IsolationLevel, write string) (raisedFirst bool, commitErr error, effect string) {
	t.Helper()
	dsn, raw := floorAccounts(t, 1, 2, 3)
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 8), &sql.TxOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, q := range strings.Split(write, ";") {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s under 8 before any floor: %v", q, err)
		}
	}
	raisedFirst, commitErr = fencetest.RaiseAcross(t, tx, 900*time.Millisecond, func() error { return schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10) })
	stamped, inserted, gone := fencetest.HolderEightEffect(ctx, t, raw)
	switch {
	case stamped:
		effect = "row 1 stamped with token 8"
	case inserted:
		effect = "row 7 inserted under token 8"
	case gone:
		effect = "row 1 deleted under token 8"
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE accounts SET balance = 1 WHERE id = 2"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("a write under 9 after the raise to 10: %v, want ErrBelowFloor", err)
	}
	return raisedFirst, commitErr, effect
}

// TestRaiseWaitsForEveryOpenWriteKind (red-team rt58d, held): G14 "a raise returns
// when no older write can still commit", for the kinds of guarded write that
// TestRaiseWaitsForOpenWriterReadCommitted does not make (an INSERT; the one-statement
// DELETE, whose check reads the floor without LOCK IN SHARE MODE; a multi-row DELETE;
// an upsert; a write in a released savepoint), under the isolation levels whose reads
// take no lock. Oracle: a raise that returned nil while the holder of token 8 was open
// leaves no write of it once it commits.
func TestRaiseWaitsForEveryOpenWriteKind(t *testing.T) {
	for _, c := range []struct {
		name  string
		iso   sql.IsolationLevel
		write string
	}{
		{"insert", sql.LevelReadCommitted, "INSERT INTO accounts (id, balance) VALUES (7, 1)"},
		{"delete", sql.LevelReadCommitted, "DELETE FROM accounts WHERE id = 1"},
		{"delete-in", sql.LevelReadUncommitted, "DELETE FROM accounts WHERE id IN (1, 3)"},
		{"upsert", sql.LevelReadCommitted, "INSERT INTO accounts (id, balance) VALUES (1, 42) ON DUPLICATE KEY UPDATE balance = VALUES(balance)"},
		{"savepoint-update", sql.LevelReadUncommitted, "SAVEPOINT s1;UPDATE accounts SET balance = 98 WHERE id = 1;RELEASE SAVEPOINT s1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raisedFirst, commitErr, effect := raiseAcrossOpenWrite(t, c.iso, c.write)
			if raisedFirst && commitErr == nil && effect != "" {
				t.Errorf("RaiseTokenFloor(10) returned nil while a %s transaction under token 8 (%s) was open; it then committed: %s, below the floor in force", c.iso, c.write, effect)
			}
		})
	}
}
