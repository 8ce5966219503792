package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
)

// The lease binding of transactions and statements on PostgreSQL (red-team rt31c
// F1–F4): a binding with no usable token refuses claims as it refuses writes, keeps
// its other leases checked, never panics on a lease never granted, and a lease bound
// on a context that carries leases joins them.

// bindingPG opens a fenced PostgreSQL pool over a guarded accounts table with rows 1..n.
func bindingPG(t *testing.T, n int) (db, admin *sql.DB) {
	t.Helper()
	pg := testdb.Postgres(t)
	admin = testdb.Open(t, "pgx", pg,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) SELECT g, 100 FROM generate_series(1, `+strconv.Itoa(n)+`) g`)
	db = testdb.Open(t, "fenced-pgx", pgParam(pg, "fenced_tables=accounts"))
	return db, admin
}

func bindingRowToken(t *testing.T, admin *sql.DB, id int) int64 {
	t.Helper()
	var tok int64
	if err := admin.QueryRow(`SELECT fence_token FROM accounts WHERE id = $1`, id).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// requireClaimRefusedNoToken sends a claim on tx with a context of its own (as
// database/sql and ORMs do) and requires ErrNoToken with nothing stamped.
func requireClaimRefusedNoToken(t *testing.T, tx *sql.Tx, admin *sql.DB) {
	t.Helper()
	var bal int64
	err := tx.QueryRow(`SELECT balance FROM accounts WHERE id = $1 FOR UPDATE`, 1).Scan(&bal)
	if !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("claim: %v, want ErrNoToken (a claim without a usable token ran as an ordinary locking read)", err)
	}
	if tok := bindingRowToken(t, admin, 1); tok != 0 {
		t.Fatalf("row 1 stamped with %d by a refused claim", tok)
	}
}

// TestNoUsableTokenBindingRefusesClaim (rt31c F1): a transaction begun under a binding
// with no usable token — a nil *lockclient.Lease (what Acquire returns beside an
// error), a nil one among several, a lease whose Token() is 0 — refuses a claim sent
// with a plain context exactly as it refuses a guarded write: ErrNoToken, nothing sent.
// Before, the claim ran as an ordinary locking read (statementToken's predecessors
// hasToken and tokenFor disagreed), and the holder believed the row fenced.
func TestNoUsableTokenBindingRefusesClaim(t *testing.T) {
	for name, leases := range map[string][]fencedsql.Lease{
		"nil *lockclient.Lease": {(*lockclient.Lease)(nil)},
		"held and nil":          {newFakeLease(9), (*lockclient.Lease)(nil)},
		"token 0":               {newFakeLease(0)},
		"no leases":             {},
	} {
		t.Run(name, func(t *testing.T) {
			db, admin := bindingPG(t, 2)
			ctx := fencedsql.WithLeases(context.Background(), leases...)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatalf("BeginTx: %v", err)
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.Exec(`UPDATE accounts SET balance = 1 WHERE id = $1`, 2); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Fatalf("write: %v, want ErrNoToken", err)
			}
			// The statement's own token does not give the transaction one.
			if _, err := tx.ExecContext(fencedsql.WithToken(context.Background(), 50), `UPDATE accounts SET balance = 1 WHERE id = $1`, 2); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Fatalf("write with a token of its own: %v, want ErrNoToken", err)
			}
			requireClaimRefusedNoToken(t, tx, admin)
			// Reads are not refused.
			var n int
			if err := tx.QueryRow(`SELECT count(*) FROM accounts`).Scan(&n); err != nil || n != 2 {
				t.Fatalf("plain read: %d, %v", n, err)
			}
		})
	}
}

// TestJoinedLeaseRefusesPlainClaim (rt31c F1, related): in a transaction begun
// unbound, once a statement under WithLease(a) joined lease a, a claim sent with a
// plain context is refused with ErrNoToken as a write sent so is, not run as an
// ordinary locking read; one sent under the lease claims.
func TestJoinedLeaseRefusesPlainClaim(t *testing.T) {
	db, admin := bindingPG(t, 2)
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	a := fencedsql.WithLease(context.Background(), newFakeLease(7))
	if _, err := tx.ExecContext(a, `UPDATE accounts SET balance = 1 WHERE id = $1`, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE accounts SET balance = 2 WHERE id = $1`, 2); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("plain write: %v, want ErrNoToken", err)
	}
	requireClaimRefusedNoToken(t, tx, admin)
	var bal int64
	if err := tx.QueryRowContext(a, `SELECT balance FROM accounts WHERE id = $1 FOR UPDATE`, 1).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if tok := bindingRowToken(t, admin, 1); tok != 7 {
		t.Fatalf("claim under the lease stamped %d, want 7", tok)
	}
}

// TestLostLeaseBesideNilLeaseRefused (rt31c F2): WithLeases(lost, nil) keeps the lost
// lease: BeginTx refuses with ErrLeaseLost, and so does a read under it outside a
// transaction, nothing sent. Before, the nil lease dropped every lease of the binding.
func TestLostLeaseBesideNilLeaseRefused(t *testing.T) {
	db, _ := bindingPG(t, 2)
	lost := newFakeLease(9)
	lost.lose(lockclient.ErrLeaseLost)
	ctx := fencedsql.WithLeases(context.Background(), lost, (*lockclient.Lease)(nil))
	if _, err := db.BeginTx(ctx, nil); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("BeginTx: %v, want ErrLeaseLost", err)
	}
	var bal int64
	if err := db.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = $1`, 1).Scan(&bal); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("read: %v, want ErrLeaseLost", err)
	}
}

// TestZeroValueLeaseRefused (rt31c F3): a zero-value *lockclient.Lease (never granted:
// its methods other than Token would dereference a nil client) is no lease, as a nil
// one is: BeginTx begins, and the transaction's guarded write is refused with
// ErrNoToken, without a panic.
func TestZeroValueLeaseRefused(t *testing.T) {
	db, _ := bindingPG(t, 1)
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("a zero-value *lockclient.Lease panicked: %v", r)
			}
		}()
		var tx *sql.Tx
		tx, err = db.BeginTx(fencedsql.WithLease(context.Background(), &lockclient.Lease{}), nil)
		if err == nil {
			_, err = tx.Exec(`UPDATE accounts SET balance = 1 WHERE id = 1`)
			tx.Rollback() //nolint:errcheck
		}
	}()
	if !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("err = %v, want ErrNoToken", err)
	}
}

// TestNestedWithLeaseJoins (rt31c F4): WithLease on a context that carries a lease
// joins it, as a statement's lease joins its transaction: the transaction begun under
// WithLease(WithLease(ctx, a), b) carries the larger token and checks both leases, so
// a's loss refuses the next statement and the Commit. Before, b replaced a.
func TestNestedWithLeaseJoins(t *testing.T) {
	db, admin := bindingPG(t, 2)
	a, b := newFakeLease(5), newFakeLease(10)
	ctx := fencedsql.WithLease(fencedsql.WithLease(context.Background(), a), b)
	if tok, _ := fencedsql.TokenFrom(ctx); tok != 10 {
		t.Fatalf("token %d, want 10", tok)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - 10 WHERE id = $1`, 1); err != nil {
		t.Fatal(err)
	}
	a.lose(lockclient.ErrLeaseLost) // lock A (the outer binding) is lost mid-transaction
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + 10 WHERE id = $1`, 2); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("write after a was lost: %v, want ErrLeaseLost", err)
	}
	if err := tx.Commit(); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Commit after a was lost: %v, want ErrLeaseLost", err)
	}
	if tok := bindingRowToken(t, admin, 1); tok != 0 {
		t.Fatalf("row 1 committed with token %d", tok)
	}
}

// TestWithTokenKeepsLeasesChecked: WithToken on a context that carries a lease
// replaces the token but keeps the lease checked (forgetting it would let the work go
// on after the lock is lost); over a binding with no usable token it gives none.
func TestWithTokenKeepsLeasesChecked(t *testing.T) {
	db, _ := bindingPG(t, 1)
	a := newFakeLease(5)
	ctx := fencedsql.WithToken(fencedsql.WithLease(context.Background(), a), 8)
	if tok, _ := fencedsql.TokenFrom(ctx); tok != 8 {
		t.Fatalf("token %d, want 8", tok)
	}
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	a.lose(lockclient.ErrLeaseLost)
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET balance = 2 WHERE id = 1`); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("write after the lease was lost: %v, want ErrLeaseLost", err)
	}
	none := fencedsql.WithToken(fencedsql.WithLease(context.Background(), (*lockclient.Lease)(nil)), 8)
	if _, err := db.ExecContext(none, `UPDATE accounts SET balance = 3 WHERE id = 1`); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("write under WithToken over a nil lease: %v, want ErrNoToken", err)
	}
}

// TestStatementNilLeaseInBoundTxRefused: a statement whose own context binds leases
// with no usable token (WithLeases(held, nil)) in a transaction bound to a token is
// refused with ErrNoToken, nothing sent: the lock the statement names is not held.
func TestStatementNilLeaseInBoundTxRefused(t *testing.T) {
	db, _ := bindingPG(t, 1)
	tx, err := db.BeginTx(fencedsql.WithLease(context.Background(), newFakeLease(10)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	ctx := fencedsql.WithLeases(context.Background(), newFakeLease(12), (*lockclient.Lease)(nil))
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("write: %v, want ErrNoToken", err)
	}
	if _, err := tx.Exec(`UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatalf("the transaction's own write after the refusal: %v", err)
	}
}
