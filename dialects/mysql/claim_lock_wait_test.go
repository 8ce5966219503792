package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimOwnLockWaitIsClaimConflict (red-team rt64a F2): a claimed locking read whose
// fencing UPDATE waits for a lock another transaction holds on the row, past
// innodb_lock_wait_timeout. A claimed LOCK IN SHARE MODE read takes InnoDB's exclusive
// lock (Lock strength), so it waits beside a LOCK IN SHARE MODE reader where the plain
// read does not; a claimed FOR UPDATE read waits beside a FOR UPDATE reader as the
// plain read would. The claim fails with ErrClaimConflict wrapping the server's 1205
// (it was the raw 1205) under READ COMMITTED and REPEATABLE READ, and Commit commits
// nothing of it (the row keeps token 0). The same read without a token (no claim), and
// a fenced UPDATE, keep the server's 1205.
func TestClaimOwnLockWaitIsClaimConflict(t *testing.T) {
	dsn, admin := claimAbsentLockWaitSetup(t)
	ctx := context.Background()
	cases := []struct {
		name, holder, stmt string
		token, conflict    bool
	}{
		{"LOCK IN SHARE MODE beside a LOCK IN SHARE MODE reader", "LOCK IN SHARE MODE", "SELECT id FROM acc WHERE id = %d LOCK IN SHARE MODE", true, true},
		{"FOR UPDATE beside a FOR UPDATE reader", "FOR UPDATE", "SELECT id FROM acc WHERE id = %d FOR UPDATE", true, true},
		{"no token (no claim)", "FOR UPDATE", "SELECT id FROM acc WHERE id = %d FOR UPDATE", false, false},
		{"fenced UPDATE (no claim)", "FOR UPDATE", "UPDATE acc SET balance = 1 WHERE id = %d", true, false},
	}
	n := 0
	for _, iso := range []string{"READ-COMMITTED", "REPEATABLE-READ"} {
		db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc&innodb_lock_wait_timeout=1&tx_isolation=%27"+iso+"%27")
		for _, c := range cases {
			n++
			key := 7000 + n
			t.Run(iso+"/"+c.name, func(t *testing.T) {
				testdb.Exec(t, admin, fmt.Sprintf("INSERT INTO acc (id) VALUES (%d)", key))
				holder, err := admin.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Rollback() //nolint:errcheck
				var id int64
				if err := holder.QueryRowContext(ctx, fmt.Sprintf("SELECT id FROM acc WHERE id = %d %s", key, c.holder)).Scan(&id); err != nil {
					t.Fatal(err)
				}
				cctx := ctx
				if c.token {
					cctx = fencedsql.WithToken(ctx, 60)
				}
				tx, err := db.BeginTx(cctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
				q := fmt.Sprintf(c.stmt, key)
				if c.name == "fenced UPDATE (no claim)" {
					_, err = tx.ExecContext(cctx, q)
				} else {
					err = tx.QueryRowContext(cctx, q).Scan(&id)
				}
				var me *gomysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1205 {
					t.Fatalf("%s: %v; want the server's 1205 inside", q, err)
				}
				if conflict := errors.Is(err, fencedsql.ErrClaimConflict); conflict != c.conflict {
					t.Errorf("%s: %T %v; want ErrClaimConflict %v", q, err, err, c.conflict)
				}
				tx.Commit() //nolint:errcheck // whatever it answers, nothing of the claim is kept
				if err := holder.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
					t.Fatal(err)
				}
				var tok int64
				if err := admin.QueryRow(fmt.Sprintf("SELECT fence_token FROM acc WHERE id = %d", key)).Scan(&tok); err != nil || tok != 0 {
					t.Errorf("the row's token after Commit: %d, %v; want 0 (nothing claimed)", tok, err)
				}
			})
		}
	}
}
