package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The token a transaction carries when a statement's binding joins it (red-team rt33a
// F1–F3): only a lease the statement carries raises it, to that lease's token; a token
// WithToken laid over leases never does.

// TestTokenOverTxLeaseRefusedNotRaised (rt33a F1, fail-open before): in a transaction
// bound to lease l5, a statement under WithToken(WithLease(ctx, l5), 9) — a bare token 9
// laid over the transaction's own lease — is refused with ErrUnsupported, nothing sent,
// as a bare WithToken(ctx, 9) is. Before, it raised the transaction to 9, a token no
// lease it held was granted, and stamped its rows with 9. The transaction goes on under
// 5 and commits.
func TestTokenOverTxLeaseRefusedNotRaised(t *testing.T) {
	bg := context.Background()
	db, admin := bindingPG(t, 2)
	l5 := newFakeLease(5)
	tx, err := db.BeginTx(fencedsql.WithLease(bg, l5), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	_, err = tx.ExecContext(fencedsql.WithToken(fencedsql.WithLease(bg, l5), 9), `UPDATE accounts SET balance = 1 WHERE id = 1`)
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("statement under WithToken(WithLease(l5), 9): %v, want ErrUnsupported", err)
	}
	if _, err := tx.Exec(`UPDATE accounts SET balance = 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if t1, t2 := bindingRowToken(t, admin, 1), bindingRowToken(t, admin, 2); t1 != 0 || t2 != 5 {
		t.Fatalf("rows stamped %d and %d, want 0 (refused, unsent) and 5 (the transaction's lease)", t1, t2)
	}
}

// TestLeaseJoiningUnderTokenRaisesToLeaseToken (rt33a F2): in a transaction bound to
// lease l5, a statement under WithToken(WithLease(ctx, l9), t) — t below 9, the
// transaction's own token 5 among them — joins l9, and the transaction carries l9's
// token 9 from then on, not t (the rows of both locks accept 9). Before, it was raised
// to max(5, t) only.
func TestLeaseJoiningUnderTokenRaisesToLeaseToken(t *testing.T) {
	for _, tok := range []uint64{3, 5} {
		bg := context.Background()
		db, admin := bindingPG(t, 2)
		tx, err := db.BeginTx(fencedsql.WithLease(bg, newFakeLease(5)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(fencedsql.WithToken(fencedsql.WithLease(bg, newFakeLease(9)), tok), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
			t.Fatalf("token %d: statement joining l9: %v", tok, err)
		}
		if _, err := tx.Exec(`UPDATE accounts SET balance = 1 WHERE id = 2`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if t1, t2 := bindingRowToken(t, admin, 1), bindingRowToken(t, admin, 2); t1 != 9 || t2 != 9 {
			t.Fatalf("WithToken(WithLease(l9), %d): rows stamped %d and %d by a transaction holding leases 5 and 9, want 9", tok, t1, t2)
		}
	}
}

// TestUnboundTxLeasedStatementCarriesJoinedLargest (rt33a F3): in a transaction begun
// without a binding, joined by a statement under lease l9 (row 1 stamped 9), a later
// statement under lease l5 carries 9, the largest token of the leases the transaction
// holds, and is not refused (ErrFenced, aborting the transaction) on the row the
// transaction itself stamped.
func TestUnboundTxLeasedStatementCarriesJoinedLargest(t *testing.T) {
	bg := context.Background()
	db, admin := bindingPG(t, 2)
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	l5, l9 := newFakeLease(5), newFakeLease(9)
	if _, err := tx.ExecContext(fencedsql.WithLease(bg, l9), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(fencedsql.WithLease(bg, l5), `UPDATE accounts SET balance = 2 WHERE id = 1`); err != nil {
		t.Fatalf("second statement (lease 5, transaction holding 5 and 9): %v", err)
	}
	if _, err := tx.ExecContext(fencedsql.WithLease(bg, l5), `UPDATE accounts SET balance = 2 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if t1, t2 := bindingRowToken(t, admin, 1), bindingRowToken(t, admin, 2); t1 != 9 || t2 != 9 {
		t.Fatalf("rows stamped %d and %d, want 9 (the largest token of the transaction's leases)", t1, t2)
	}
}
