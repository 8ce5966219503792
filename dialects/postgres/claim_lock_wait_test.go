package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// pgCode returns err's SQLSTATE ("" when no *pgconn.PgError is inside).
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// scanAll runs q in tx and reads its rows to the end: the first error.
func scanAll(ctx context.Context, tx *sql.Tx, q string) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// TestClaimOwnLockWaitIsClaimConflict (red-team rt64a F2): a claimed locking read whose
// own statement — the claim that stamps the rows, by WHERE or by row locator — waits
// for a lock another transaction holds on the row, in a session whose lock_timeout is
// short. A claimed FOR SHARE read holds FOR NO KEY UPDATE (Lock strength), so it waits
// beside a FOR SHARE reader where the plain read does not; a claimed FOR UPDATE read
// waits beside a FOR UPDATE reader as the plain read would. When the lock_timeout runs
// out the claim fails with ErrClaimConflict (retry the transaction) wrapping the
// server's 55P03 (errors.As finds it) — it was the raw 55P03 — under READ COMMITTED,
// REPEATABLE READ and SERIALIZABLE; Commit then commits nothing (the row keeps token
// 0). A NOWAIT claim keeps the server's 55P03 (the NOWAIT read's own failure), and so
// does the same read without a token (no claim), and a fenced UPDATE (no claim).
func TestClaimOwnLockWaitIsClaimConflict(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+fencetest.FencedColumns+")")
	checkTable(t, raw, dsn, "acc")
	short := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&options=-c%20lock_timeout%3D100ms")
	ctx := context.Background()
	cases := []struct {
		name, holder, stmt string
		token, conflict    bool
	}{
		{"FOR SHARE beside a FOR SHARE reader", "FOR SHARE", "SELECT id FROM acc WHERE id = %d FOR SHARE", true, true},
		{"FOR KEY SHARE beside a FOR SHARE reader", "FOR SHARE", "SELECT id FROM acc WHERE id = %d FOR KEY SHARE", true, true},
		{"FOR UPDATE beside a FOR UPDATE reader", "FOR UPDATE", "SELECT id FROM acc WHERE id = %d FOR UPDATE", true, true},
		{"by row locator beside a FOR UPDATE reader", "FOR UPDATE", "SELECT id FROM acc WHERE id = %d ORDER BY id LIMIT 1 FOR UPDATE", true, true},
		{"NOWAIT beside a FOR UPDATE reader", "FOR UPDATE", "SELECT id FROM acc WHERE id = %d FOR UPDATE NOWAIT", true, false},
		{"no token (no claim)", "FOR UPDATE", "SELECT id FROM acc WHERE id = %d FOR UPDATE", false, false},
		{"fenced UPDATE (no claim)", "FOR UPDATE", "UPDATE acc SET balance = 1 WHERE id = %d", true, false},
	}
	n := 0
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		for _, c := range cases {
			n++
			key := 7000 + n
			t.Run(fmt.Sprintf("%v/%s", iso, c.name), func(t *testing.T) {
				testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO acc (id) VALUES (%d)", key))
				holder, err := raw.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Rollback() //nolint:errcheck
				if err := scanAll(ctx, holder, fmt.Sprintf("SELECT id FROM acc WHERE id = %d %s", key, c.holder)); err != nil {
					t.Fatal(err)
				}
				cctx := ctx
				if c.token {
					cctx = fencedsql.WithToken(ctx, 60)
				}
				tx, err := short.BeginTx(cctx, &sql.TxOptions{Isolation: iso})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
				q := fmt.Sprintf(c.stmt, key)
				if c.name == "fenced UPDATE (no claim)" {
					_, err = tx.ExecContext(cctx, q)
				} else {
					err = scanAll(cctx, tx, q)
				}
				if pgCode(err) != "55P03" {
					t.Fatalf("%s: %v; want the server's 55P03 inside", q, err)
				}
				if conflict := errors.Is(err, fencedsql.ErrClaimConflict); conflict != c.conflict {
					t.Errorf("%s: %T %v; want ErrClaimConflict %v", q, err, err, c.conflict)
				}
				if err := tx.Commit(); err == nil {
					t.Error("Commit after the lock wait's failure: nil; want the transaction rolled back")
				}
				if err := holder.Rollback(); err != nil {
					t.Fatal(err)
				}
				var tok int64
				if err := raw.QueryRow(fmt.Sprintf("SELECT fence_token FROM acc WHERE id = %d", key)).Scan(&tok); err != nil || tok != 0 {
					t.Errorf("the row's token after Commit: %d, %v; want 0 (nothing claimed)", tok, err)
				}
			})
		}
	}
}

// TestGuardedWriteWaitOnClaimRecordIsClaimConflict (red-team rt64a F3): a guarded write
// of a key another transaction's uncommitted claim recorded absent — an INSERT, an
// upsert, an UPDATE moving a row onto the key — waits in the tombstone guard's check
// of the key (fencedsql_tombstone_<t>) for that record, where the same write on an
// unguarded table would not wait. When the writer's lock_timeout runs out there the
// write fails with ErrClaimConflict (the key is claimed; retry the transaction)
// wrapping the server's 55P03 — it was the raw 55P03 — under READ COMMITTED,
// REPEATABLE READ and SERIALIZABLE; Commit then commits nothing. An INSERT that waits
// on the table's own unique index (another transaction's uncommitted INSERT of the
// key), as the plain INSERT would, keeps the server's 55P03.
func TestGuardedWriteWaitOnClaimRecordIsClaimConflict(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+fencetest.FencedColumns+")")
	checkTable(t, raw, dsn, "acc")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	short := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&options=-c%20lock_timeout%3D100ms")
	ctx := context.Background()
	cases := []struct {
		name, blocker, stmt string
		conflict            bool
	}{
		{"INSERT", "claim", "INSERT INTO acc (id) VALUES (%d)", true},
		{"upsert", "claim", "INSERT INTO acc (id) VALUES (%d) ON CONFLICT (id) DO UPDATE SET balance = 1", true},
		{"key-change UPDATE", "claim", "UPDATE acc SET id = %d WHERE id = %d", true},
		{"INSERT beside an uncommitted INSERT", "insert", "INSERT INTO acc (id) VALUES (%d)", false},
	}
	n := 0
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		for _, c := range cases {
			n++
			key := int64(8000 + 2*n)
			t.Run(fmt.Sprintf("%v/%s", iso, c.name), func(t *testing.T) {
				testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO acc (id) VALUES (%d)", key+1))
				a := fencedsql.WithToken(ctx, 50)
				atx, err := db.BeginTx(a, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer atx.Rollback() //nolint:errcheck
				if c.blocker == "claim" {
					if err := scanAll(a, atx, fmt.Sprintf("SELECT id FROM acc WHERE id = %d FOR UPDATE", key)); err != nil {
						t.Fatalf("claim of the absent key under 50: %v", err)
					}
				} else if _, err := atx.ExecContext(a, fmt.Sprintf("INSERT INTO acc (id) VALUES (%d)", key)); err != nil {
					t.Fatal(err)
				}
				b := fencedsql.WithToken(ctx, 60)
				btx, err := short.BeginTx(b, &sql.TxOptions{Isolation: iso})
				if err != nil {
					t.Fatal(err)
				}
				defer btx.Rollback() //nolint:errcheck
				q := fmt.Sprintf(c.stmt, key, key+1)
				if c.name != "key-change UPDATE" {
					q = fmt.Sprintf(c.stmt, key)
				}
				_, err = btx.ExecContext(b, q)
				if pgCode(err) != "55P03" {
					t.Fatalf("%s: %v; want the server's 55P03 inside", q, err)
				}
				if conflict := errors.Is(err, fencedsql.ErrClaimConflict); conflict != c.conflict {
					t.Errorf("%s: %T %v; want ErrClaimConflict %v", q, err, err, c.conflict)
				}
				if err := btx.Commit(); err == nil {
					t.Error("Commit after the lock wait's failure: nil; want the transaction rolled back")
				}
				if err := atx.Rollback(); err != nil {
					t.Fatal(err)
				}
				var cnt int
				if err := raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM acc WHERE id = %d", key)).Scan(&cnt); err != nil || cnt != 0 {
					t.Errorf("rows of the key after Commit: %d, %v; want 0", cnt, err)
				}
			})
		}
	}
}
