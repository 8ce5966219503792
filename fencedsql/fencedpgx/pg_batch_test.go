// Conformance cases on PostgreSQL: batches and CopyFrom.

package fencedpgx_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
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
// one-statement claim there) runs as the claiming UPDATE and the read, and claims. A
// rule on the table is a door the lazy check refuses (ErrSchema) in a pool that starts
// with it, so the rule is created under a pool whose lazy check passed, and which has
// not asked about the claim yet.
func testBatchClaimRuleTable(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	db := e.fenced(1)
	if _, err := db.Exec(tok(e.ctx, 6), "UPDATE accounts SET balance = balance WHERE id = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.raw.Exec(e.ctx, "CREATE RULE audit_claims AS ON UPDATE TO accounts DO ALSO INSERT INTO audit_log (account_id) VALUES (NEW.id)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.raw.Exec(context.Background(), "DROP RULE IF EXISTS audit_claims ON accounts") })
	if _, err := e.fenced(1).Exec(tok(e.ctx, 6), "UPDATE accounts SET balance = balance WHERE id = 0"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("a fresh pool with a rule on accounts: %v, want ErrSchema", err)
	}
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

// freshPG opens a fresh database with ddl run on it: the raw pool (unfenced, for setup
// and checks) and a pool fenced on accounts.
func freshPG(t *testing.T, ddl string) (context.Context, *pgxpool.Pool, *fencedpgx.Pool) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	raw := openPool(t, ctx, dsn, 4)
	if _, err := raw.Exec(ctx, ddl); err != nil {
		t.Fatalf("schema: %v", err)
	}
	db, err := fencedpgx.New(openPool(t, ctx, dsn, 4), fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	return ctx, raw, db
}

const plainAccounts = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
	fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);`

// batchRead sends read (with its argument) and a trailing SELECT 1 as one batch on s and
// returns the ids of the rows read (the first column) and the batch's first error.
func batchRead(ctx context.Context, s interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, read string, arg any) ([]int64, error) {
	b := &pgx.Batch{}
	b.Queue(read, arg)
	b.Queue("SELECT 1") // the batch's transaction stays open while the rows are read
	br := s.SendBatch(ctx, b)
	rows, err := br.Query()
	var ids []int64
	if err == nil {
		for rows.Next() {
			vals, verr := rows.Values()
			if verr != nil {
				err = verr
				break
			}
			ids = append(ids, vals[0].(int64))
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return ids, err
}

// G10 in a batch: when the claim cannot be one statement (a subquery in the select
// list; an ordinary AFTER UPDATE trigger on the table), the batch sends the claim and
// then the read restricted to the rows carrying the token, as Query does: the rows
// read are the rows claimed. Sending the caller's own text again instead (a new
// snapshot under READ COMMITTED) returned a row that started to match while the claim
// waited for its lock, unstamped, which an older holder could still write
// (red-team F1; fencetest's testClaimDisplaced through a pgx batch).
func TestBatchClaimReadsOnlyClaimedRows(t *testing.T) {
	for _, c := range []struct{ name, extra, read string }{
		{"SubqueryInSelectList", "", "SELECT id, balance, (SELECT 1) AS one FROM accounts WHERE balance = $1 ORDER BY id LIMIT 1 FOR UPDATE"},
		{"AuditTrigger", `CREATE TABLE audit (id BIGINT);
			CREATE FUNCTION audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO audit VALUES (NEW.id); RETURN NULL; END$$;
			CREATE TRIGGER audit_upd AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION audit_fn();`,
			"SELECT id, balance FROM accounts WHERE balance = $1 ORDER BY id LIMIT 1 FOR UPDATE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, raw, db := freshPG(t, plainAccounts+c.extra)
			for _, r := range [][2]int64{{1, 0}, {3, 0}, {5, 1}} {
				if _, err := db.Exec(tok(ctx, 2), "INSERT INTO accounts (id, balance) VALUES ($1, $2)", r[0], r[1]); err != nil {
					t.Fatal(err)
				}
			}
			// Another transaction holds row 5, the one row the read selects.
			other, err := raw.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback(ctx)
			if _, err := other.Exec(ctx, "SELECT id FROM accounts WHERE id = 5 FOR UPDATE"); err != nil {
				t.Fatal(err)
			}
			type result struct {
				ids []int64
				err error
			}
			done := make(chan result, 1)
			go func() {
				ids, err := batchRead(tok(ctx, 10), db, c.read, 1)
				done <- result{ids, err}
			}()
			time.Sleep(400 * time.Millisecond) // the claim waits for row 5
			// Meanwhile row 3 starts to match, under token 3, and commits.
			if _, err := db.Exec(tok(ctx, 3), "UPDATE accounts SET balance = 1 WHERE id = 3"); err != nil {
				t.Fatal(err)
			}
			_ = other.Rollback(ctx)
			r := <-done
			if r.err != nil || len(r.ids) != 1 || r.ids[0] != 5 {
				t.Fatalf("claimed read in a batch: rows %v, err %v; want row 5, the row claimed", r.ids, r.err)
			}
			var tok3, tok5 int64
			if err := raw.QueryRow(ctx, "SELECT (SELECT fence_token FROM accounts WHERE id = 3), (SELECT fence_token FROM accounts WHERE id = 5)").Scan(&tok3, &tok5); err != nil {
				t.Fatal(err)
			}
			if tok3 != 3 || tok5 != 10 {
				t.Fatalf("tokens: row 3 %d (want 3), row 5 %d (want 10)", tok3, tok5)
			}
			// The row returned is claimed: an older holder's late write is fenced.
			_, err = db.Exec(tok(ctx, 7), "UPDATE accounts SET balance = 99 WHERE id = $1", 5)
			wantErr(t, err, fencedsql.ErrFenced)
		})
	}
}

// The claimed read of a batch counts its rows against the rows its claim stamped, as
// Query's does (exact): on a table whose AFTER UPDATE trigger keeps the claim in two
// statements, a BEFORE UPDATE trigger that moves the stamped row out of the
// read's condition makes the read return fewer rows than were claimed, which is
// refused (ErrUnsupported), and a transaction holding it can only roll back. Through
// Tx.Query too (fencedpgx reads pgx's rows itself: the count is judged when they
// close), and a DELETE's two statements in a batch likewise.
func TestBatchTwoStatementsCounted(t *testing.T) {
	ctx, raw, db := freshPG(t, plainAccounts+`
		CREATE FUNCTION move_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.balance := NEW.balance + 1; RETURN NEW; END$$;
		CREATE TRIGGER move_upd BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION move_fn();
		CREATE FUNCTION noop_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
		CREATE TRIGGER noop_upd AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION noop_fn(); -- two statements
		INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 10, 2, 1), (2, 20, 2, 1), (3, 30, 2, 1);`)
	const read = "SELECT id, balance FROM accounts WHERE balance = $1 FOR UPDATE"
	// A batch on the pool: refused as it is read (its implicit transaction has
	// committed the claim by then, which only fences older holders out of row 1).
	_, err := batchRead(tok(ctx, 5), db, read, 10)
	wantErr(t, err, fencedsql.ErrUnsupported)
	// A batch in a transaction: the transaction can only roll back.
	tx, err := db.Begin(tok(ctx, 6))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = batchRead(ctx, tx, read, 20)
	wantErr(t, err, fencedsql.ErrUnsupported)
	if err := tx.Commit(ctx); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("Commit after an inexact claimed read in a batch: %v, want ErrUnsupported", err)
	}
	// Tx.Query.
	tx, err = db.Begin(tok(ctx, 7))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, read, 30)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	wantErr(t, rows.Err(), fencedsql.ErrUnsupported)
	if err := tx.Commit(ctx); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("Commit after an inexact claimed Query: %v, want ErrUnsupported", err)
	}
	// A DELETE's two statements in a batch are judged alike (twoStep's check).
	tx, err = db.Begin(tok(ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	b := &pgx.Batch{}
	b.Queue("DELETE FROM accounts WHERE balance = $1", 20)
	wantErr(t, tx.SendBatch(ctx, b).Close(), fencedsql.ErrUnsupported)
	if err := tx.Commit(ctx); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("Commit after an inexact DELETE in a batch: %v, want ErrUnsupported", err)
	}
	var tok int64
	if err := raw.QueryRow(ctx, "SELECT max(fence_token) FROM accounts WHERE id IN (2, 3)").Scan(&tok); err != nil || tok != 2 {
		t.Fatalf("the refused transactions committed: max token %d, %v", tok, err)
	}
	if err := raw.QueryRow(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok); err != nil || tok != 5 {
		t.Fatalf("row 1: token %d, %v; want 5", tok, err)
	}
}

// A claim by row locator (ORDER BY … LIMIT) on a partitioned table is refused in a
// batch as on the statement path (conn.locatable): a ctid names a row only within
// one partition, and the batch's claim stamped and returned the row with the same
// ctid in another partition, outside the selection (red-team F4).
func TestBatchClaimByLocatorOnPartitionedTable(t *testing.T) {
	ctx, raw, db := freshPG(t, `
		CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			PRIMARY KEY (id)) PARTITION BY RANGE (id);
		CREATE TABLE accounts_lo PARTITION OF accounts FOR VALUES FROM (0) TO (100);
		CREATE TABLE accounts_hi PARTITION OF accounts FOR VALUES FROM (100) TO (1000);
		INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1), (101, 100, 3, 1)`)
	const read = "SELECT id, balance FROM accounts WHERE id < $1 ORDER BY id LIMIT 1 FOR UPDATE"
	tctx := tok(ctx, 7)
	tx, err := db.Begin(tctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(tctx, read, 100)
	wantErr(t, err, fencedsql.ErrUnsupported) // the statement path: the control
	_ = tx.Rollback(ctx)
	tx, err = db.Begin(tctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for name, s := range map[string]interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}{"pool": db, "tx": tx} {
		ids, err := batchRead(tctx, s, read, 100)
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("%s: claim by locator on a partitioned table in a batch: rows %v, err %v, want ErrUnsupported", name, ids, err)
		}
	}
	var got [2]acct
	for i, id := range []int64{1, 101} {
		if err := raw.QueryRow(ctx, "SELECT balance, fence_token, version FROM accounts WHERE id = $1", id).Scan(&got[i].balance, &got[i].token, &got[i].version); err != nil {
			t.Fatal(err)
		}
	}
	if got != [2]acct{{100, 5, 1}, {100, 3, 1}} {
		t.Fatalf("a refused claim stamped rows: %+v", got)
	}
}

// G13 in a batch: a batch whose lease is lost sends nothing (ErrLeaseLost), as Exec
// refuses; in a transaction begun without a lease, a batch's lease joins the
// transaction, so that a later batch and Commit refuse once it is lost (red-team F3).
func TestBatchLostLease(t *testing.T) {
	ctx, raw, db := freshPG(t, plainAccounts+`INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100)`)
	balances := func() [2]int64 {
		var b [2]int64
		if err := raw.QueryRow(ctx, "SELECT (SELECT balance FROM accounts WHERE id = 1), (SELECT balance FROM accounts WHERE id = 2)").Scan(&b[0], &b[1]); err != nil {
			t.Fatal(err)
		}
		return b
	}
	lost := &lostLease{tok: 6, lost: make(chan struct{})}
	close(lost.lost)
	b := &pgx.Batch{}
	b.Queue(debit, 50, 1)
	wantErr(t, db.SendBatch(fencedsql.WithLease(ctx, lost), b).Close(), lockclient.ErrLeaseLost)
	if got := balances(); got != [2]int64{100, 100} {
		t.Fatalf("a batch with a lost lease wrote: %v", got)
	}

	for _, second := range []bool{false, true} {
		l := &lostLease{tok: 7, lost: make(chan struct{})}
		lctx := fencedsql.WithLease(ctx, l)
		tx, err := db.Begin(ctx) // no lease on the transaction
		if err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(debit, 10, 1)
		if err := tx.SendBatch(lctx, b).Close(); err != nil {
			t.Fatal(err)
		}
		close(l.lost)
		if second {
			b = &pgx.Batch{}
			b.Queue(debit, -10, 2)
			wantErr(t, tx.SendBatch(lctx, b).Close(), lockclient.ErrLeaseLost)
		}
		wantErr(t, tx.Commit(ctx), lockclient.ErrLeaseLost)
		if got := balances(); got != [2]int64{100, 100} {
			t.Fatalf("second batch %v: committed after the batch's lease was lost: %v", second, got)
		}
	}
}
