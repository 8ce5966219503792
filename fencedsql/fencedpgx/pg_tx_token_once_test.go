package fencedpgx_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestTxTokenPgxBatchRecordsOncePerBatch: in a fencedpgx transaction whose statements
// carried two tokens, a batch records the transaction's token once, before it is sent
// (every statement of a batch is judged, and what it records sent, before the batch
// is), not once or twice per statement; a single Exec records once. A batch whose
// lease raises the transaction's token records it too, and a row its statements
// delete by a cascade is tombstoned at no less than the raised token.
func TestTxTokenPgxBatchRecordsOncePerBatch(t *testing.T) {
	ctx := context.Background()
	cnt := &fencetest.PgxCounter{Substr: "fencedsql_guard.tx_token"} // the recordings of the transaction's token
	raw, c := txTokPgxSetup(t, ctx, true, cnt)
	if _, err := raw.ExecContext(ctx, "INSERT INTO par (id) VALUES (1), (2), (3); INSERT INTO kid (id, pid) VALUES (1, 1), (2, 2), (3, 3)"); err != nil {
		t.Fatal(err)
	}
	l1, l2, l3 := fencetest.ThreeLeases(t, memlock.New(), "pgxonce")
	ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
	counted := func(what string, want int64, run func() error) {
		t.Helper()
		before := cnt.N()
		if err := run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := cnt.N() - before; got != want {
			t.Errorf("%s: the transaction's token was recorded %d times; want %d", what, got, want)
		}
	}

	tx, err := c.Begin(ctx1)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	counted("a transaction of one token", 0, func() error {
		_, err := tx.Exec(ctx1, "UPDATE kid SET balance = balance + 1 WHERE id = 1")
		return err
	})
	counted("the raising statement", 1, func() error { _, err := tx.Exec(ctx3, "SELECT 1"); return err })
	counted("a fenced UPDATE", 1, func() error {
		_, err := tx.Exec(ctx3, "UPDATE kid SET balance = balance + 1 WHERE id = 2")
		return err
	})
	b := &pgx.Batch{}
	b.Queue("UPDATE kid SET balance = balance + 1 WHERE id = $1", 1)
	b.Queue("SELECT balance FROM par WHERE id = $1", 1)
	b.Queue("DELETE FROM par WHERE id = $1", 2)
	counted("a batch of three statements", 1, func() error { return tx.SendBatch(ctx3, b).Close() })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// The batch's lease raises the transaction's token at its first statement; its
	// last deletes par 3, whose cascade deletes kid 3, stamped under l1.
	tx, err = c.Begin(ctx1)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx1, "UPDATE kid SET balance = balance + 1 WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	b = &pgx.Batch{}
	b.Queue("SELECT balance FROM kid WHERE id = $1", 3)
	b.Queue("UPDATE par SET balance = balance + 1 WHERE id = $1", 3)
	b.Queue("DELETE FROM par WHERE id = $1", 3)
	counted("a batch that raises the transaction's token", 1, func() error { return tx.SendBatch(ctx3, b).Close() })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", pgxExec(c), 3, l2, l3); err != nil {
		t.Error(err)
	}
}
