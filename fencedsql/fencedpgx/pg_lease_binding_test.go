package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/jackc/pgx/v5"
)

// The lease binding of fencedpgx transactions and savepoints (red-team rt31c F1, F5).

func bindingLease(tok uint64) *lostLease { return &lostLease{tok: tok, lost: make(chan struct{})} }

const bindingSeed = `INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100), (3, 100);`

func bindingRowToken(t *testing.T, ctx context.Context, raw interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id int) int64 {
	t.Helper()
	var tk int64
	if err := raw.QueryRow(ctx, `SELECT fence_token FROM accounts WHERE id = $1`, id).Scan(&tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestNoUsableTokenBindingRefusesClaimPgx (rt31c F1): a transaction begun under a nil
// *lockclient.Lease refuses a claim (SELECT … FOR UPDATE) sent with a plain context —
// tx.QueryRow or tx.SendBatch — as it refuses a guarded write: ErrNoToken, nothing
// sent, nothing stamped. Before, it ran as an ordinary locking read.
func TestNoUsableTokenBindingRefusesClaimPgx(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, how := range []string{"QueryRow", "SendBatch"} {
		t.Run(how, func(t *testing.T) {
			_, raw, db := oneConnDB(t, ctx, bindingSeed)
			tx, err := db.Begin(fencedsql.WithLease(ctx, (*lockclient.Lease)(nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			switch how {
			case "QueryRow":
				var b int64
				err = tx.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = 1 FOR UPDATE`).Scan(&b)
			case "SendBatch":
				bt := &pgx.Batch{}
				bt.Queue(`SELECT balance FROM accounts WHERE id = 1 FOR UPDATE`)
				br := tx.SendBatch(ctx, bt)
				_, err = br.Exec()
				if cerr := br.Close(); err == nil {
					err = cerr
				}
			}
			if !errors.Is(err, fencedsql.ErrNoToken) {
				t.Fatalf("claim: %v, want ErrNoToken", err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatalf("Commit after the refusal (nothing was sent): %v", err)
			}
			if tok := bindingRowToken(t, ctx, raw, 1); tok != 0 {
				t.Fatalf("row 1 stamped with %d", tok)
			}
		})
	}
}

// TestSavepointLeaseJoins (rt31c F5): a savepoint's context is judged as a statement's.
// A lease it carries that is already lost refuses the savepoint (ErrLeaseLost, nothing
// sent) and the transaction then only rolls back; a held one joins the transaction —
// its later loss refuses the savepoint's write and the Commit; a bare token other than
// the transaction's is refused with ErrUnsupported. Before, Tx.Begin ignored the
// binding of its context.
func TestSavepointLeaseJoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("lost", func(t *testing.T) {
		_, raw, db := oneConnDB(t, ctx, bindingSeed)
		a, b := bindingLease(5), bindingLease(10)
		tx, err := db.Begin(fencedsql.WithLease(ctx, b))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = 1 WHERE id = 2`); err != nil {
			t.Fatal(err)
		}
		close(a.lost)
		if _, err := tx.Begin(fencedsql.WithLease(ctx, a)); !errors.Is(err, lockclient.ErrLeaseLost) {
			t.Fatalf("savepoint under a lost lease: %v, want ErrLeaseLost", err)
		}
		if err := tx.Commit(ctx); !errors.Is(err, lockclient.ErrLeaseLost) {
			t.Fatalf("Commit after the refused savepoint: %v, want ErrLeaseLost", err)
		}
		if tok := bindingRowToken(t, ctx, raw, 2); tok != 0 {
			t.Fatalf("row 2 committed with token %d", tok)
		}
	})
	t.Run("joins", func(t *testing.T) {
		_, raw, db := oneConnDB(t, ctx, bindingSeed)
		a, b := bindingLease(12), bindingLease(10)
		tx, err := db.Begin(fencedsql.WithLease(ctx, b))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		sp, err := tx.Begin(fencedsql.WithLease(ctx, a))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Exec(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		if tok := bindingRowToken(t, ctx, tx, 1); tok != 12 {
			t.Fatalf("the savepoint's write carried %d, want the joined lease's 12", tok)
		}
		close(a.lost)
		if _, err := sp.Exec(ctx, `UPDATE accounts SET balance = 2 WHERE id = 1`); !errors.Is(err, lockclient.ErrLeaseLost) {
			t.Fatalf("write after the savepoint's lease was lost: %v, want ErrLeaseLost", err)
		}
		if err := tx.Commit(ctx); !errors.Is(err, lockclient.ErrLeaseLost) {
			t.Fatalf("Commit: %v, want ErrLeaseLost", err)
		}
		if tok := bindingRowToken(t, ctx, raw, 1); tok != 0 {
			t.Fatalf("row 1 committed with token %d", tok)
		}
	})
	t.Run("bare token", func(t *testing.T) {
		_, _, db := oneConnDB(t, ctx, bindingSeed)
		tx, err := db.Begin(fencedsql.WithToken(ctx, 10))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Begin(fencedsql.WithToken(ctx, 7)); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("savepoint under another bare token: %v, want ErrUnsupported", err)
		}
		sp, err := tx.Begin(fencedsql.WithToken(ctx, 10))
		if err != nil {
			t.Fatalf("savepoint under the transaction's token: %v", err)
		}
		if _, err := sp.Exec(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		if err := sp.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
