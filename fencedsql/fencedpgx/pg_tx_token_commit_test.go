package fencedpgx_test

// Red-team rt60c through fencedpgx: the transaction's recorded token
// (fencedsql_guard.tx_token) on paths that reach the server without the wrapper
// recording it again: COMMIT (a user's deferred constraint trigger deletes the parent
// then, and the cascade deletes kid) after the raise was made by a savepoint's Begin
// alone or reverted by a savepoint's rollback (GORM/bun nested transactions), and a
// ROLLBACK TO sent on Tx.Conn() (the raw *pgx.Conn, which re-arms the session and
// table checks but not the recording).
//
// Oracle: kid, fenced under l1 by the transaction, deleted in it after l3 joined:
// its tombstone >= l3, and an INSERT of the key under l2 (l1 < l2 < l3) is ErrFenced.

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

func TestTxTokenPgxCommitTimeCascade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	raw, c := txTokPgxSetup(t, ctx, false, nil, fencetest.JobsDeletingParentAtCommit()...)
	svc := memlock.New()
	shapes := []struct {
		name   string
		defer_ bool // the deletion is the deferred trigger's at COMMIT; else a DELETE of par after the shape
		run    func(tx pgx.Tx, ctx1, ctx3 context.Context) error
	}{
		{"control: statement under l3 then commit", true, func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			_, err := tx.Exec(ctx3, "SELECT 1")
			return err
		}},
		// The lease joins by the savepoint's Begin (Tx.Begin → checkLease →
		// noteTxToken), no statement follows under it: nothing is ever recorded.
		{"lease joins by nested Begin, released, commit", true, func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			sp, err := tx.Begin(ctx3)
			if err != nil {
				return err
			}
			return sp.Commit(ctx3)
		}},
		// GORM/bun: a nested transaction under the new lease fails and is rolled back;
		// the outer one commits.
		{"nested tx under l3 rolled back, commit", true, func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			sp, err := tx.Begin(ctx3)
			if err != nil {
				return err
			}
			if _, err := sp.Exec(ctx3, "SELECT 1"); err != nil {
				return err
			}
			return sp.Rollback(ctx3)
		}},
		// Tx.Conn(): the raw connection re-arms the session and table checks
		// (Unwrapped → conn.Raw), not the recorded token.
		{"Tx.Conn ROLLBACK TO, then DELETE through the wrapper", false, func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			if _, err := tx.Exec(ctx1, "SAVEPOINT s"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx3, "SELECT 1"); err != nil {
				return err
			}
			_, err := tx.Conn().Exec(ctx3, "ROLLBACK TO SAVEPOINT s")
			return err
		}},
	}
	for i, s := range shapes {
		k := 100 + i
		t.Run(s.name, func(t *testing.T) {
			if _, err := raw.ExecContext(ctx, fmt.Sprintf("INSERT INTO par (id) VALUES (%d); INSERT INTO kid (id, pid) VALUES (%d, %d)", k, k, k)); err != nil {
				t.Fatal(err)
			}
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rt60c-pgx%d", k))
			ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
			tx, err := c.Begin(ctx1)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			pre := []string{fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", k)}
			if s.defer_ {
				pre = append(pre, fmt.Sprintf("INSERT INTO jobs (par_id) VALUES (%d)", k))
			}
			for _, q := range pre {
				if _, err := tx.Exec(ctx1, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := s.run(tx, ctx1, ctx3); err != nil {
				if errors.Is(err, fencedsql.ErrUnsupported) {
					t.Logf("held: refused: %v", err)
					return
				}
				t.Fatalf("shape: %v", err)
			}
			if !s.defer_ {
				if _, err := tx.Exec(ctx3, fmt.Sprintf("DELETE FROM par WHERE id = %d", k)); err != nil {
					t.Fatalf("delete par: %v", err)
				}
			}
			if err := tx.Commit(ctx3); err != nil {
				t.Fatalf("commit: %v", err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM kid WHERE id = %d", k)).Scan(&n); err != nil || n != 0 {
				t.Fatalf("kid %d still there (%d, %v)", k, n, err)
			}
			if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", pgxExec(c), k, l2, l3); err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
		})
	}
}
