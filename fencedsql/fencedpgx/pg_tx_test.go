// Conformance cases on PostgreSQL: a lease lost at commit, savepoints.

package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/jackc/pgx/v5"
)

type lostLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *lostLease) Token() uint64         { return l.tok }
func (l *lostLease) Lost() <-chan struct{} { return l.lost }

// GrantReceived and ConfirmHeldSince make it a fencedsql.LeaseConfirmer: the fake's
// lock service confirms it while it is held.
func (l *lostLease) GrantReceived() time.Time                          { return time.Time{} }
func (l *lostLease) ConfirmHeldSince(context.Context, time.Time) error { return l.Err() }
func (l *lostLease) Err() error {
	select {
	case <-l.lost:
		return lockclient.ErrLeaseLost
	default:
		return nil
	}
}

func testLeaseLost(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	l := &lostLease{tok: 6, lost: make(chan struct{})}
	tx, err := e.db.Begin(fencedsql.WithLease(e.ctx, l))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	close(l.lost)
	err = tx.Commit(e.ctx)
	wantErr(t, err, lockclient.ErrLeaseLost)
	if err := tx.Rollback(e.ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("Rollback after Commit: %v", err)
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testSavepoint(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	tx, err := e.db.Begin(tok(e.ctx, 6))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tx.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Exec(e.ctx, debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := sp.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, debit, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{98, 6, 2})
}

// pgx.TxOptions.BeginQuery and CommitQuery are SQL pgx sends verbatim in place of
// BEGIN and COMMIT, which the wrapper would never plan: BeginTx refuses them
// (ErrUnsupported) on a Pool and a Conn, sending nothing. They let an unfenced UPDATE
// lower a row's token, and a SET LOCAL synchronous_commit = off the wrapper refuses
// as a statement through (red-team F2). The other options still work.
func TestBeginTxQueryOptionsRefused(t *testing.T) {
	ctx, raw, db := freshPG(t, plainAccounts+`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 50, 3)`)
	pc, err := raw.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	conn, err := fencedpgx.WrapConn(pc.Conn(), fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	tctx := tok(ctx, 60)
	for _, opts := range []pgx.TxOptions{
		{BeginQuery: "BEGIN; UPDATE accounts SET balance = 0, fence_token = 1 WHERE id = 1"},
		{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"},
		{CommitQuery: "UPDATE accounts SET balance = 7, fence_token = 2 WHERE id = 1; COMMIT"},
	} {
		for name, b := range map[string]interface {
			BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
		}{"pool": db, "conn": conn} {
			tx, err := b.BeginTx(tctx, opts)
			if err == nil {
				_ = tx.Commit(ctx)
				t.Fatalf("%s: BeginTx(%+v) began a transaction, want ErrUnsupported", name, opts)
			}
			wantErr(t, err, fencedsql.ErrUnsupported)
		}
	}
	var a acct
	if err := raw.QueryRow(ctx, "SELECT balance, fence_token, version FROM accounts WHERE id = 1").Scan(&a.balance, &a.token, &a.version); err != nil {
		t.Fatal(err)
	}
	wantRow(t, a, acct{100, 50, 3})
	tx, err := conn.BeginTx(tctx, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadWrite})
	if err != nil {
		t.Fatalf("BeginTx with pgx's own options: %v", err)
	}
	defer tx.Rollback(ctx)
	var iso string
	if err := tx.QueryRow(ctx, "SELECT current_setting('transaction_isolation')").Scan(&iso); err != nil || iso != "serializable" {
		t.Fatalf("isolation %q, %v", iso, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A savepoint (Tx.Begin) is closed once its parent, or any ancestor, ended: every call
// returns pgx.ErrTxClosed and sends nothing, as pgx's own nested transaction does. On
// a pool the parent's end returns the connection; a savepoint that outlived it ran its
// statement on the connection's next user — inside a newer holder's transaction, with
// that holder's token, committed by that holder's Commit (red-team pgx F2). On a Conn
// it ran alone, in autocommit.
func TestSavepointClosedWithParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, raw, db := oneConnDB(t, ctx, `INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 5)`)
	row := func(t *testing.T) acct {
		t.Helper()
		var a acct
		if err := raw.QueryRow(ctx, "SELECT balance, fence_token, version FROM accounts WHERE id = 1").Scan(&a.balance, &a.token, &a.version); err != nil {
			t.Fatal(err)
		}
		return a
	}
	const stale = "UPDATE accounts SET balance = 999 WHERE id = 1"
	// closedTx asserts that every call of tx returns pgx.ErrTxClosed.
	closedTx := func(t *testing.T, what string, tx pgx.Tx) {
		t.Helper()
		if _, err := tx.Exec(tok(ctx, 5), stale); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: Exec = %v, want pgx.ErrTxClosed", what, err)
		}
		if _, err := tx.Query(tok(ctx, 5), "SELECT id FROM accounts WHERE id = 1 FOR UPDATE"); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: Query = %v, want pgx.ErrTxClosed", what, err)
		}
		var id int64
		if err := tx.QueryRow(tok(ctx, 5), "SELECT id FROM accounts WHERE id = 1").Scan(&id); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: QueryRow = %v, want pgx.ErrTxClosed", what, err)
		}
		b := &pgx.Batch{}
		b.Queue(stale)
		if err := tx.SendBatch(tok(ctx, 5), b).Close(); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: SendBatch = %v, want pgx.ErrTxClosed", what, err)
		}
		if _, err := tx.Prepare(ctx, "s", stale); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: Prepare = %v, want pgx.ErrTxClosed", what, err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"other"}, []string{"id"}, pgx.CopyFromRows(nil)); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: CopyFrom = %v, want pgx.ErrTxClosed", what, err)
		}
		if _, err := tx.Begin(ctx); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: Begin = %v, want pgx.ErrTxClosed", what, err)
		}
		if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: Commit = %v, want pgx.ErrTxClosed", what, err)
		}
		if err := tx.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
			t.Fatalf("%s: Rollback = %v, want pgx.ErrTxClosed", what, err)
		}
	}

	// pgx's own nested transaction, for reference.
	rtx, err := raw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := rtx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = rtx.Rollback(ctx)
	if _, err := rsp.Exec(ctx, "SELECT 1"); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("pgx's savepoint after its parent's rollback: %v", err)
	}

	for _, end := range []string{"Rollback", "Commit"} {
		t.Run("Pool/"+end, func(t *testing.T) {
			before := row(t)
			// Stale holder A (token 5) opens a savepoint, then its transaction ends.
			txA, err := db.Begin(tok(ctx, 5))
			if err != nil {
				t.Fatal(err)
			}
			spA, err := txA.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if end == "Commit" {
				err = txA.Commit(ctx)
			} else {
				err = txA.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Newer holder B (token 10) begins on the pool's only connection.
			txB, err := db.Begin(tok(ctx, 10))
			if err != nil {
				t.Fatal(err)
			}
			defer txB.Rollback(ctx)
			_, errA := spA.Exec(tok(ctx, 5), stale)
			if _, err := txB.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatalf("B after A's late savepoint call: %v", err)
			}
			if err := txB.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(errA, pgx.ErrTxClosed) {
				t.Fatalf("savepoint Exec after its parent's %s = %v, want pgx.ErrTxClosed", end, errA)
			}
			wantRow(t, row(t), before)
			closedTx(t, "savepoint after "+end, spA)
			wantRow(t, row(t), before)
		})
	}

	t.Run("Pool/SavepointReleased", func(t *testing.T) {
		// A savepoint of a savepoint is closed once the middle one is released; the
		// transaction itself stays usable.
		before := row(t)
		tx, err := db.Begin(tok(ctx, 6))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		sp1, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sp2, err := sp1.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := sp1.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		closedTx(t, "savepoint of a released savepoint", sp2)
		if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance - 1 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := row(t); got.balance != before.balance-1 || got.token != 6 {
			t.Fatalf("row = %+v after the transaction's own debit, want balance %d token 6", got, before.balance-1)
		}
	})

	t.Run("Conn", func(t *testing.T) {
		pc, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close(ctx)
		c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
		if err != nil {
			t.Fatal(err)
		}
		before := row(t)
		tx, err := c.Begin(tok(ctx, 7))
		if err != nil {
			t.Fatal(err)
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		// Sent, the statement would run alone, in autocommit, outside the transaction
		// the caller meant it for.
		closedTx(t, "Conn savepoint after its parent's rollback", sp)
		wantRow(t, row(t), before)
	})
}

// A second Begin on a Conn whose transaction is still open is refused: pgx would send
// BEGIN inside it (the server only warns) and the new Tx's token would bind the open
// transaction's statements — a stale holder's writes committed under a newer token.
func TestSecondBeginOnConnRefused(t *testing.T) {
	ctx, raw, _ := freshPG(t, plainAccounts+`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1)`)
	pc, err := raw.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	c, err := fencedpgx.WrapConn(pc.Conn(), fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Begin(tok(ctx, 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Begin(tok(ctx, 10)); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("second Begin with a transaction open = %v, want ErrUnsupported", err)
	}
	if _, err := first.Exec(tok(ctx, 5), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("the first transaction after the refused Begin: %v", err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var tk int64
	if err := raw.QueryRow(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tk); err != nil || tk != 5 {
		t.Fatalf("fence_token = %d, %v; want 5 (the first transaction's own token)", tk, err)
	}
	second, err := c.Begin(tok(ctx, 10))
	if err != nil {
		t.Fatalf("Begin after the first transaction ended: %v", err)
	}
	if err := second.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}

// Red-team rt15c (failed on e10017f): a LIMIT after the locking clause is refused
// before sending, never dropped.

// TestQueryRowLimitAfterLockStampsOnlyReturnedRow: fencedpgx Tx.QueryRow (and a batch) of a
// locking read whose LIMIT follows its locking clause (`… FOR UPDATE LIMIT 1`, valid
// PostgreSQL): the caller gets one row, but the claim dropped the LIMIT and stamped and
// locked every matching row (rt15c F1).
func TestQueryRowLimitAfterLockStampsOnlyReturnedRow(t *testing.T) {
	const read = `SELECT id, balance FROM accounts WHERE balance = $1 ORDER BY id FOR UPDATE LIMIT 1`
	for _, via := range []string{"QueryRow", "Batch"} {
		t.Run(via, func(t *testing.T) {
			ctx, raw, db := freshPG(t, plainAccounts)
			for _, id := range []int64{1, 2, 3} {
				if _, err := db.Exec(tok(ctx, 2), "INSERT INTO accounts (id, balance) VALUES ($1, 0)", id); err != nil {
					t.Fatal(err)
				}
			}
			var got []int64
			switch via {
			case "QueryRow":
				tx, err := db.Begin(tok(ctx, 10))
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				var id, bal int64
				if err := tx.QueryRow(tok(ctx, 10), read, 0).Scan(&id, &bal); err != nil {
					if errors.Is(err, fencedsql.ErrUnsupported) {
						return // refused before sending: nothing stamped, nothing locked
					}
					t.Fatalf("claim: %v", err)
				}
				got = []int64{id}
				var n int64
				if err := tx.QueryRow(ctx, "SELECT count(*) FROM accounts WHERE fence_token = 10").Scan(&n); err != nil {
					t.Fatal(err)
				}
				t.Logf("QueryRow returned %v; rows stamped with token 10: %d", got, n)
				if n != 1 {
					t.Errorf("QueryRow of a LIMIT 1 read returned row %v and stamped %d rows with the token", got, n)
				}
				// rows 2 and 3 are locked too
				for _, other := range []int64{2, 3} {
					if _, err := raw.Exec(ctx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE NOWAIT", other); err != nil {
						t.Errorf("row %d, which the LIMIT 1 read did not return, is locked by the claim: %v", other, err)
					}
				}
			case "Batch":
				ids, err := batchRead(tok(ctx, 10), db, read, 0)
				var n int64
				if qerr := raw.QueryRow(ctx, "SELECT count(*) FROM accounts WHERE fence_token = 10").Scan(&n); qerr != nil {
					t.Fatal(qerr)
				}
				t.Logf("batch returned %v err %v; rows stamped with token 10 (committed): %d", ids, err, n)
				if err == nil && (len(ids) != 1 || n != 1) {
					t.Errorf("batch of a LIMIT 1 read returned %v and stamped %d rows with the token", ids, n)
				}
			}
		})
	}
}
