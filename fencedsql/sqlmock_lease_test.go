// Leases over go-sqlmock: the fake lease, a lease outside a transaction, a lease lost or held at Commit.

package fencedsql_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

func TestSqlmockLeaseOutsideTx(t *testing.T) {
	db, mock := newMockDB(t, sqlite.Dialect)
	mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES (?, ?, 1)`).
		WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(1, 1))
	l := newFakeLease(7)
	if _, err := db.ExecContext(fencedsql.WithLease(context.Background(), l), `INSERT INTO accounts (id) VALUES (?)`, 1); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)
}

// fakeLease is a fencedsql.Lease whose loss the test controls.
type fakeLease struct {
	tok  uint64
	lost chan struct{}
	err  atomic.Pointer[error]
}

func newFakeLease(tok uint64) *fakeLease { return &fakeLease{tok: tok, lost: make(chan struct{})} }

func (l *fakeLease) Token() uint64         { return l.tok }
func (l *fakeLease) Lost() <-chan struct{} { return l.lost }

// GrantReceived and ConfirmHeldSince make it a fencedsql.LeaseConfirmer: the fake's
// lock service confirms it while it is held.
func (l *fakeLease) GrantReceived() time.Time                          { return time.Time{} }
func (l *fakeLease) ConfirmHeldSince(context.Context, time.Time) error { return l.Err() }
func (l *fakeLease) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *fakeLease) lose(err error) {
	if err != nil {
		l.err.Store(&err)
	}
	close(l.lost)
}

// A lease lost before Commit: the transaction is rolled back, and Commit reports
// lockclient.ErrLeaseLost.
func TestSqlmockLeaseLostAtCommit(t *testing.T) {
	for name, cause := range map[string]error{
		"wrapped ErrLeaseLost": fmt.Errorf("%w: renewal refused", lockclient.ErrLeaseLost),
		"other cause":          errors.New("watchdog gave up"),
		"no cause":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, postgres.Dialect)
			mock.ExpectBegin()
			mock.ExpectExec(`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`).
				WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectRollback()
			lease := newFakeLease(7)
			ctx := fencedsql.WithLease(context.Background(), lease)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE accounts SET x = $1`, 1); err != nil {
				t.Fatal(err)
			}
			lease.lose(cause)
			err = tx.Commit()
			if !errors.Is(err, lockclient.ErrLeaseLost) {
				t.Fatalf("Commit = %v, want ErrLeaseLost", err)
			}
			if cause != nil && !errors.Is(err, cause) {
				t.Errorf("Commit = %v, want the cause %v reachable", err, cause)
			}
			mockMet(t, mock)
		})
	}
}

// A lease still held at Commit commits normally.
func TestSqlmockLeaseHeldCommits(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	mock.ExpectBegin()
	mock.ExpectCommit()
	tx, err := db.BeginTx(fencedsql.WithLease(context.Background(), newFakeLease(7)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)
}
