// A lease meeting a larger bare token (WithToken: the transaction's, or one laid over
// the statement's leases) is confirmed at its lock service since now before the larger
// token is written with it (leaseproof.go; red-team rt46e F1).

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// staleWindow is fencetest.StaleWindow (rt45f F2's window) with the new holder's
// write of row 1 through db.
func staleWindow(t *testing.T, ctx context.Context, db *sql.DB) (l1, n1, l2 *lockclient.Lease) {
	t.Helper()
	return fencetest.StaleWindow(t, ctx, func(n1 *lockclient.Lease) error {
		_, err := db.ExecContext(fencedsql.WithLease(ctx, n1), `UPDATE accounts SET balance = 111 WHERE id = 1`)
		return err
	})
}

// A stale lease (l1: expired at the service, re-granted to n1, who wrote row 1) meets
// a larger bare token, l2's number: a transaction begun under WithToken that a
// statement's WithLease(l1) joins — on the *sql.Tx, on the *sql.Conn the transaction
// is open on, or by a statement prepared on the Conn — or WithToken laid over
// WithLease(l1) for a statement, a transaction, or a statement in a transaction begun
// under the same bare token or none. Each is refused with ErrLeaseLost (the lease is
// confirmed at the service since now and is not held), row 1 unchanged; it used to
// write with the larger token over the current holder's row (red-team rt46e F1).
func TestStaleLeaseUnderLargerBareTokenRefused(t *testing.T) {
	for _, how := range []string{
		"tx under bare token, statement lease",
		"conn statement while tx open",
		"prepared statement",
		"WithToken over statement lease",
		"tx under WithToken over lease",
		"tx under bare token, statement WithToken over lease",
		"unbound tx, statement WithToken over lease",
	} {
		t.Run(how, func(t *testing.T) { staleUnderBareToken(t, how) })
	}
}

func staleUnderBareToken(t *testing.T, how string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, db := confirmDB(t)
	l1, n1, l2 := staleWindow(t, ctx, db)
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, l1), `UPDATE accounts SET balance = 1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("control: the stale lease alone: %v, want ErrFenced", err)
	}
	const q = `UPDATE accounts SET balance = balance - 50 WHERE id = 1`
	bare := fencedsql.WithToken(ctx, l2.Token())
	raised := fencedsql.WithToken(fencedsql.WithLease(ctx, l1), l2.Token())
	err := func() error {
		if how == "WithToken over statement lease" {
			_, err := db.ExecContext(raised, q)
			return err
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		begin, sctx := bare, fencedsql.WithLease(ctx, l1)
		switch how {
		case "tx under WithToken over lease":
			begin, sctx = raised, ctx
		case "tx under bare token, statement WithToken over lease":
			sctx = raised
		case "unbound tx, statement WithToken over lease":
			begin, sctx = ctx, raised
		}
		tx, err := conn.BeginTx(begin, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		switch how {
		case "conn statement while tx open":
			_, err = conn.ExecContext(sctx, q)
		case "prepared statement":
			var st *sql.Stmt
			if st, err = conn.PrepareContext(ctx, q); err == nil {
				_, err = tx.StmtContext(ctx, st).ExecContext(sctx)
			}
		default:
			_, err = tx.ExecContext(sctx, q)
		}
		if err != nil {
			return err
		}
		return tx.Commit()
	}()
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("stale lease (token %d) under bare token %d: %v, want ErrLeaseLost", l1.Token(), l2.Token(), err)
	}
	if bal, tok := row1(t, raw); bal != 111 || tok != int64(n1.Token()) {
		t.Errorf("row 1: balance %d, token %d; want the current holder's 111, token %d (the stale write landed)", bal, tok, n1.Token())
	}
}

// A held lease under a larger bare token is confirmed once per binding — one renewal
// at the join, none for the transaction's later statements — and a bare token equal to
// the lease's, or a single lease, costs no round trip.
func TestHeldLeaseUnderBareTokenConfirmedOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, db := confirmDB(t)
	svc, held := heldLeases(t, ctx, "account:1")
	l1 := held[0]
	run := func(begin, sctx context.Context, n int) {
		t.Helper()
		tx, err := db.BeginTx(begin, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := tx.ExecContext(sctx, `UPDATE accounts SET balance = balance - 1 WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	before := svc.Renewals()
	run(fencedsql.WithToken(ctx, l1.Token()), fencedsql.WithLease(ctx, l1), 2)
	if _, err := db.ExecContext(fencedsql.WithToken(fencedsql.WithLease(ctx, l1), l1.Token()), `UPDATE accounts SET balance = balance - 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if n := svc.Renewals() - before; n != 0 {
		t.Fatalf("bare token equal to the lease's: %d renewals, want none", n)
	}
	big := l1.Token() + 10
	run(fencedsql.WithToken(ctx, big), fencedsql.WithLease(ctx, l1), 3)
	if n := svc.Renewals() - before; n != 1 {
		t.Errorf("a held lease joining a transaction of a larger bare token, three statements: %d renewals, want 1", n)
	}
	if bal, tok := row1(t, raw); bal != 94 || tok != int64(big) {
		t.Errorf("row 1: balance %d, token %d; want 94, token %d", bal, tok, big)
	}
}

// A lease that cannot be confirmed (no LeaseConfirmer) under a larger bare token —
// joining a transaction begun under it, or with the token laid over it — is refused
// with ErrUnsupported, nothing sent; under an equal or smaller token it is not asked.
func TestUnconfirmableLeaseUnderLargerBareTokenRefused(t *testing.T) {
	ctx := context.Background()
	raw, db := confirmDB(t)
	small := &plainLease{tok: 5}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 9), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(fencedsql.WithLease(ctx, small), `UPDATE accounts SET balance = 0 WHERE id = 1`); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("joining a transaction of bare token 9: %v, want ErrUnsupported", err)
	}
	_ = tx.Rollback()
	if _, err := db.ExecContext(fencedsql.WithToken(fencedsql.WithLease(ctx, small), 9), `UPDATE accounts SET balance = 0 WHERE id = 1`); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("token 9 laid over it: %v, want ErrUnsupported", err)
	}
	if bal, _ := row1(t, raw); bal != 100 {
		t.Errorf("row 1 balance %d, want 100 (nothing written)", bal)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(fencedsql.WithLease(ctx, small), 5), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Errorf("token 5 laid over the lease of token 5: %v", err)
	}
}

// In a transaction begun without a binding, a lease that joined under its own token
// (a read) and is then written under a larger bare token laid over it is confirmed
// against that token: the proof of the transaction's leases counts against the token
// they were last confirmed for, not the largest ever seen (a larger one confirmed
// before the lease joined does not cover it).
func TestJoinedLeaseLaterUnderLargerBareTokenConfirmed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, db := confirmDB(t)
	svc := memlock.New()
	c0 := lockclient.New(svc, lockclient.WithTTL(10*time.Minute))
	c1 := lockclient.New(svc, lockclient.WithTTL(30*time.Second))
	c2 := lockclient.New(svc, lockclient.WithTTL(10*time.Minute))
	t.Cleanup(func() {
		for _, c := range []*lockclient.Client{c0, c1, c2} {
			_ = c.Close(context.Background())
		}
	})
	x, err := c0.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	l1, err := c1.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(31 * time.Second) // l1 expires at the service, x does not
	n1, err := c2.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, n1), `UPDATE accounts SET balance = 111 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if l1.Err() != nil {
		t.Fatalf("client 1 already knows l1 is lost (%v)", l1.Err())
	}
	big := n1.Token() + 10
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(fencedsql.WithToken(fencedsql.WithLease(ctx, x), big), `UPDATE accounts SET balance = balance + 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRowContext(fencedsql.WithLease(ctx, l1), `SELECT balance FROM accounts WHERE id = 1`).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(fencedsql.WithToken(fencedsql.WithLease(ctx, l1), big), `UPDATE accounts SET balance = balance - 50 WHERE id = 1`)
	if err == nil {
		err = tx.Commit()
	}
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("stale lease (token %d) under bare token %d after joining: %v, want ErrLeaseLost", l1.Token(), big, err)
	}
	if bal, tok := row1(t, raw); bal != 111 || tok != int64(n1.Token()) {
		t.Errorf("row 1: balance %d, token %d; want the current holder's 111, token %d", bal, tok, n1.Token())
	}
}
