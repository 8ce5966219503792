// Leases of two lock services bound together are refused before anything is sent
// (red-team rt42e F2); leases of one service, or a lease that names no service, are
// accepted.

package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

const insertAccount = `INSERT INTO accounts (id) VALUES (?)`

// acquireOn takes key from svc through a Client of its own, closed with the test.
func acquireOn(t *testing.T, svc *memlock.Service, key string) *lockclient.Lease {
	t.Helper()
	ctx := context.Background()
	c := lockclient.New(svc)
	t.Cleanup(func() { _ = c.Close(ctx) })
	l, err := c.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// wantServicesDiffer fails t unless err is the refusal of leases of two services.
func wantServicesDiffer(t *testing.T, what string, err error) {
	t.Helper()
	var lse *fencedsql.LeaseServicesError
	if !errors.Is(err, fencedsql.ErrLeaseServicesDiffer) || !errors.As(err, &lse) {
		t.Fatalf("%s: got %v, want a *LeaseServicesError (ErrLeaseServicesDiffer)", what, err)
	}
	if lse.First == lse.Second || lse.First == "" || lse.Second == "" {
		t.Fatalf("%s: the error names services %q and %q", what, lse.First, lse.Second)
	}
}

// Leases of two memlock services, bound by WithLeases, by nested WithLease, or with
// WithToken laid over them: every statement and BeginTx refused, nothing sent (the
// mock expects nothing, and would answer anything sent with another error).
func TestLeasesOfTwoServicesRefused(t *testing.T) {
	a := acquireOn(t, memlock.New(), "account:1")
	b := acquireOn(t, memlock.New(), "account:2")
	if a.ServiceID() == b.ServiceID() {
		t.Fatalf("two memlock services answer one identity %q", a.ServiceID())
	}
	bg := context.Background()
	for name, ctx := range map[string]context.Context{
		"WithLeases":          fencedsql.WithLeases(bg, a, b),
		"nested WithLease":    fencedsql.WithLease(fencedsql.WithLease(bg, a), b),
		"WithToken over them": fencedsql.WithToken(fencedsql.WithLeases(bg, b, a), max(a.Token(), b.Token())),
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, sqlite.Dialect)
			_, err := db.ExecContext(ctx, insertAccount, 1)
			wantServicesDiffer(t, "exec", err)
			_, err = db.QueryContext(ctx, `SELECT id FROM accounts`)
			wantServicesDiffer(t, "query", err)
			_, err = db.BeginTx(ctx, nil)
			wantServicesDiffer(t, "BeginTx", err)
			mockMet(t, mock)
		})
	}
}

// A statement whose lease comes from another service than its transaction's is
// refused, nothing sent, and the transaction only rolls back: in a transaction begun
// under a lease, and in one begun without, whose first leased statement named the
// service.
func TestStatementLeaseOfOtherServiceRefusedInTx(t *testing.T) {
	a := acquireOn(t, memlock.New(), "account:1")
	b := acquireOn(t, memlock.New(), "account:2")
	bg := context.Background()
	for name, begin := range map[string]context.Context{
		"begun under a lease": fencedsql.WithLease(bg, a),
		"begun unbound":       bg,
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, sqlite.Dialect)
			mock.ExpectBegin()
			mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES (?, ?, 1)`).
				WithArgs(int64(1), int64(a.Token())).WillReturnResult(sqlmock.NewResult(1, 1))
			mock.ExpectRollback()
			tx, err := db.BeginTx(begin, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(fencedsql.WithLease(bg, a), insertAccount, 1); err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(fencedsql.WithLease(bg, b), insertAccount, 2)
			wantServicesDiffer(t, "statement of the other service", err)
			if err := tx.Commit(); !errors.Is(err, fencedsql.ErrLeaseServicesDiffer) {
				t.Fatalf("Commit: got %v, want the refusal (rolled back)", err)
			}
			mockMet(t, mock)
		})
	}
}

// Leases of one service — two Clients on one memlock service, as two processes — are
// bound together as before: the largest token; a lease that names no service (a fake)
// is accepted beside any (its service unknown).
func TestLeasesOfOneServiceAccepted(t *testing.T) {
	svc := memlock.New()
	a := acquireOn(t, svc, "account:1")
	b := acquireOn(t, svc, "account:2")
	if a.ServiceID() != b.ServiceID() || a.ServiceID() == "" {
		t.Fatalf("two Clients of one memlock service answer %q and %q", a.ServiceID(), b.ServiceID())
	}
	other := acquireOn(t, memlock.New(), "account:3")
	unnamed := newFakeLease(other.Token() + 1)
	bg := context.Background()
	for name, tc := range map[string]struct {
		ctx context.Context
		tok uint64
	}{
		"one service":             {fencedsql.WithLeases(bg, a, b), b.Token()},
		"nested, one service":     {fencedsql.WithLease(fencedsql.WithLease(bg, b), a), b.Token()},
		"unnamed beside a":        {fencedsql.WithLeases(bg, a, unnamed), unnamed.Token()},
		"unnamed beside other":    {fencedsql.WithLeases(bg, unnamed, other), unnamed.Token()},
		"unnamed between a and b": {fencedsql.WithLeases(bg, a, unnamed, b), unnamed.Token()},
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, sqlite.Dialect)
			mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES (?, ?, 1)`).
				WithArgs(int64(1), int64(tc.tok)).WillReturnResult(sqlmock.NewResult(1, 1))
			if _, err := db.ExecContext(tc.ctx, insertAccount, 1); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}
