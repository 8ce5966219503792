package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/jackc/pgx/v5"
)

// Several leases through fencedpgx with a real memlock service (a red-team pass
// held it; the other fencedpgx tests use a fake lease whose confirmation always
// succeeds). A lease the service expired while its
// client has not noticed is re-granted to a new holder, which writes row 1; the old
// client then takes lock 2 (larger token) and binds both. Every fencedpgx path must
// refuse to write row 1 with the larger token (ErrLeaseLost), as database/sql does.
func TestStaleLeaseBesideNewerRefused(t *testing.T) {
	for _, how := range []string{"Begin", "PoolExec", "PoolBatch", "TxStatementJoins", "SavepointJoins", "TxBatchJoins"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, raw, db := oneConnDB(t, ctx, bindingSeed)
			l1, n1, l2 := fencetest.StaleWindow(t, ctx, func(n1 *lockclient.Lease) error {
				_, err := db.Exec(fencedsql.WithLease(ctx, n1), `UPDATE accounts SET balance = 111 WHERE id = 1`)
				return err
			})
			const stale = `UPDATE accounts SET balance = 999 WHERE id = 1`
			var err error
			switch how {
			case "Begin":
				tx, err := db.Begin(fencedsql.WithLeases(ctx, l1, l2))
				if err == nil {
					_, err = tx.Exec(ctx, stale)
					if err == nil {
						err = tx.Commit(ctx)
					} else {
						_ = tx.Rollback(ctx)
					}
				}
				if !errors.Is(err, lockclient.ErrLeaseLost) {
					t.Errorf("got %v, want ErrLeaseLost", err)
				}
			case "PoolExec":
				_, err = db.Exec(fencedsql.WithLeases(ctx, l1, l2), stale)
				if !errors.Is(err, lockclient.ErrLeaseLost) {
					t.Errorf("got %v, want ErrLeaseLost", err)
				}
			case "PoolBatch":
				b := &pgx.Batch{}
				b.Queue(stale)
				br := db.SendBatch(fencedsql.WithLeases(ctx, l1, l2), b)
				_, err = br.Exec()
				if cerr := br.Close(); err == nil {
					err = cerr
				}
				if !errors.Is(err, lockclient.ErrLeaseLost) {
					t.Errorf("got %v, want ErrLeaseLost", err)
				}
			case "TxStatementJoins", "SavepointJoins", "TxBatchJoins":
				tx, err := db.Begin(fencedsql.WithLease(ctx, l2))
				if err != nil {
					t.Fatal(err)
				}
				var werr error
				switch how {
				case "TxStatementJoins":
					_, werr = tx.Exec(fencedsql.WithLease(ctx, l1), stale)
				case "SavepointJoins":
					sp, err := tx.Begin(fencedsql.WithLease(ctx, l1))
					if err == nil {
						_, werr = sp.Exec(ctx, stale)
						if werr == nil {
							werr = sp.Commit(ctx)
						}
					} else {
						werr = err
					}
				case "TxBatchJoins":
					b := &pgx.Batch{}
					b.Queue(stale)
					br := tx.SendBatch(fencedsql.WithLease(ctx, l1), b)
					_, werr = br.Exec()
					if cerr := br.Close(); werr == nil {
						werr = cerr
					}
				}
				cerr := tx.Commit(ctx)
				if !errors.Is(werr, lockclient.ErrLeaseLost) && !errors.Is(cerr, lockclient.ErrLeaseLost) {
					t.Errorf("statement %v, commit %v: want ErrLeaseLost", werr, cerr)
				}
			}
			var bal, tk int64
			if err := raw.QueryRow(ctx, `SELECT balance, fence_token FROM accounts WHERE id = 1`).Scan(&bal, &tk); err != nil {
				t.Fatal(err)
			}
			if bal != 111 {
				t.Fatalf("FAIL-OPEN: row 1 balance %d token %d: the stale holder's write landed over the new holder's (n1=%d l1=%d l2=%d)", bal, tk, n1.Token(), l1.Token(), l2.Token())
			}
		})
	}
}
