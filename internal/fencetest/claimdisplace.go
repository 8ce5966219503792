package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testClaimDisplaced: a claimed locking read with ORDER BY … LIMIT in a READ COMMITTED
// transaction, run as the two statements (the fencing UPDATE, then the read; on
// PostgreSQL a subquery in the select list keeps it from the one-statement form). The
// claim waits on a row another session holds; meanwhile a third session commits a row
// that starts to match ahead of it. The read, a statement of its own, sees that row:
// without the wrapper's restriction to the rows carrying the token it would return it
// in place of the row claimed (the same count), unstamped, and an older holder could
// then write the row the newer one read FOR UPDATE. The read must return the row
// claimed, stamped; an older token's write to either row must fail with ErrFenced or
// change nothing the newer holder read.
func testClaimDisplaced(t *testing.T, b Backend) {
	e := setup(t, b)
	// accounts 1 and 3 not ready (balance 0), 5 ready (balance 1).
	for _, id := range []int64{1, 3, 5} {
		if _, err := e.db.ExecContext(tok(e.ctx, 2), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), id, min(id/5, 1)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	// C holds account 5.
	c, err := e.raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Rollback() //nolint:errcheck
	if _, err := c.ExecContext(ctx, e.q("SELECT id FROM accounts WHERE id = ? FOR UPDATE"), 5); err != nil {
		t.Fatal(err)
	}
	read := "SELECT id, balance FROM accounts WHERE balance = ? ORDER BY id LIMIT 1 FOR UPDATE"
	if b.Numbered {
		read = "SELECT id, balance, (SELECT 1) AS one FROM accounts WHERE balance = ? ORDER BY id LIMIT 1 FOR UPDATE"
	}
	actx := tok(ctx, 10)
	a, err := e.db.BeginTx(actx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Rollback() //nolint:errcheck
	type result struct {
		id  int64
		err error
	}
	done := make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		rows, err := a.QueryContext(actx, e.q(read), 1)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			vals := []any{new(int64), new(int64)}
			if b.Numbered {
				vals = append(vals, new(int64))
			}
			if err := rows.Scan(vals...); err != nil {
				done <- result{err: err}
				return
			}
			ids = append(ids, *vals[0].(*int64))
		}
		if err := rows.Err(); err != nil {
			done <- result{err: err}
			return
		}
		if len(ids) != 1 {
			done <- result{err: errors.New("the claimed read did not return one row")}
			return
		}
		done <- result{id: ids[0]}
	}()
	e.awaitRowLockWait(ctx, finished) // A's claim waits on account 5
	// D, a holder of token 3: account 3 becomes ready and commits.
	if _, err := e.db.ExecContext(tok(ctx, 3), e.q("UPDATE accounts SET balance = ? WHERE id = ?"), 1, 3); err != nil {
		t.Fatalf("the third session's write: %v", err)
	}
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		// A refusal is safe; the wrapper's answer is the claimed row, so say which.
		t.Fatalf("the claimed read: %v, want account 5", r.err)
	}
	if r.id != 5 {
		t.Fatalf("the claimed read returned account %d, want 5 (the row its claim stamped)", r.id)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := e.row(5); got.token != 10 {
		t.Fatalf("account 5 after the claim: %+v, want token 10", got)
	}
	if _, err := e.db.ExecContext(tok(ctx, 7), e.q("UPDATE accounts SET balance = ? WHERE id = ?"), 9, 5); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("an older holder's write of the claimed row: %v, want ErrFenced", err)
	}
}
