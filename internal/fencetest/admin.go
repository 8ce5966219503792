package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// testAdminPath: with the guards installed, a plain admin UPDATE is refused and its
// error is classified as ErrGuard with the hint in its text (AsGuardError); the same
// refusal through the fenced pool (a function called from a read) is mapped to
// ErrGuard; fencedsql.Maintain changes every row through the fenced pool under a lease
// of the application's lock service, after which the holder whose lease is older is
// fenced, and a newer one writes.
func (s *guardSuite) testAdminPath(t *testing.T) {
	e := setup(t, s.b)
	s.applyFix(e, s.check(e, schema.GuardSpec{Table: "accounts"})[0].Fix)
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(10*time.Second))
	t.Cleanup(func() { locks.Close(context.Background()) })
	holder, err := locks.Acquire(e.ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	hctx := fencedsql.WithLease(e.ctx, holder)
	for _, id := range []int64{1, 2, 3} {
		if _, err := e.db.ExecContext(hctx, e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), id, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := holder.Release(e.ctx); err != nil {
		t.Fatal(err)
	}

	// The plain admin UPDATE: refused by the guard, classified.
	_, err = e.raw.ExecContext(e.ctx, "UPDATE accounts SET balance = balance + 1")
	if err == nil {
		t.Fatal("a plain UPDATE passed the guard")
	}
	gerr := fencedsql.AsGuardError(s.d, err)
	var ge *fencedsql.GuardError
	if !errors.Is(gerr, fencedsql.ErrGuard) || !errors.As(gerr, &ge) || !strings.Contains(gerr.Error(), "fencedsql.Maintain") || !strings.Contains(ge.Table, "accounts") {
		t.Fatalf("AsGuardError(%v) = %v (%+v), want ErrGuard naming accounts with the hint", err, gerr, ge)
	}
	if !errors.Is(gerr, err) {
		t.Error("the driver's error is not reachable")
	}
	if other := errors.New("x"); fencedsql.AsGuardError(s.d, other) != other {
		t.Error("AsGuardError changed an unrelated error")
	}

	// The same refusal through the fenced pool: a routine the wrapper cannot see into.
	switch s.b.Name {
	case "postgres":
		s.exec(e, "CREATE FUNCTION bump_all() RETURNS bigint LANGUAGE sql AS 'UPDATE accounts SET balance = balance + 1 RETURNING 1'")
		var one int64
		err = e.db.QueryRowContext(e.ctx, "SELECT bump_all()").Scan(&one)
	case "mysql":
		s.exec(e, "CREATE PROCEDURE bump_all() UPDATE accounts SET balance = balance + 1")
		dyn := e.fencedOn(t, "accounts", "fenced_allow=dynamic_sql")
		_, err = dyn.ExecContext(e.ctx, "CALL bump_all()")
	default:
		err = nil // SQLite has no routines: nothing reaches the guard through the wrapper unseen
	}
	if s.b.Name != "sqlite" && (!errors.Is(err, fencedsql.ErrGuard) || !strings.Contains(err.Error(), "hint:")) {
		t.Fatalf("guard refusal through the fenced pool: err = %v, want ErrGuard with the hint", err)
	}

	// The admin path: every row, under a lease of the same lock service.
	err = fencedsql.Maintain(e.ctx, e.db, locks, "admin:backfill", func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + 1")
		return err
	})
	if err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	for _, id := range []int64{1, 2, 3} {
		if r := e.row(id); r.balance != 101 || r.token <= int64(holder.Token()) {
			t.Fatalf("row %d after Maintain = %+v (holder's token %d)", id, r, holder.Token())
		}
	}
	// A holder of an older lease (its token, as a paused process would still carry
	// it) is fenced now; a new lease writes.
	_, err = e.db.ExecContext(tok(e.ctx, holder.Token()), e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)
	fresh, err := locks.Acquire(e.ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release(context.WithoutCancel(e.ctx))
	if _, err := e.db.ExecContext(fencedsql.WithLease(e.ctx, fresh), e.q("UPDATE accounts SET balance = 7 WHERE id = ?"), 1); err != nil {
		t.Fatalf("a new holder after Maintain: %v", err)
	}
	// fn's error rolls back and comes back as it is.
	boom := errors.New("boom")
	err = fencedsql.Maintain(e.ctx, e.db, locks, "admin:backfill", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 999"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || e.row(2).balance != 101 {
		t.Fatalf("Maintain with a failing fn: %v, row 2 = %+v", err, e.row(2))
	}
}
