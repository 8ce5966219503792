// Conformance cases on PostgreSQL: batches and CopyFrom.

package fencedpgx_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func testBatch(t *testing.T, e *pgEnv) {
	e.seed(5, 1, 2, 3)
	b := &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue("DELETE FROM accounts WHERE id = $1", 2)
	b.Queue("SELECT balance FROM accounts WHERE id = $1", 1)
	b.Queue("INSERT INTO accounts (id, balance) VALUES ($1, $2)", 4, 7)
	b.Queue("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 3)
	br := e.db.SendBatch(tok(e.ctx, 6), b)
	if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("update: %v %v", tag, err)
	}
	if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("delete: %v %v", tag, err)
	}
	var bal int64
	if err := br.QueryRow().Scan(&bal); err != nil || bal != 99 {
		t.Fatalf("select: %d %v", bal, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{99, 6, 2})
	wantRow(t, e.row(4), acct{7, 6, 1})
	wantRow(t, e.row(3), acct{100, 6, 2}) // claimed
	if e.count() != 3 {
		t.Fatal("DELETE in the batch did not delete")
	}
	// In a transaction, with callbacks.
	tx, err := e.db.Begin(tok(e.ctx, 7))
	if err != nil {
		t.Fatal(err)
	}
	b = &pgx.Batch{}
	var got int64
	b.Queue(debit, 1, 1).Exec(func(tag pgconn.CommandTag) error { return nil })
	b.Queue("UPDATE accounts SET balance = 5 WHERE id = $1 RETURNING balance", 3).QueryRow(func(r pgx.Row) error { return r.Scan(&got) })
	if err := tx.SendBatch(e.ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got != 5 {
		t.Fatalf("callback got %d", got)
	}
	wantRow(t, e.row(3), acct{5, 7, 3})
}

// A claimed read in a batch on a table with a rule on UPDATE (PostgreSQL refuses the
// one-statement claim there) runs as the claiming UPDATE and the read, and claims.
func testBatchClaimRuleTable(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	if _, err := e.raw.Exec(e.ctx, "CREATE RULE audit_claims AS ON UPDATE TO accounts DO ALSO INSERT INTO audit_log (account_id) VALUES (NEW.id)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.raw.Exec(context.Background(), "DROP RULE IF EXISTS audit_claims ON accounts") })
	db := e.fenced(1) // a pool that has not asked about the table yet
	b := &pgx.Batch{}
	b.Queue("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1)
	br := db.SendBatch(tok(e.ctx, 8), b)
	var bal int64
	err := br.QueryRow().Scan(&bal)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil || bal != 100 {
		t.Fatalf("claimed read in a batch on a table with a rule: %d, %v", bal, err)
	}
	wantRow(t, e.row(1), acct{100, 8, 2})
}

// The rule added under a running pool whose verdict said yes: the one-statement claim
// in the batch fails (nothing claimed), and the pool's next batch asks again and claims
// in two statements.
func testBatchClaimRuleAdded(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	db := e.fenced(1) // a pool of its own: its verdict is asked below
	claim := func(token uint64) (int64, error) {
		b := &pgx.Batch{}
		b.Queue("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1)
		br := db.SendBatch(tok(e.ctx, token), b)
		var bal int64
		err := br.QueryRow().Scan(&bal)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return bal, err
	}
	if bal, err := claim(7); err != nil || bal != 100 {
		t.Fatalf("claimed read in a batch: %d, %v", bal, err)
	}
	if _, err := e.raw.Exec(e.ctx, "CREATE RULE audit_claims AS ON UPDATE TO accounts DO ALSO INSERT INTO audit_log (account_id) VALUES (NEW.id)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.raw.Exec(context.Background(), "DROP RULE IF EXISTS audit_claims ON accounts") })
	if _, err := claim(8); err == nil || errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("the claim under the stale verdict: %v, want the database's refusal", err)
	}
	wantRow(t, e.row(1), acct{100, 7, 2})
	if bal, err := claim(9); err != nil || bal != 100 {
		t.Fatalf("the next claimed read in a batch: %d, %v", bal, err)
	}
	wantRow(t, e.row(1), acct{100, 9, 3})
}

// A batch with a stale statement in it fails with ErrFenced, and nothing of it is
// applied (the batch is one transaction).
func testBatchStale(t *testing.T, e *pgEnv) {
	e.seed(5, 1, 3)
	e.seed(9, 2)
	b := &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue(debit, 1, 2) // row 2 was written with token 9
	b.Queue(debit, 1, 3)
	br := e.db.SendBatch(tok(e.ctx, 6), b)
	if _, err := br.Exec(); err != nil {
		t.Fatalf("first: %v", err)
	}
	_, err := br.Exec()
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = br.Exec()
	wantErr(t, err, fencedsql.ErrFenced)
	wantErr(t, br.Close(), fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 5, 1})
	wantRow(t, e.row(2), acct{100, 9, 1})
	wantRow(t, e.row(3), acct{100, 5, 1})
	// Close alone reports it too, and a stale DELETE in a batch deletes nothing.
	b = &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue("DELETE FROM accounts WHERE id = $1", 2)
	wantErr(t, e.db.SendBatch(tok(e.ctx, 6), b).Close(), fencedsql.ErrFenced)
	if e.count() != 3 {
		t.Fatal("stale DELETE in a batch deleted")
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testBatchRefused(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	for name, ctx := range map[string]context.Context{"no token": e.ctx, "unsupported": tok(e.ctx, 6)} {
		b := &pgx.Batch{}
		b.Queue("INSERT INTO audit_log (account_id) VALUES (1)")
		if name == "no token" {
			b.Queue(debit, 1, 1)
		} else {
			b.Queue("TRUNCATE accounts")
		}
		br := e.db.SendBatch(ctx, b)
		_, err := br.Exec()
		want := map[string]error{"no token": fencedsql.ErrNoToken, "unsupported": fencedsql.ErrUnsupported}[name]
		wantErr(t, err, want)
		wantErr(t, br.Close(), want)
	}
	var n int
	if err := e.raw.QueryRow(e.ctx, "SELECT count(*) FROM audit_log").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a refused batch was sent: %d %v", n, err)
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(debit, 1, 1)
	wantErr(t, e.db.SendBatch(tok(e.ctx, 6), b).Close(), fencedsql.ErrUnsupported)
}

func testCopyFrom(t *testing.T, e *pgEnv) {
	_, err := e.db.CopyFrom(tok(e.ctx, 5), pgx.Identifier{"accounts"}, []string{"id", "balance"}, pgx.CopyFromRows([][]any{{1, 1}}))
	wantErr(t, err, fencedsql.ErrUnsupported)
	if !strings.Contains(err.Error(), "bulk copy") {
		t.Fatalf("unclear refusal: %v", err)
	}
	_, err = e.db.CopyFrom(e.ctx, pgx.Identifier{"public", "accounts"}, []string{"id", "balance"}, pgx.CopyFromRows([][]any{{1, 1}}))
	wantErr(t, err, fencedsql.ErrUnsupported)
	n, err := e.db.CopyFrom(e.ctx, pgx.Identifier{"audit_log"}, []string{"account_id", "note"}, pgx.CopyFromRows([][]any{{1, "a"}, {2, "b"}}))
	if err != nil || n != 2 {
		t.Fatalf("copy into an unguarded table: %d %v", n, err)
	}
	if e.count() != 0 {
		t.Fatal("refused copy was sent")
	}
}
