package fencedpgx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestTxTokenPgxRaiseDeletePaths (kept from red-team rdp, held; generator: raising path × deleting path × the
// context of the deletion). Schedule, for each combination, on a fencedpgx Conn with
// kid guarded (tombstones) and par unguarded or guarded:
//
//	tx begun under l1; UPDATE kid k (stamped l1);
//	the raising step under l3 (Exec, Query, QueryRow, a batch, a statement prepared by
//	name, a nested Begin(ctx3) committed or rolled back, a CopyFrom into an unguarded
//	table);
//	DELETE FROM par k (cascade deletes kid k) through the deleting path (Exec, Query with
//	RETURNING, QueryRow, a batch alone or after a SELECT, a statement prepared by name,
//	inside a nested Begin then Commit) under ctx3, ctx1 or the transaction's own ctx;
//	COMMIT.
//
// Oracle (fencetest.RaisedTombstone): kid k's tombstone >= l3 and kid k's INSERT
// under l2 is ErrFenced. A typed refusal of a step (ErrUnsupported, ErrSchema) is held.
func TestTxTokenPgxRaiseDeletePaths(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	type stepFn func(ctx context.Context, tx pgx.Tx, key int) error
	exec := func(q string) stepFn {
		return func(c context.Context, tx pgx.Tx, key int) error {
			_, err := tx.Exec(c, fmt.Sprintf(q, key))
			return err
		}
	}
	raises := map[string]stepFn{
		"exec": exec("SELECT %d"),
		"query": func(c context.Context, tx pgx.Tx, key int) error {
			rows, err := tx.Query(c, "SELECT $1::int", key)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		},
		"queryrow": func(c context.Context, tx pgx.Tx, key int) error {
			var n int
			return tx.QueryRow(c, "SELECT $1::int", key).Scan(&n)
		},
		"batch": func(c context.Context, tx pgx.Tx, key int) error {
			b := &pgx.Batch{}
			b.Queue("SELECT $1::int", key)
			return tx.SendBatch(c, b).Close()
		},
		"prepared-by-name": func(c context.Context, tx pgx.Tx, key int) error {
			name := fmt.Sprintf("r%d", key)
			if _, err := tx.Prepare(c, name, "SELECT $1::int"); err != nil {
				return err
			}
			_, err := tx.Exec(c, name, key)
			return err
		},
		"nested-begin-commit": func(c context.Context, tx pgx.Tx, key int) error {
			sp, err := tx.Begin(c)
			if err != nil {
				return err
			}
			return sp.Commit(context.Background())
		},
		"nested-begin-rollback": func(c context.Context, tx pgx.Tx, key int) error {
			sp, err := tx.Begin(c)
			if err != nil {
				return err
			}
			return sp.Rollback(context.Background())
		},
		"copy-unguarded": func(c context.Context, tx pgx.Tx, key int) error {
			_, err := tx.CopyFrom(c, pgx.Identifier{"log"}, []string{"x"}, pgx.CopyFromRows([][]any{{int64(key)}}))
			return err
		},
	}
	const del = "DELETE FROM par WHERE id = %d"
	deletes := map[string]stepFn{
		"exec": exec(del),
		"query-returning": func(c context.Context, tx pgx.Tx, key int) error {
			rows, err := tx.Query(c, "DELETE FROM par WHERE id = $1 RETURNING id", key)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		},
		"queryrow-returning": func(c context.Context, tx pgx.Tx, key int) error {
			var id int64
			return tx.QueryRow(c, "DELETE FROM par WHERE id = $1 RETURNING id", key).Scan(&id)
		},
		"batch-alone": func(c context.Context, tx pgx.Tx, key int) error {
			b := &pgx.Batch{}
			b.Queue("DELETE FROM par WHERE id = $1", key)
			return tx.SendBatch(c, b).Close()
		},
		"batch-after-select": func(c context.Context, tx pgx.Tx, key int) error {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("DELETE FROM par WHERE id = $1", key)
			return tx.SendBatch(c, b).Close()
		},
		"prepared-by-name": func(c context.Context, tx pgx.Tx, key int) error {
			name := fmt.Sprintf("d%d", key)
			if _, err := tx.Prepare(c, name, "DELETE FROM par WHERE id = $1"); err != nil {
				return err
			}
			_, err := tx.Exec(c, name, key)
			return err
		},
		"nested": func(c context.Context, tx pgx.Tx, key int) error {
			sp, err := tx.Begin(c)
			if err != nil {
				return err
			}
			if _, err := sp.Exec(c, fmt.Sprintf(del, key)); err != nil {
				return err
			}
			return sp.Commit(context.Background())
		},
	}
	for _, guardPar := range []bool{false, true} {
		raw, c := txTokPgxSetup(t, ctx, guardPar, nil)
		if _, err := raw.ExecContext(ctx, "CREATE TABLE log (x bigint)"); err != nil {
			t.Fatal(err)
		}
		svc := memlock.New()
		key := 0
		for rn, raise := range raises {
			for dn, delete := range deletes {
				for _, dctx := range []string{"l3", "l1", "tx"} {
					key++
					name := fmt.Sprintf("par-guarded=%v/raise=%s/delete=%s/ctx=%s", guardPar, rn, dn, dctx)
					if _, err := raw.ExecContext(ctx, fmt.Sprintf("INSERT INTO par (id) VALUES (%d); INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key, key)); err != nil {
						t.Fatal(err)
					}
					l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rdp-%d-%v", key, guardPar))
					ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
					dc := map[string]context.Context{"l3": ctx3, "l1": ctx1, "tx": ctx}[dctx]
					func() {
						tx, err := c.Begin(ctx1)
						if err != nil {
							t.Fatalf("%s: begin: %v", name, err)
						}
						defer tx.Rollback(ctx) //nolint:errcheck
						if _, err := tx.Exec(ctx1, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)); err != nil {
							t.Fatalf("%s: stamping kid under l1: %v", name, err)
						}
						held := func(step string, err error) bool {
							if errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema) {
								t.Logf("%s: held: %s refused: %v", name, step, err)
								return true
							}
							t.Errorf("%s: %s: %v", name, step, err)
							return true
						}
						if err := raise(ctx3, tx, key); err != nil && held("raise", err) {
							return
						}
						if err := delete(dc, tx, key); err != nil && held("delete", err) {
							return
						}
						if err := tx.Commit(ctx); err != nil {
							t.Errorf("%s: commit: %v", name, err)
							return
						}
						if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", pgxExec(c), key, l2, l3); err != nil {
							t.Errorf("%s: %v", name, err)
						}
					}()
				}
			}
		}
	}
}
