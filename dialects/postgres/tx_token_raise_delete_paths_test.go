package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestTxTokenRaiseDeletePaths (kept from red-team rt61a, held; generator, database/sql):
// raising path × deleting path × the context of the deletion, on the fenced-pgx driver,
// par and kid guarded (ON DELETE CASCADE). Schedule: tx begun under l1; UPDATE kid k
// under l1; the raising step under l3 (Exec, Query, QueryRow, a statement prepared in
// the tx under l1 and run under l3, tx.Stmt of a pool statement prepared before the tx);
// DELETE FROM par k (Exec, Query/QueryRow with RETURNING, a statement prepared in the tx
// before the raise and run after it, tx.Stmt of a pool statement prepared before the tx)
// under l3, l1 or the transaction's own binding; COMMIT. Oracle:
// fencetest.RaisedTombstone.
func TestTxTokenRaiseDeletePaths(t *testing.T) {
	raw, db := txTokSetup(t)
	ctx := context.Background()
	poolSel, err := db.PrepareContext(ctx, "SELECT $1::int")
	if err != nil {
		t.Fatal(err)
	}
	defer poolSel.Close()
	poolDel, err := db.PrepareContext(ctx, "DELETE FROM par WHERE id = $1")
	if err != nil {
		t.Fatal(err)
	}
	defer poolDel.Close()
	type stepFn func(c context.Context, tx *sql.Tx, pre *sql.Stmt, key int) error
	raises := map[string]stepFn{
		"exec": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			_, err := tx.ExecContext(c, "SELECT $1::int", key)
			return err
		},
		"query": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			rows, err := tx.QueryContext(c, "SELECT $1::int", key)
			if err != nil {
				return err
			}
			return rows.Close()
		},
		"queryrow": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			var n int
			return tx.QueryRowContext(c, "SELECT $1::int", key).Scan(&n)
		},
		"tx.Stmt-of-pool": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			_, err := tx.StmtContext(c, poolSel).ExecContext(c, key)
			return err
		},
	}
	deletes := map[string]stepFn{
		"exec": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			_, err := tx.ExecContext(c, "DELETE FROM par WHERE id = $1", key)
			return err
		},
		"query-returning": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			rows, err := tx.QueryContext(c, "DELETE FROM par WHERE id = $1 RETURNING id", key)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return rows.Close()
		},
		"queryrow-returning": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			var id int64
			return tx.QueryRowContext(c, "DELETE FROM par WHERE id = $1 RETURNING id", key).Scan(&id)
		},
		"prepared-before-raise": func(c context.Context, tx *sql.Tx, pre *sql.Stmt, key int) error {
			_, err := pre.ExecContext(c, key)
			return err
		},
		"tx.Stmt-of-pool": func(c context.Context, tx *sql.Tx, _ *sql.Stmt, key int) error {
			_, err := tx.StmtContext(c, poolDel).ExecContext(c, key)
			return err
		},
	}
	svc := memlock.New()
	key := 1000
	for rn, raise := range raises {
		for dn, del := range deletes {
			for _, dctx := range []string{"l3", "l1", "tx"} {
				key++
				name := fmt.Sprintf("raise=%s/delete=%s/ctx=%s", rn, dn, dctx)
				testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
				l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rdp%d", key))
				ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
				dc := map[string]context.Context{"l3": ctx3, "l1": ctx1, "tx": ctx}[dctx]
				func() {
					tx, err := db.BeginTx(ctx1, nil)
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback() //nolint:errcheck
					if _, err := tx.ExecContext(ctx1, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					pre, err := tx.PrepareContext(ctx1, "DELETE FROM par WHERE id = $1")
					if err != nil {
						t.Fatalf("%s: prepare: %v", name, err)
					}
					defer pre.Close()
					step := func(what string, err error) bool {
						if err == nil {
							return false
						}
						if errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema) {
							t.Logf("%s: held: %s refused: %v", name, what, err)
						} else {
							t.Errorf("%s: %s: %v", name, what, err)
						}
						return true
					}
					if step("raise", raise(ctx3, tx, pre, key)) || step("delete", del(dc, tx, pre, key)) {
						return
					}
					if err := tx.Commit(); err != nil {
						t.Errorf("%s: commit: %v", name, err)
						return
					}
					if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), key, l2, l3); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}()
			}
		}
	}
}
